/* pb_sink: the events of one message (from yajl's callbacks, or a walk of
 * jsmn's tokens or simdjson's tape) into a pb_request_t: the envelope and
 * params._meta are read in place, only what a handler reads is built as
 * jansson values, and what jansson would refuse anywhere in the message is
 * refused (a key given twice in one object, a NUL in a key, nesting past
 * 2048, a real that overflows). A message with an integer past 64 bits is
 * left to jansson (too_big). See parse_bench.h. */
#include <stdlib.h>
#include <string.h>

#include "parse_bench.h"

enum role { R_TOP, R_PARAMS, R_META, R_INFO, R_SKIP, R_BUILD };

/* The members parleyd reads, by the object they are in. */
enum member {
    M_OTHER,
    M_JSONRPC,
    M_ID,
    M_METHOD,
    M_PARAMS,
    M_RESULT,
    M_META,
    M_NAME,
    M_VERSION,
    M_CAPS,
    M_INFO,
    M_LEVEL,
    M_PROGRESS,
};

typedef struct {
    const char *name;
    size_t len;
    enum member m;
} known_t;

#define K(s, m)                                                                                    \
    {                                                                                              \
        s, sizeof s - 1, m                                                                         \
    }
static const known_t top_keys[] = {K("jsonrpc", M_JSONRPC), K("id", M_ID),
                                   K("method", M_METHOD),   K("params", M_PARAMS),
                                   K("result", M_RESULT),   K("error", M_RESULT)};
static const known_t params_keys[] = {K("_meta", M_META), K("name", M_NAME)};
static const known_t meta_keys[] = {
    K("io.modelcontextprotocol/protocolVersion", M_VERSION),
    K("io.modelcontextprotocol/clientCapabilities", M_CAPS),
    K("io.modelcontextprotocol/clientInfo", M_INFO),
    K("io.modelcontextprotocol/logLevel", M_LEVEL),
    K("progressToken", M_PROGRESS),
};
static const known_t info_keys[] = {K("name", M_NAME)};
#undef K

static enum member classify(const known_t *t, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].len == len && memcmp(t[i].name, s, len) == 0)
            return t[i].m;
    return M_OTHER;
}

/* ---- key sets --------------------------------------------------------------------- */

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

static bool table_put(pb_key_t *t, size_t cap, pb_key_t k)
{
    for (size_t i = k.hash & (cap - 1);; i = (i + 1) & (cap - 1)) {
        if (t[i].s == NULL) {
            t[i] = k;
            return true;
        }
        if (t[i].hash == k.hash && t[i].n == k.n && memcmp(t[i].s, k.s, k.n) == 0)
            return false;
    }
}

/* Adds key s (which outlives the set); false when it is there already or
 * on ENOMEM. */
static bool keyset_add(pb_keyset_t *ks, const char *s, size_t n)
{
    if (ks->cap == 0) {
        for (size_t i = 0; i < ks->n; i++)
            if (ks->small[i].n == n && memcmp(ks->small[i].s, s, n) == 0)
                return false;
        if (ks->n < PB_KEYSET_INLINE) {
            ks->small[ks->n++] = (pb_key_t){0, s, n};
            return true;
        }
        ks->table = calloc(32, sizeof *ks->table);
        if (ks->table == NULL)
            return false;
        ks->cap = 32;
        for (size_t i = 0; i < ks->n; i++) {
            ks->small[i].hash = hash(ks->small[i].s, ks->small[i].n);
            table_put(ks->table, ks->cap, ks->small[i]);
        }
    }
    if (2 * (ks->n + 1) > ks->cap) {
        pb_key_t *t = calloc(2 * ks->cap, sizeof *t);
        if (t == NULL)
            return false;
        for (size_t i = 0; i < ks->cap; i++)
            if (ks->table[i].s != NULL)
                table_put(t, 2 * ks->cap, ks->table[i]);
        free(ks->table);
        ks->table = t;
        ks->cap *= 2;
    }
    if (!table_put(ks->table, ks->cap, (pb_key_t){hash(s, n), s, n}))
        return false;
    ks->n++;
    return true;
}

/* ---- frames ----------------------------------------------------------------------- */

void pb_sink_init(pb_sink_t *k, pb_request_t *r)
{
    k->r = r;
    k->frames = k->inline_frames;
    k->depth = 0;
    k->cap = PB_FRAMES_INLINE;
    k->too_big = false;
}

void pb_sink_free(pb_sink_t *k)
{
    for (size_t i = 0; i < k->depth; i++)
        free(k->frames[i].keys.table);
    if (k->frames != k->inline_frames)
        free(k->frames);
    k->depth = 0;
}

static int push(pb_sink_t *k, enum role role, bool is_map, json_t *node)
{
    if (k->depth >= PB_MAX_DEPTH)
        return -1;
    if (k->depth == k->cap) {
        size_t cap = 2 * k->cap;
        pb_frame_t *f = malloc(cap * sizeof *f);
        if (f == NULL)
            return -1;
        memcpy(f, k->frames, k->depth * sizeof *f);
        if (k->frames != k->inline_frames)
            free(k->frames);
        k->frames = f;
        k->cap = cap;
    }
    pb_frame_t *f = &k->frames[k->depth++];
    f->role = (uint8_t)role;
    f->member = M_OTHER;
    f->is_map = is_map;
    f->node = node;
    f->key = NULL;
    f->key_len = 0;
    f->keys.n = 0;
    f->keys.cap = 0;
    f->keys.table = NULL;
    return 0;
}

static int pop(pb_sink_t *k)
{
    if (k->depth == 0)
        return -1;
    pb_frame_t *f = &k->frames[--k->depth];
    free(f->keys.table);
    return 0;
}

int pb_sink_key(pb_sink_t *k, const char *s, size_t n, bool stable)
{
    pb_frame_t *f = &k->frames[k->depth - 1];
    if (memchr(s, '\0', n) != NULL) /* jansson: "NUL byte in object key not supported" */
        return -1;
    if (f->role == R_BUILD && json_object_getn(f->node, s, n) != NULL)
        return -1;
    if (!stable && (s = pb_arena_copy(&k->r->arena, s, n)) == NULL)
        return -1;
    if (f->role != R_BUILD && !keyset_add(&f->keys, s, n))
        return -1;
    f->key = s;
    f->key_len = n;
    switch (f->role) {
    case R_TOP:
        f->member = (uint8_t)classify(top_keys, 6, s, n);
        break;
    case R_PARAMS:
        f->member = (uint8_t)classify(params_keys, 2, s, n);
        break;
    case R_META:
        f->member = (uint8_t)classify(meta_keys, 5, s, n);
        break;
    case R_INFO:
        f->member = (uint8_t)classify(info_keys, 1, s, n);
        break;
    default:
        break;
    }
    return 0;
}

/* ---- where a value goes ------------------------------------------------------------- */

typedef enum { T_SKIP, T_KEEP, T_KIND, T_BUILD, T_PUSH, T_ROOT } target_kind_t;

typedef struct {
    target_kind_t t;
    pb_kind_t *kind; /* T_KEEP (a string is kept), T_KIND (only its kind), T_PUSH */
    pb_span_t *span;
    json_t **slot;  /* T_BUILD into a slot of the view... */
    json_t *parent; /* ...or into an object (with key) or an array */
    const char *key;
    size_t key_len;
    enum role role; /* T_PUSH: an object parleyd reads in place */
} target_t;

/* What a value is, for target(). */
typedef enum { C_STRING, C_SCALAR, C_MAP, C_ARRAY } vclass_t;

static target_t target(pb_sink_t *k, vclass_t c)
{
    bool is_map = c == C_MAP;
    target_t t = {.t = T_SKIP};
    if (k->depth == 0) {
        t.t = T_ROOT;
        return t;
    }
    pb_frame_t *f = &k->frames[k->depth - 1];
    pb_request_t *r = k->r;
    switch (f->role) {
    case R_BUILD:
        t.t = T_BUILD;
        t.parent = f->node;
        t.key = f->key;
        t.key_len = f->key_len;
        break;
    case R_TOP:
        switch (f->member) {
        case M_JSONRPC:
            t = (target_t){.t = T_KEEP, .kind = &r->jsonrpc_kind, .span = &r->jsonrpc};
            break;
        case M_METHOD:
            t = (target_t){.t = T_KEEP, .kind = &r->method_kind, .span = &r->method};
            break;
        case M_ID:
            t = (target_t){.t = T_BUILD, .slot = &r->id};
            break;
        case M_PARAMS:
            t = (target_t){
                .t = is_map ? T_PUSH : T_KIND, .kind = &r->params_kind, .role = R_PARAMS};
            break;
        case M_RESULT:
            r->has_result = true;
            break;
        }
        break;
    case R_PARAMS:
        if (f->member == M_META)
            t = (target_t){.t = is_map ? T_PUSH : T_KIND, .kind = &r->meta_kind, .role = R_META};
        else if (f->member == M_NAME && c == C_STRING)
            t = (target_t){.t = T_KEEP, .kind = &r->name_kind, .span = &r->name};
        else {
            if (f->member == M_NAME) /* and built into rest, as a handler would see it */
                r->name_kind = is_map ? PB_OBJECT : PB_OTHER;
            if (r->rest == NULL)
                r->rest = json_object(); /* NULL on ENOMEM: attach() fails */
            t = (target_t){.t = T_BUILD, .parent = r->rest, .key = f->key, .key_len = f->key_len};
        }
        break;
    case R_META:
        switch (f->member) {
        case M_VERSION:
            t = (target_t){.t = T_KEEP, .kind = &r->version_kind, .span = &r->version};
            break;
        case M_CAPS:
            t = (target_t){.t = T_BUILD, .slot = &r->caps};
            break;
        case M_INFO:
            t = (target_t){.t = is_map ? T_PUSH : T_KIND, .kind = &r->info_kind, .role = R_INFO};
            break;
        case M_LEVEL:
            t = (target_t){.t = T_KEEP, .kind = &r->level_kind, .span = &r->level};
            break;
        case M_PROGRESS:
            t = (target_t){.t = T_BUILD, .slot = &r->progress};
            break;
        }
        break;
    case R_INFO:
        if (f->member == M_NAME)
            t = (target_t){.t = T_KEEP, .kind = &r->client_name_kind, .span = &r->client_name};
        break;
    default:
        break;
    }
    return t;
}

static int attach(const target_t *t, json_t *v)
{
    if (v == NULL)
        return -1;
    if (t->slot != NULL) {
        *t->slot = v;
        return 0;
    }
    if (json_is_array(t->parent))
        return json_array_append_new(t->parent, v);
    return json_object_setn_new_nocheck(t->parent, t->key, t->key_len, v);
}

int pb_sink_string(pb_sink_t *k, const char *s, size_t n, bool stable)
{
    target_t t = target(k, C_STRING);
    switch (t.t) {
    case T_ROOT:
        k->r->top = PB_OTHER;
        return 0;
    case T_KEEP:
        if (!stable && (s = pb_arena_copy(&k->r->arena, s, n)) == NULL)
            return -1;
        *t.kind = PB_STRING;
        *t.span = (pb_span_t){s, n};
        return 0;
    case T_KIND:
        *t.kind = PB_OTHER;
        return 0;
    case T_BUILD:
        return attach(&t, json_stringn_nocheck(s, n));
    default:
        return 0;
    }
}

/* A number, true, false or null going to t, built by make when it is
 * built. */
static int scalar(pb_sink_t *k, const target_t *t, json_t *(*make)(const void *), const void *arg)
{
    switch (t->t) {
    case T_ROOT:
        k->r->top = PB_OTHER;
        return 0;
    case T_KEEP:
    case T_KIND:
        *t->kind = PB_OTHER;
        return 0;
    case T_BUILD:
        return attach(t, make(arg));
    default:
        return 0;
    }
}

typedef struct {
    const char *s;
    size_t n;
} text_t;

static json_t *make_number(const void *a)
{
    const text_t *t = a;
    return pb_number(t->s, t->n);
}

int pb_sink_number(pb_sink_t *k, const char *text, size_t n)
{
    int c = pb_number_check(text, n);
    if (c != 0) {
        k->too_big = c > 0;
        return -1;
    }
    target_t t = target(k, C_SCALAR);
    text_t x = {text, n};
    return scalar(k, &t, make_number, &x);
}

static json_t *make_integer(const void *a)
{
    return json_integer(*(const int64_t *)a);
}

int pb_sink_integer(pb_sink_t *k, int64_t v)
{
    target_t t = target(k, C_SCALAR);
    return scalar(k, &t, make_integer, &v);
}

static json_t *make_real(const void *a)
{
    return json_real(*(const double *)a);
}

int pb_sink_real(pb_sink_t *k, double v)
{
    target_t t = target(k, C_SCALAR);
    return scalar(k, &t, make_real, &v);
}

static json_t *make_bool(const void *a)
{
    return json_boolean(*(const bool *)a);
}

int pb_sink_bool(pb_sink_t *k, bool v)
{
    target_t t = target(k, C_SCALAR);
    return scalar(k, &t, make_bool, &v);
}

static json_t *make_null(const void *a)
{
    (void)a;
    return json_null();
}

int pb_sink_null(pb_sink_t *k)
{
    target_t t = target(k, C_SCALAR);
    return scalar(k, &t, make_null, NULL);
}

static int start(pb_sink_t *k, bool is_map)
{
    target_t t = target(k, is_map ? C_MAP : C_ARRAY);
    switch (t.t) {
    case T_ROOT:
        k->r->top = is_map ? PB_OBJECT : PB_OTHER;
        return push(k, is_map ? R_TOP : R_SKIP, is_map, NULL);
    case T_PUSH:
        *t.kind = PB_OBJECT;
        return push(k, t.role, true, NULL);
    case T_KEEP:
    case T_KIND:
        *t.kind = is_map ? PB_OBJECT : PB_OTHER;
        return push(k, R_SKIP, is_map, NULL);
    case T_BUILD: {
        json_t *v = is_map ? json_object() : json_array();
        if (attach(&t, v) != 0)
            return -1;
        return push(k, R_BUILD, is_map, v);
    }
    default:
        return push(k, R_SKIP, is_map, NULL);
    }
}

int pb_sink_start_map(pb_sink_t *k)
{
    return start(k, true);
}

int pb_sink_start_array(pb_sink_t *k)
{
    return start(k, false);
}

int pb_sink_end_map(pb_sink_t *k)
{
    return pop(k);
}

int pb_sink_end_array(pb_sink_t *k)
{
    return pop(k);
}
