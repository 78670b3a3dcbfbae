/* jsonrpc: JSON-RPC 2.0 message text: error codes and builders for the
 * envelopes a server sends. Builders return malloc'd text (no framing) or
 * NULL on ENOMEM. */
#ifndef PARLEY_MCP_JSONRPC_H
#define PARLEY_MCP_JSONRPC_H

#include <jansson.h>
#include <stddef.h>

#include "util/buf.h"

#define JSONRPC_PARSE_ERROR      (-32700)
#define JSONRPC_INVALID_REQUEST  (-32600)
#define JSONRPC_METHOD_NOT_FOUND (-32601)
#define JSONRPC_INVALID_PARAMS   (-32602)
#define JSONRPC_INTERNAL_ERROR   (-32603)
/* Implementation-defined server errors. */
#define JSONRPC_SERVER_BUSY (-32000)
/* MCP: "Resource not found" (resources/read). */
#define MCP_ERROR_RESOURCE_NOT_FOUND (-32002)

/* Writes a response's head, {"jsonrpc":"2.0","id":ID,"MEMBER": (id NULL
 * means null), into b: the one writer of it, for a builder that writes the
 * member's value itself (mcp_call_finish_result_text). Nonzero when a
 * write failed. */
int jsonrpc_open_response(buf_t *b, const json_t *id, const char *member);
/* {"jsonrpc":"2.0","id":ID,"result":RESULT_TEXT} — result_text spliced as
 * is. id NULL means null. */
char *jsonrpc_result_text(const json_t *id, const char *result_text, size_t result_len,
                          size_t *len);
/* The same with a json_t result (serialised compactly). */
char *jsonrpc_result(const json_t *id, const json_t *result, size_t *len);
/* The same with members spliced in before the result object's closing
 * brace: tail is text of the form ,"k":v[,...] (its leading comma dropped
 * when the object is empty), such as mcp_envelope_complete_text's. result
 * must be an object that holds none of tail's keys. NULL on failure. */
char *jsonrpc_result_spliced(const json_t *id, const json_t *result, const char *tail, size_t *len);
/* {"jsonrpc":"2.0","id":ID,"error":{"code":C,"message":M[,"data":D]}} */
char *jsonrpc_error(const json_t *id, int code, const char *message, const json_t *data,
                    size_t *len);
/* {"jsonrpc":"2.0","method":M,"params":P} */
char *jsonrpc_notification(const char *method, const json_t *params, size_t *len);

/* The members of a message the server reads, each NULL when absent or
 * when m is not an object; borrowed from m. */
typedef struct jsonrpc_members_s {
    json_t *jsonrpc, *id, *method, *params, *result, *error;
} jsonrpc_members_t;
/* Fills *out in one pass over m's members (json_members). */
void jsonrpc_members(const json_t *m, jsonrpc_members_t *out);

/* Parses one message (any JSON value; NUL allowed inside strings): read
 * by json_simd_load_rpc (util/json_simd.h) when it takes the text on, else
 * by jsonrpc_parse_jansson; the answer is jansson's either way (equal by
 * json_equal). Its params._meta may be shared with other messages: it is
 * read, never changed. An
 * integer too large for 64 bits does not make the message unreadable (its
 * request would then get no answer it can be matched to): such a message
 * is read again with every number as a real, and the integral ones within
 * +-2^53 become integers again, so the out-of-range argument is reported
 * by name. A key given twice in one object is a syntax error. NULL with je
 * on a syntax error. */
json_t *jsonrpc_parse(const char *msg, size_t len, json_error_t *je);
/* The same with jansson alone (what json_simd_load leaves; the benchmark's
 * reference, bench/parse). */
json_t *jsonrpc_parse_jansson(const char *msg, size_t len, json_error_t *je);

/* A message read for dispatch: the members the server reads, each a new
 * reference (NULL when absent), and the message itself only when it is
 * not an object (every member NULL then). */
typedef struct jsonrpc_msg_s {
    jsonrpc_members_t mm;
    json_t *other;
} jsonrpc_msg_t;

/* Reads one message as jsonrpc_parse does, into *out: an object whose
 * members are only those of jsonrpc_members_t has its members built and
 * no object around them (json_simd_load_members); any other text is read
 * whole by jsonrpc_parse and its members taken from the tree. The same
 * members either way (json_equal), the same syntax errors. Returns 0, or
 * -1 with je on a syntax error (out left empty). Release with
 * jsonrpc_msg_release. */
int jsonrpc_read(const char *msg, size_t len, jsonrpc_msg_t *out, json_error_t *je);
/* Drops what jsonrpc_read gave m (m itself is the caller's). */
void jsonrpc_msg_release(jsonrpc_msg_t *m);

/* "Parse error: ... at byte N" for a failed jsonrpc_parse, into out. The
 * parser's text may quote the input's bytes (an invalid escape, half a
 * UTF-8 sequence): those become '?', so the error itself is always valid
 * JSON text and the session survives the bad message. */
void jsonrpc_parse_error(const json_error_t *je, char *out, size_t cap);

#endif
