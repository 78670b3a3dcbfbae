/* parse_bench: what parleyd must read from one JSON-RPC request, and the
 * four ways of reading it that bench/parse/parse_bench.c compares (issue
 * #49): jansson's whole tree (today's path, src/mcp/jsonrpc.c), and yajl's
 * events, jsmn's tokens and simdjson's tape, each feeding one event sink
 * that keeps only what parleyd checks (the envelope, the 2026-07-28
 * params._meta) and builds jansson values only for what a handler reads.
 *
 * The view (pb_request_t) holds the same facts whichever parser filled it,
 * so pb_verdict answers as parleyd's session would (src/mcp/session.c,
 * envelope.c, session_methods.c) and the paths can be checked against each
 * other (parley-parse-bench --check).
 *
 * Strictness is jansson's as parleyd calls it (JSON_REJECT_DUPLICATES |
 * JSON_ALLOW_NUL | JSON_DECODE_ANY, the retry of a too-big integer as a
 * real): each candidate path adds what its parser does not refuse by
 * itself (see the pb_*_parse comments and bench/README.md). */
#ifndef PARLEY_BENCH_PARSE_BENCH_H
#define PARLEY_BENCH_PARSE_BENCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* jansson's nesting limit (JSON_PARSER_MAX_DEPTH): 2048 levels pass, the
 * 2049th is refused. */
#define PB_MAX_DEPTH 2048

/* Inputs end with this many readable zero bytes past their length
 * (simdjson reads up to SIMDJSON_PADDING past the end: parleyd's read
 * buffers would need the same slack). */
#define PB_PADDING 64

/* What a member was: absent, a string (its text in the span), an object,
 * or anything else. */
typedef enum { PB_ABSENT = 0, PB_STRING, PB_OBJECT, PB_OTHER } pb_kind_t;

typedef struct pb_span_s {
    const char *s; /* decoded text, may hold NUL; borrowed or in the arena */
    size_t len;
} pb_span_t;

/* Blocks of scratch memory for decoded text a path keeps (yajl's strings
 * live only during a callback; jsmn's escaped strings are decoded). */
typedef struct pb_block_s pb_block_t;
typedef struct pb_arena_s {
    pb_block_t *blocks;
    char first[256];
    size_t used;
} pb_arena_t;

/* One request as parleyd reads it. Values it keeps as jansson values (an
 * id to echo, the arguments and other params members a handler reads, the
 * client's capabilities a call keeps, a progress token) are json_t; what
 * it only checks is text. */
typedef struct pb_request_s {
    pb_kind_t top; /* PB_OBJECT, or PB_OTHER (an array, a scalar) */
    pb_kind_t jsonrpc_kind;
    pb_span_t jsonrpc;
    json_t *id; /* any JSON value, or NULL when absent */
    pb_kind_t method_kind;
    pb_span_t method;
    bool has_result; /* a "result" or "error" member (a response) */
    pb_kind_t params_kind;
    pb_kind_t name_kind; /* params.name */
    pb_span_t name;
    /* params' members other than _meta and a string name (what handlers
     * read: tools/call's arguments, initialize's capabilities...); NULL
     * when there are none. rest_is_params: rest is params itself (the
     * jansson path), _meta and name included. */
    json_t *rest;
    bool rest_is_params;
    pb_kind_t meta_kind; /* params._meta */
    pb_kind_t version_kind;
    pb_span_t version; /* _meta[io.modelcontextprotocol/protocolVersion] */
    json_t *caps;      /* _meta[...clientCapabilities], or NULL */
    pb_kind_t info_kind;
    pb_kind_t client_name_kind;
    pb_span_t client_name; /* _meta[...clientInfo].name */
    pb_kind_t level_kind;
    pb_span_t level;  /* _meta[...logLevel] */
    json_t *progress; /* _meta.progressToken, or NULL */
    /* owned */
    json_t *tree; /* the jansson path's whole message */
    pb_arena_t arena;
} pb_request_t;

/* The verdict parleyd's session gives a request once parsed: 0 (served),
 * 1 (a response to one of its own requests), or the JSON-RPC error code it
 * answers (-32600, -32602, -32022). */
int pb_verdict(const pb_request_t *r);

void pb_request_init(pb_request_t *r);
void pb_request_release(pb_request_t *r);

/* Copies n bytes into r's arena; NULL on ENOMEM. */
const char *pb_arena_copy(pb_arena_t *a, const char *s, size_t n);

/* ---- the candidate paths' checks ---------------------------------------------- */

/* True when text is valid UTF-8 (no overlong forms, surrogates or code
 * points past U+10FFFF) and every \u escape of a surrogate is a high one
 * followed by a low one. Escapes are read pairwise (a backslash is only
 * valid inside strings, where "\\" is one escape), so this needs no
 * knowledge of where strings are. */
bool pb_prescan(const char *text, size_t len);

/* A number's text, valid by JSON's grammar: 0 when jansson reads it as
 * an integer that fits 64 bits or a finite real, 1 for an integer past
 * 64 bits (jansson: "too big"; parleyd's jsonrpc_parse then reads the
 * whole message again, every number a real, the integral ones within
 * +-2^53 integers again: the candidate paths leave such a message to
 * jansson), -1 for a real that overflows ("real number overflow"). */
int pb_number_check(const char *text, size_t len);
/* The json_t jansson makes of a number pb_number_check passed; NULL on
 * ENOMEM. */
json_t *pb_number(const char *text, size_t len);
/* The length of the JSON number at the start of text (by the grammar), 0
 * when there is none. */
size_t pb_number_len(const char *text, size_t len);

/* ---- the event sink the candidate paths feed -------------------------------- */

/* The keys of one object the sink does not build (the envelope's, and
 * those of skipped values), for refusing a key given twice: inline while
 * few, then an open-addressing table. */
#define PB_KEYSET_INLINE 8
typedef struct pb_key_s {
    uint64_t hash;
    const char *s;
    size_t n;
} pb_key_t;
typedef struct pb_keyset_s {
    size_t n, cap; /* cap: the table's size, 0 while inline */
    pb_key_t small[PB_KEYSET_INLINE];
    pb_key_t *table;
} pb_keyset_t;

/* One open object or array. role: what it is to parleyd (the message, its
 * params, params._meta, _meta's clientInfo, a value only checked, a value
 * being built); member: which member the current key names; node: the
 * value being built; key: the current key (kept while its value comes). */
typedef struct pb_frame_s {
    uint8_t role, member;
    bool is_map;
    json_t *node;
    const char *key;
    size_t key_len;
    pb_keyset_t keys;
} pb_frame_t;

#define PB_FRAMES_INLINE 8
typedef struct pb_sink_s {
    pb_request_t *r;
    pb_frame_t *frames; /* frames[0..depth): inline, or on the heap past PB_FRAMES_INLINE */
    size_t depth, cap;
    bool too_big; /* refused for an integer past 64 bits: jansson's to read */
    pb_frame_t inline_frames[PB_FRAMES_INLINE];
} pb_sink_t;

/* stable: the text outlives the parse (else what is kept is copied). */
void pb_sink_init(pb_sink_t *k, pb_request_t *r);
void pb_sink_free(pb_sink_t *k);
/* Each returns 0, or -1 when the message must be refused (a duplicate
 * key, a NUL in a key, too deep, a real that overflows, ENOMEM) or read
 * by jansson after all (too_big). */
int pb_sink_start_map(pb_sink_t *k);
int pb_sink_key(pb_sink_t *k, const char *s, size_t n, bool stable);
int pb_sink_end_map(pb_sink_t *k);
int pb_sink_start_array(pb_sink_t *k);
int pb_sink_end_array(pb_sink_t *k);
int pb_sink_string(pb_sink_t *k, const char *s, size_t n, bool stable);
int pb_sink_number(pb_sink_t *k, const char *text, size_t n);
int pb_sink_integer(pb_sink_t *k, int64_t v);
int pb_sink_real(pb_sink_t *k, double v);
int pb_sink_bool(pb_sink_t *k, bool v);
int pb_sink_null(pb_sink_t *k);

/* ---- the paths ------------------------------------------------------------------ */

/* Each parses text (len bytes, PB_PADDING readable bytes after) into r
 * (initialised by the caller, released by the caller). Returns 0, or -1
 * for a message parleyd refuses as a parse error (-32700). */
typedef int (*pb_parse_fn)(const char *text, size_t len, pb_request_t *r);

int pb_jansson_parse(const char *text, size_t len, pb_request_t *r);
/* parleyd's own jsonrpc_parse (json_simd_load's tree, else jansson's). */
int pb_parleyd_parse(const char *text, size_t len, pb_request_t *r);
int pb_yajl_parse(const char *text, size_t len, pb_request_t *r);
int pb_jsmn_parse(const char *text, size_t len, pb_request_t *r);
#ifdef PB_HAVE_SIMDJSON
int pb_simdjson_parse(const char *text, size_t len, pb_request_t *r);
#endif

/* The jansson path's view of a parsed message (borrowing from m, which r
 * then owns): also the simdjson path's fallback. */
void pb_jansson_view(json_t *m, pb_request_t *r);

/* What the parser alone refuses, without the path's additions (for the
 * strictness table): 0 accepted, -1 refused. */
int pb_yajl_alone(const char *text, size_t len);
int pb_jsmn_alone(const char *text, size_t len);
#ifdef PB_HAVE_SIMDJSON
int pb_simdjson_alone(const char *text, size_t len);
#endif

#ifdef __cplusplus
}
#endif

#endif
