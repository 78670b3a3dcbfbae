/* json_simd: a fast first reader of JSON text into jansson values. It
 * parses with simdjson's DOM parser (libsimdjson, C++: json_simd.cpp is
 * parleyd's one C++ file, this header its C interface) and builds the
 * jansson value that json_loadb(text, len, JSON_ALLOW_NUL |
 * JSON_DECODE_ANY | JSON_REJECT_DUPLICATES) would return, member order
 * included.
 *
 * It only vouches for what it has read whole. Whatever it does not take
 * on it leaves to jansson by returning NULL: a text longer than
 * JSON_SIMD_MAX_LEN or nested deeper than JSON_SIMD_MAX_DEPTH, anything
 * simdjson refuses (so the error a client sees stays jansson's, with its
 * position), a key given twice or holding a NUL (jansson refuses those,
 * simdjson does not), an integer past int64 (jansson's caller reads those
 * again as reals). A NULL is never a verdict on the text: the caller reads it
 * with jansson, whose answer is final. So what a caller gets is exactly
 * what jansson alone would have given, and the fuzz target fuzz_json_simd
 * compares the two on every input it makes. */
#ifndef PARLEY_UTIL_JSON_SIMD_H
#define PARLEY_UTIL_JSON_SIMD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest text read here (bytes): the parser's buffers are sized for it
 * once and kept (about 12 bytes of the parser's per byte of text, per
 * thread that reads); longer texts (large tool arguments) go to jansson,
 * where the values built dominate anyway. */
#define JSON_SIMD_MAX_LEN (64 * 1024)
/* Deepest nesting read here; deeper texts go to jansson (whose own limit
 * is 2048, JSON_PARSER_MAX_DEPTH). */
#define JSON_SIMD_MAX_DEPTH 1024

/* params._meta objects a thread keeps for json_simd_load_rpc. */
#define JSON_SIMD_SHARED 4

/* The value of text[0..len) (a new reference), or NULL: the text is left
 * to jansson (see above; out of memory included). */
json_t *json_simd_load(const char *text, size_t len);

/* The same for a JSON-RPC message, but for one thing: a `params._meta`
 * object equal to one of the last JSON_SIMD_SHARED this thread built (the
 * same members in the same order, the same types and bytes) is that one,
 * shared: MCP 2026-07-28 clients send the same _meta (protocol version,
 * capabilities, identity) with every request. So the message is equal to
 * json_loadb's (json_equal), and its params._meta must never be changed. */
json_t *json_simd_load_rpc(const char *text, size_t len);

/* A JSON-RPC message read into its members, without the object around
 * them: when text[0..len) is an object each of whose members is named in
 * names[0..n) (n distinct names, at most JSON_SIMD_MEMBERS_MAX), each
 * given once, out[i] is the value of the member names[i] (a new
 * reference, built as json_simd_load_rpc builds it, params._meta shared),
 * NULL when absent, and the result is true. False, with out untouched,
 * when the text is left to jansson (as with json_simd_load), is not an
 * object, or holds another member or one twice: the caller then reads it
 * whole. So the members are those of json_loadb's object, which is never
 * built (bench/README.md, "The envelope read without its object"). */
#define JSON_SIMD_MEMBERS_MAX 8
bool json_simd_load_members(const char *text, size_t len, const char *const *names, size_t n,
                            json_t **out);

#ifdef __cplusplus
}
#endif

#endif
