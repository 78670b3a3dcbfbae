/* parse_bench: parley-parse-bench, how parleyd reads one request with
 * jansson (today) and with the candidate parsers (issue #49; see
 * parse_bench.h and bench/README.md). Run by bench/parse.sh.
 *
 *   parley-parse-bench --check DIR         every path on DIR/NAME.json and on
 *                                          the strictness probes; exits 1
 *                                          when a path reads a request
 *                                          otherwise than jansson's
 *   parley-parse-bench --paths             the paths built, one a line
 *   parley-parse-bench --probes            the strictness table (Markdown)
 *   parley-parse-bench --run PATH FILE N   FILE read N times by PATH in
 *                                          pb_measured_loop (callgrind
 *                                          --toggle-collect), after one
 *                                          read outside it
 *   parley-parse-bench --differ DIR N      N messages mutated from DIR's
 *                                          and the probes, each read by
 *                                          every path; exits 1 when one
 *                                          reads otherwise than jansson's
 *   parley-parse-bench --time DIR N        ns per request for each file
 *                                          and path (best of 5 rounds of
 *                                          N), tab-separated */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parse_bench.h"

typedef struct {
    const char *name;
    pb_parse_fn parse;
    int (*alone)(const char *text, size_t len);
} path_t;

static const path_t paths[] = {
    {"jansson", pb_jansson_parse, NULL},
    {"parleyd", pb_parleyd_parse, NULL},
    {"yajl", pb_yajl_parse, pb_yajl_alone},
    {"jsmn", pb_jsmn_parse, pb_jsmn_alone},
#ifdef PB_HAVE_SIMDJSON
    {"simdjson", pb_simdjson_parse, pb_simdjson_alone},
#endif
};
#define NPATHS (sizeof paths / sizeof *paths)

typedef struct {
    char *name;
    char *text; /* len bytes, then PB_PADDING zero bytes */
    size_t len;
} input_t;

static char *padded(const char *s, size_t len)
{
    char *t = calloc(1, len + PB_PADDING);
    if (t == NULL) {
        perror("calloc");
        exit(2);
    }
    memcpy(t, s, len);
    return t;
}

static input_t load(const char *file)
{
    FILE *f = fopen(file, "rb");
    if (f == NULL) {
        perror(file);
        exit(2);
    }
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (len == cap && (buf = realloc(buf, cap = cap ? 2 * cap : 4096)) == NULL)
            exit(2);
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    /* The files end without a newline; a trailing one is the editor's. */
    while (len > 0 && buf[len - 1] == '\n')
        len--;
    const char *base = strrchr(file, '/');
    input_t in = {strdup(base ? base + 1 : file), padded(buf, len), len};
    free(buf);
    return in;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const input_t *)a)->name, ((const input_t *)b)->name);
}

/* DIR/NAME.json, sorted by name; their count in *n. */
static input_t *load_dir(const char *dir, size_t *n)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        perror(dir);
        exit(2);
    }
    input_t *all = NULL;
    *n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        all = realloc(all, (*n + 1) * sizeof *all);
        all[(*n)++] = load(path);
    }
    closedir(d);
    qsort(all, *n, sizeof *all, by_name);
    return all;
}

static void free_inputs(input_t *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(in[i].name);
        free(in[i].text);
    }
    free(in);
}

static const path_t *find_path(const char *name)
{
    for (size_t i = 0; i < NPATHS; i++)
        if (strcmp(paths[i].name, name) == 0)
            return &paths[i];
    fprintf(stderr, "parley-parse-bench: no path %s\n", name);
    exit(2);
}

/* ---- what a path read, as one line ------------------------------------------------- */

static void put_json(FILE *f, const json_t *v)
{
    char *s = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    fputs(s ? s : "-", f);
    free(s);
}

static void put_span(FILE *f, pb_kind_t k, pb_span_t s)
{
    if (k != PB_STRING) {
        fprintf(f, "%d", (int)k);
        return;
    }
    json_t *v = json_stringn_nocheck(s.s, s.len);
    put_json(f, v);
    json_decref(v);
}

/* What rc and r say, as text (malloc'd): equal for two paths when they
 * read the message alike. */
static char *describe(int rc, const pb_request_t *r)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (rc != 0) {
        fputs("parse error", f);
        fclose(f);
        return out;
    }
    fprintf(f, "verdict=%d top=%d jsonrpc=", pb_verdict(r), (int)r->top);
    put_span(f, r->jsonrpc_kind, r->jsonrpc);
    fputs(" id=", f);
    put_json(f, r->id);
    fputs(" method=", f);
    put_span(f, r->method_kind, r->method);
    fprintf(f, " result=%d params=%d name=", r->has_result, (int)r->params_kind);
    put_span(f, r->name_kind, r->name);
    fprintf(f, " meta=%d version=", (int)r->meta_kind);
    put_span(f, r->version_kind, r->version);
    fputs(" caps=", f);
    put_json(f, r->caps);
    fprintf(f, " info=%d client=", (int)r->info_kind);
    put_span(f, r->client_name_kind, r->client_name);
    fputs(" level=", f);
    put_span(f, r->level_kind, r->level);
    fputs(" progress=", f);
    put_json(f, r->progress);
    /* params less _meta and a string name */
    json_t *rest = r->rest_is_params             ? json_copy(r->rest)
                   : r->rest                     ? json_incref(r->rest)
                   : r->params_kind == PB_OBJECT ? json_object()
                                                 : NULL;
    if (r->rest_is_params) {
        json_object_del(rest, "_meta");
        if (r->name_kind == PB_STRING)
            json_object_del(rest, "name");
    }
    fputs(" rest=", f);
    put_json(f, rest);
    json_decref(rest);
    fclose(f);
    return out;
}

static char *read_with(const path_t *p, const char *text, size_t len)
{
    pb_request_t r;
    pb_request_init(&r);
    int rc = p->parse(text, len, &r);
    char *d = describe(rc, &r);
    pb_request_release(&r);
    return d;
}

/* ---- the strictness probes ------------------------------------------------------------ */

typedef struct {
    const char *what;
    const char *text;
    size_t len; /* 0: strlen(text) */
    bool quirk; /* jansson is laxer than the candidate paths here */
} probe_t;

#define CALL_HEAD                                                                                  \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\","
#define META                                                                                       \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                       \
    "\"io.modelcontextprotocol/clientCapabilities\":{}"
#define NAMED(w, s)                                                                                \
    {                                                                                              \
        w, s, 0, false                                                                             \
    }
#define BYTES(w, s)                                                                                \
    {                                                                                              \
        w, s, sizeof s - 1, false                                                                  \
    }
#define QUIRK(w, s)                                                                                \
    {                                                                                              \
        w, s, sizeof s - 1, true                                                                   \
    }

static const probe_t probes[] = {
    NAMED("key twice: method", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"method\":"
                               "\"tools/list\"}"),
    NAMED("key twice: after an escape", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                                        "\"\\u006dethod\":\"tools/list\"}"),
    NAMED("key twice: in _meta", CALL_HEAD META ",\"io.modelcontextprotocol/"
                                                "protocolVersion\":\"2025-11-25\"}}}"),
    NAMED("key twice: in arguments", CALL_HEAD "\"arguments\":{\"a\":1,\"a\":2}}}"),
    NAMED("key twice: in a value not read", CALL_HEAD META ",\"x\":{\"b\":[{\"c\":1,\"c\":1}]}}}}"),
    NAMED("key twice: 9th key of a skipped object",
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":{\"a\":1,\"b\":1,\"c\":1,\"d\":"
          "1,\"e\":1,\"f\":1,\"g\":1,\"h\":1,\"i\":1,\"j\":1,\"k\":1,\"a\":1}}"),
    NAMED("escaped key names a member", "{\"jsonrpc\":\"2.0\",\"id\":1,\"\\u006dethod\":\"ping\"}"),
    BYTES("UTF-8: stray continuation byte", CALL_HEAD "\"arguments\":{\"q\":\"\x80\"}}}"),
    BYTES("UTF-8: overlong NUL (C0 80)", CALL_HEAD "\"arguments\":{\"q\":\"\xC0\x80\"}}}"),
    BYTES("UTF-8: overlong 3 bytes (E0 80 AF)",
          CALL_HEAD "\"arguments\":{\"q\":\"\xE0\x80\xAF\"}}}"),
    BYTES("UTF-8: encoded surrogate (ED A0 80)",
          CALL_HEAD "\"arguments\":{\"q\":\"\xED\xA0\x80\"}}}"),
    BYTES("UTF-8: past U+10FFFF (F4 90 80 80)",
          CALL_HEAD "\"arguments\":{\"q\":\"\xF4\x90\x80\x80\"}}}"),
    BYTES("UTF-8: cut sequence (E2 82)", CALL_HEAD "\"arguments\":{\"q\":\"\xE2\x82\"}}}"),
    BYTES("UTF-8: in a key", CALL_HEAD "\"arguments\":{\"\xFF\":1}}}"),
    BYTES("UTF-8: valid (Cyrillic, CJK, emoji)",
          CALL_HEAD "\"arguments\":{\"q\":\"\xD0\xB2\xE6\x95\xB0\xF0\x9F\x98\x80\"}}}"),
    NAMED("escape: lone high surrogate", CALL_HEAD "\"arguments\":{\"q\":\"\\ud800\"}}}"),
    NAMED("escape: lone low surrogate", CALL_HEAD "\"arguments\":{\"q\":\"\\udc00\"}}}"),
    NAMED("escape: high surrogate, then not a low one",
          CALL_HEAD "\"arguments\":{\"q\":\"\\ud800\\u0041\"}}}"),
    NAMED("escape: surrogate pair", CALL_HEAD "\"arguments\":{\"q\":\"\\ud83d\\ude00\"}}}"),
    NAMED("escape: invalid (\\x)", CALL_HEAD "\"arguments\":{\"q\":\"\\x41\"}}}"),
    NAMED("escape: all of them",
          CALL_HEAD "\"arguments\":{\"q\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\"}}}"),
    NAMED("NUL: \\u0000 in a value", CALL_HEAD "\"arguments\":{\"q\":\"a\\u0000b\"}}}"),
    NAMED("NUL: \\u0000 in a key", CALL_HEAD "\"arguments\":{\"a\\u0000b\":1}}}"),
    NAMED("NUL: \\u0000 in method", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\\u0000x\"}"),
    NAMED("NUL: \\u0000 in params.name",
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
          "\"x\\u0000y\"}}"),
    NAMED("NUL: \\u0000 in the protocol version",
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{\"io."
          "modelcontextprotocol/protocolVersion\":\"2026-07-28\\u0000\",\"io.modelcontextprotocol/"
          "clientCapabilities\":{}}}}"),
    BYTES("NUL: raw byte in a string", CALL_HEAD "\"arguments\":{\"q\":\"a\0b\"}}}"),
    QUIRK("NUL: raw byte after a number", CALL_HEAD "\"arguments\":{\"a\":2\0}}}"),
    QUIRK("NUL: raw byte after a literal", CALL_HEAD "\"arguments\":{\"a\":true\0}}}"),
    BYTES("NUL: raw byte after the message",
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\0"),
    BYTES("control character raw in a string", CALL_HEAD "\"arguments\":{\"q\":\"a\x01\"}}}"),
    BYTES("tab raw in a string", CALL_HEAD "\"arguments\":{\"q\":\"a\tb\"}}}"),
    /* depth: the message 1, params 2, arguments 3: the rest in "a" */
    {"depth 2048 (jansson's limit)", NULL, 2048, false},
    {"depth 2049", NULL, 2049, false},
    {"depth 100000", NULL, 100000, false},
    NAMED("trailing garbage", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}x"),
    NAMED("two messages", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} {}"),
    NAMED("trailing comma in an object", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",}"),
    NAMED("trailing comma in an array", CALL_HEAD "\"arguments\":{\"a\":[1,2,]}}}"),
    NAMED("missing colon", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\" \"ping\"}"),
    NAMED("missing comma in an object", "{\"jsonrpc\":\"2.0\",\"id\":1 \"method\":\"ping\"}"),
    NAMED("missing comma in an array", CALL_HEAD "\"arguments\":{\"a\":[1 2]}}}"),
    NAMED("colon in an array", CALL_HEAD "\"arguments\":{\"a\":[1:2]}}}"),
    NAMED("key without a value", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\"}"),
    NAMED("number as a key", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",1:2}"),
    NAMED("literal: nul", CALL_HEAD "\"arguments\":{\"a\":nul}}}"),
    NAMED("literal: truex", CALL_HEAD "\"arguments\":{\"a\":truex}}}"),
    NAMED("literal: True", CALL_HEAD "\"arguments\":{\"a\":True}}}"),
    NAMED("number: 1.2.3", CALL_HEAD "\"arguments\":{\"a\":1.2.3}}}"),
    NAMED("number: -", CALL_HEAD "\"arguments\":{\"a\":-}}}"),
    NAMED("number: 01", CALL_HEAD "\"arguments\":{\"a\":01}}}"),
    NAMED("number: 1.", CALL_HEAD "\"arguments\":{\"a\":1.}}}"),
    NAMED("number: .5", CALL_HEAD "\"arguments\":{\"a\":.5}}}"),
    NAMED("number: +1", CALL_HEAD "\"arguments\":{\"a\":+1}}}"),
    NAMED("number: 1e", CALL_HEAD "\"arguments\":{\"a\":1e}}}"),
    NAMED("numbers: -0, 1.0, 1E2, 2^63-1, -2^63, 1e-400",
          CALL_HEAD "\"arguments\":{\"a\":-0,\"b\":1.0,\"c\":1E2,\"d\":9223372036854775807,"
                    "\"e\":-9223372036854775808,\"f\":1e-400}}}"),
    NAMED("number: -0.0", CALL_HEAD "\"arguments\":{\"a\":-0.0}}}"),
    NAMED("integer past 64 bits (a real)",
          CALL_HEAD "\"arguments\":{\"a\":99999999999999999999,\"b\":18446744073709551615}}}"),
    NAMED("integer past 64 bits as the id", "{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999,"
                                            "\"method\":\"ping\"}"),
    NAMED("real overflow (1e400)", CALL_HEAD "\"arguments\":{\"a\":1e400}}}"),
    NAMED("real overflow in a value not read",
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":[-1e400]}"),
    NAMED("integer of 400 digits", CALL_HEAD "\"arguments\":{\"a\":"
                                             "1000000000000000000000000000000000000000000000000000"
                                             "0000000000000000000000000000000000000000000000000000"
                                             "0000000000000000000000000000000000000000000000000000"
                                             "0000000000000000000000000000000000000000000000000000"
                                             "0000000000000000000000000000000000000000000000000000"
                                             "0000000000000000000000000000000000000000000000000000"
                                             "0000000000000000000000000000000000000000000000000000"
                                             "000000000000000000000000000000000000000000}}}"),
    NAMED("comment", "{\"jsonrpc\":\"2.0\",/* c */\"id\":1,\"method\":\"ping\"}"),
    NAMED("single quotes", "{'jsonrpc':'2.0','id':1,'method':'ping'}"),
    BYTES("byte order mark", "\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
    NAMED("empty", ""),
    NAMED("whitespace only", " \n"),
    NAMED("a batch (array)", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]"),
    NAMED("a bare number", "1"),
    NAMED("a bare string", "\"x\""),
    NAMED("a bare number, then garbage", " 1 x"),
    NAMED("a bare literal, cut", "tru"),
    NAMED("unclosed object", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\""),
    NAMED("unclosed string", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping}"),
    NAMED("mismatched brackets", CALL_HEAD "\"arguments\":{\"a\":[1}]}}"),
    NAMED("whitespace: form feed", "{\"jsonrpc\":\"2.0\",\f\"id\":1,\"method\":\"ping\"}"),
    NAMED("whitespace: vertical tab", "{\"jsonrpc\":\"2.0\",\v\"id\":1,\"method\":\"ping\"}"),
    NAMED("id: real", "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}"),
    NAMED("id: null", "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}"),
    NAMED("params: an array", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[]}"),
    NAMED("_meta: version 2025-11-25",
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{\"io."
          "modelcontextprotocol/protocolVersion\":\"2025-11-25\",\"io.modelcontextprotocol/"
          "clientCapabilities\":{}}}}"),
    NAMED("_meta: no capabilities",
          "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{\"io."
          "modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}"),
    NAMED("_meta: capabilities an array",
          CALL_HEAD "\"_meta\":{\"io.modelcontextprotocol/"
                    "protocolVersion\":\"2026-07-28\",\"io."
                    "modelcontextprotocol/clientCapabilities\":[]}}}"),
    NAMED("_meta: clientInfo a string", CALL_HEAD META ",\"io.modelcontextprotocol/clientInfo\":"
                                                       "\"x\"}}}"),
    NAMED("_meta: log level unknown", CALL_HEAD META ",\"io.modelcontextprotocol/logLevel\":"
                                                     "\"loud\"}}}"),
    NAMED("_meta: log level and progress token",
          CALL_HEAD META ",\"io.modelcontextprotocol/logLevel\":\"info\",\"progressToken\":7}}}"),
    NAMED("tools/call: name a number", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                                       "\"params\":{\"name\":5}}"),
    NAMED("tools/call: arguments a string", CALL_HEAD "\"arguments\":\"x\"}}"),
    NAMED("a response", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":[1]}}"),
    NAMED("members in any order",
          "{\"params\":{\"arguments\":{\"z\":[true,false,null]},\"name\":\"x\"},\"method\":"
          "\"tools/call\",\"id\":\"s\",\"jsonrpc\":\"2.0\"}"),
};
#define NPROBES (sizeof probes / sizeof *probes)

/* The text of probe p (malloc'd, padded); its length in *len. */
static char *probe_text(const probe_t *p, size_t *len)
{
    if (p->text != NULL) {
        *len = p->len ? p->len : strlen(p->text);
        return padded(p->text, *len);
    }
    size_t arrays = p->len - 3;
    static const char head[] = CALL_HEAD "\"arguments\":{\"a\":", tail[] = "}}}";
    *len = sizeof head - 1 + 2 * arrays + sizeof tail - 1;
    char *t = calloc(1, *len + PB_PADDING), *o = t;
    memcpy(o, head, sizeof head - 1);
    o += sizeof head - 1;
    memset(o, '[', arrays);
    memset(o + arrays, ']', arrays);
    memcpy(o + 2 * arrays, tail, sizeof tail - 1);
    return t;
}

/* How the probe went for a path, as the table says it. */
static const char *outcome(const char *d, char *buf, size_t cap)
{
    if (strcmp(d, "parse error") == 0)
        return "refused";
    int v = atoi(strstr(d, "verdict=") + 8);
    if (v == 0)
        return "served";
    snprintf(buf, cap, v == 1 ? "response" : "%d", v);
    return buf;
}

/* The probes table (Markdown) to stdout; the number of probes a path
 * read otherwise than jansson's. */
static int run_probes(bool print)
{
    int differ = 0;
    if (print) {
        printf("| probe | jansson (today) |");
        for (size_t i = 1; i < NPATHS; i++)
            printf(" %s alone | %s path |", paths[i].name, paths[i].name);
        printf("\n| --- | --- |");
        for (size_t i = 1; i < NPATHS; i++)
            printf(" --- | --- |");
        printf("\n");
    }
    for (size_t k = 0; k < NPROBES; k++) {
        size_t len;
        char *text = probe_text(&probes[k], &len), b0[16], b1[16];
        char *ref = read_with(&paths[0], text, len);
        if (print)
            printf("| %s | %s |", probes[k].what, outcome(ref, b0, sizeof b0));
        for (size_t i = 1; i < NPATHS; i++) {
            char *d = read_with(&paths[i], text, len);
            bool same = strcmp(d, ref) == 0;
            differ += !same && !probes[k].quirk;
            if (print) {
                const char *o = outcome(d, b1, sizeof b1);
                printf(" %s | %s%s |",
                       paths[i].alone == NULL           ? "–"
                       : paths[i].alone(text, len) == 0 ? "accepts"
                                                        : "refuses",
                       o,
                       same                                          ? ""
                       : probes[k].quirk                             ? " (jansson's quirk)"
                       : strcmp(o, outcome(ref, b0, sizeof b0)) == 0 ? " (≠ values)"
                                                                     : " **≠**");
            }
            if (!same && !probes[k].quirk && !print)
                fprintf(stderr, "probe %s: %s reads\n  %s\njansson\n  %s\n", probes[k].what,
                        paths[i].name, d, ref);
            free(d);
        }
        if (print)
            printf("\n");
        free(ref);
        free(text);
    }
    return differ;
}

/* ---- modes ---------------------------------------------------------------------------- */

static int check(const char *dir)
{
    size_t n;
    input_t *in = load_dir(dir, &n);
    int bad = 0;
    for (size_t f = 0; f < n; f++) {
        char *ref = read_with(&paths[0], in[f].text, in[f].len);
        printf("%s: %s\n", in[f].name, ref);
        for (size_t i = 1; i < NPATHS; i++) {
            char *d = read_with(&paths[i], in[f].text, in[f].len);
            if (strcmp(d, ref) != 0) {
                printf("  %s DIFFERS: %s\n", paths[i].name, d);
                bad++;
            }
            free(d);
        }
        free(ref);
    }
    free_inputs(in, n);
    int differ = run_probes(false);
    printf("%zu requests: %s; %zu probes: %d readings unlike jansson's\n", n,
           bad ? "a path DIFFERS" : "every path reads them as jansson does", NPROBES, differ);
    return bad ? 1 : 0;
}

/* ---- differential mutation ------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* True when path p reads m as jansson read it (ref) once the NUL bytes
 * jansson drops are dropped: one right after a number or a literal
 * ('{"a":2\0}' is {"a":2} to jansson 2.14, whose lexer puts back the
 * byte after a number or a literal, and a NUL put back is lost). */
static bool unquirked_reads_alike(const path_t *p, const char *m, size_t len, const char *ref)
{
    char *t = calloc(1, len + PB_PADDING);
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (!(m[i] == '\0' && i > 0 && strchr("0123456789el", m[i - 1]) && m[i - 1] != '\0'))
            t[n++] = m[i];
    bool alike = false;
    if (n < len) {
        char *d = read_with(p, t, n);
        alike = strcmp(d, ref) == 0;
        free(d);
    }
    free(t);
    return alike;
}

/* n messages made by mutating the request files of dir and the probes
 * (bytes replaced by JSON's own and by bad UTF-8, deleted, inserted, and
 * slices repeated, which gives keys twice); each read by every path and
 * compared with jansson's reading. Returns how many differed. */
static int differ(const char *dir, long n)
{
    static const char bytes[] = "{}[]\":,0123456789-+.eEuntfalsr \t\n\f\\/\x80\xC0\xED\xF4\xFF";
    size_t nf;
    input_t *in = load_dir(dir, &nf);
    size_t nbase = nf + NPROBES;
    int bad = 0, quirks = 0;
    for (long i = 0; i < n; i++) {
        size_t b = rng() % nbase, len;
        char *base =
            b < nf ? padded(in[b].text, len = in[b].len) : probe_text(&probes[b - nf], &len);
        if (len > 4096) {
            free(base);
            continue;
        }
        char *m = calloc(1, len + 4 * 32 + PB_PADDING); /* room for four edits */
        memcpy(m, base, len);
        free(base);
        for (int k = 0, edits = 1 + (int)(rng() % 4); k < edits; k++) {
            size_t at = len ? rng() % (len + 1) : 0;
            switch (rng() % 4) {
            case 0: /* replace */
                if (at < len)
                    m[at] = (rng() & 1) ? '\0' : bytes[rng() % (sizeof bytes - 1)];
                break;
            case 1: /* delete */
                if (at < len) {
                    memmove(m + at, m + at + 1, len - at - 1);
                    len--;
                }
                break;
            case 2: /* insert */
                memmove(m + at + 1, m + at, len - at);
                m[at] = bytes[rng() % (sizeof bytes - 1)];
                len++;
                break;
            default: { /* repeat a slice of up to 32 bytes */
                size_t from = len ? rng() % len : 0, cnt = 1 + rng() % 32;
                if (from + cnt > len)
                    cnt = len - from;
                memmove(m + at + cnt, m + at, len - at);
                memmove(m + at, m + (from < at ? from : from + cnt), cnt);
                len += cnt;
            }
            }
        }
        memset(m + len, 0, PB_PADDING);
        char *ref = read_with(&paths[0], m, len);
        for (size_t p = 1; p < NPATHS; p++) {
            char *d = read_with(&paths[p], m, len);
            if (strcmp(d, ref) != 0 && unquirked_reads_alike(&paths[p], m, len, ref))
                quirks++;
            else if (strcmp(d, ref) != 0 && bad++ < 10) {
                fprintf(stderr, "%s differs on (%zu bytes) ", paths[p].name, len);
                fwrite(m, 1, len, stderr);
                fprintf(stderr, "\n  %s\n  jansson: %s\n", d, ref);
            }
            free(d);
        }
        free(ref);
        free(m);
    }
    free_inputs(in, nf);
    printf("%ld mutated messages: %d readings unlike jansson's (and %d refused only for a NUL "
           "byte after a number or a literal, which jansson drops)\n",
           n, bad, quirks);
    return bad ? 1 : 0;
}

/* n reads of in by p, each released: what one request costs parleyd's
 * parse (and, with jansson, its lookups). */
static int reads(const path_t *p, const input_t *in, long n)
{
    int verdicts = 0;
    for (long i = 0; i < n; i++) {
        pb_request_t r;
        pb_request_init(&r);
        if (p->parse(in->text, in->len, &r) == 0)
            verdicts += pb_verdict(&r);
        pb_request_release(&r);
    }
    return verdicts;
}

/* The loop callgrind measures (--toggle-collect=pb_measured_loop). */
__attribute__((noinline)) int pb_measured_loop(const path_t *p, const input_t *in, long n)
{
    return reads(p, in, n);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void time_all(const char *dir, long n)
{
    size_t nf;
    input_t *in = load_dir(dir, &nf);
    for (size_t f = 0; f < nf; f++) {
        for (size_t i = 0; i < NPATHS; i++) {
            reads(&paths[i], &in[f], n / 10 + 1); /* warm */
            double best = 0;
            for (int round = 0; round < 5; round++) {
                double t0 = now_ns();
                pb_measured_loop(&paths[i], &in[f], n);
                double ns = (now_ns() - t0) / (double)n;
                best = round == 0 || ns < best ? ns : best;
            }
            printf("%s\t%s\t%.0f\n", in[f].name, paths[i].name, best);
        }
    }
    free_inputs(in, nf);
}

static int usage(void)
{
    fprintf(stderr, "usage: parley-parse-bench --check DIR | --paths | --probes | --differ DIR N | "
                    "--run PATH FILE N | --time DIR N\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--check") == 0)
        return check(argv[2]);
    if (argc == 2 && strcmp(argv[1], "--paths") == 0) {
        for (size_t i = 0; i < NPATHS; i++)
            printf("%s\n", paths[i].name);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--probes") == 0) {
        run_probes(true);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "--run") == 0) {
        const path_t *p = find_path(argv[2]);
        input_t in = load(argv[3]);
        reads(p, &in, 1); /* first use (allocations, lazy binding): not measured */
        int v = pb_measured_loop(p, &in, atol(argv[4]));
        printf("%s %s %d\n", p->name, in.name, v);
        free(in.name);
        free(in.text);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "--differ") == 0)
        return differ(argv[2], atol(argv[3]));
    if (argc == 4 && strcmp(argv[1], "--time") == 0) {
        time_all(argv[2], atol(argv[3]));
        return 0;
    }
    return usage();
}
