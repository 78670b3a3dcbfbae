/* tdjson: TDLib's JSON interface (td_json_client.h) on the loop. The
 * library is loaded at run time with dlopen (the build does not link it)
 * and its four functions are all parley uses of it:
 *
 *   td_create_client_id   a new client (an account's session)
 *   td_send               a request, tagged with "@extra" (thread-safe)
 *   td_receive            the next answer or update of any client
 *   td_execute            the few requests TDLib answers synchronously
 *
 * One tdjson_t per process (td_receive serves every client of the
 * library): it owns one thread that calls td_receive in a loop, parses
 * each object and hands it to the loop through a bounded queue (a full
 * queue stops the thread until the loop drained it: TDLib keeps the rest).
 * On the loop each object goes to its client by "@client_id": an answer
 * (its "@extra" is one of the client's requests) to that request's
 * callback, anything else to the client's update callback.
 *
 * TDLib's rules this follows: td_receive from one thread only, its string
 * valid until the next call on that thread (parsed at once); answers
 * arrive out of order (matched by @extra); a client ends with "close" and
 * is gone once it reported authorizationStateClosed. The library is never
 * unloaded (TDLib keeps threads of its own). */
#ifndef PARLEY_UPSTREAM_TELEGRAM_USER_TDJSON_H
#define PARLEY_UPSTREAM_TELEGRAM_USER_TDJSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

/* Objects parsed and waiting for the loop; past it the receiving thread
 * waits. */
#define TDJSON_QUEUE_MAX 1024
/* How long the receiving thread blocks in one td_receive (seconds): the
 * longest a stop waits for it. */
#define TDJSON_RECEIVE_TIMEOUT_S 0.25
/* Requests one client may have unanswered; past it tdjson_send answers
 * UV_EBUSY. */
#define TDJSON_PENDING_MAX 4096
/* Default wait for an answer before its request fails with UV_ETIMEDOUT
 * (setting telegram_td_timeout_s). */
#define TDJSON_REQUEST_TIMEOUT_MS 60000
/* How long a close waits for authorizationStateClosed. */
#define TDJSON_CLOSE_TIMEOUT_MS 10000

/* Where deps/install.sh installs libtdjson.so. A bare name the dynamic
 * loader does not find (it looks in /usr/local/lib only for the sonames
 * ldconfig cached: libtdjson.so.1.8.67, not libtdjson.so) is tried here. */
#define TDJSON_INSTALL_DIR "/usr/local/lib"

typedef struct tdjson_s tdjson_t;
typedef struct tdjson_client_s tdjson_client_t;

/* An update (or an answer nobody waits for any more) of client c.
 * update is borrowed for the call. */
typedef void (*tdjson_update_cb)(tdjson_client_t *c, json_t *update, void *data);

/* The answer to a request: status 0 and the answer object, or a negative
 * code and the error object ({"@type": "error", "code", "message"}) or
 * NULL (UV_ETIMEDOUT: no answer in time; UV_ECANCELED: the client closed).
 * TDLib's codes map to 400 UV_EINVAL, 401 UV_EACCES, 404 UV_ENOENT, 429
 * UV_EAGAIN (tdjson_retry_after says how long), 500 UV_EIO, else
 * UV_EPROTO. reply is borrowed for the call. */
typedef void (*tdjson_reply_cb)(void *data, int status, json_t *reply);

/* Loads the library at path (a file, or a name dlopen looks up, else
 * TDJSON_INSTALL_DIR/name: the default "libtdjson.so") and starts the
 * receiving thread. TDLib's own log is turned down to errors
 * (setLogVerbosityLevel 1). Returns 0, or a negative code with err saying
 * what is missing. */
int tdjson_open(uv_loop_t *loop, const char *path, tdjson_t **out, char *err, size_t errcap);

/* A synchronous request (td_execute): a malloc'd answer, or NULL. Only for
 * TDLib's synchronous methods (getTextEntities, getOption "version",
 * setLogVerbosityLevel...). */
json_t *tdjson_execute(tdjson_t *td, json_t *request);

/* The library's TDLib version ("1.8.40") into out; "" when it does not
 * say. */
const char *tdjson_version(tdjson_t *td, char *out, size_t cap);

/* A new client. timeout_ms: the wait for each answer (0: the default).
 * Returns 0 or UV_ENOMEM. */
int tdjson_client_new(tdjson_t *td, uint32_t timeout_ms, tdjson_update_cb cb, void *data,
                      tdjson_client_t **out);

/* Sends request (stolen; its "@extra" is set here). cb runs exactly once,
 * later, unless this returns a negative code (UV_EBUSY: too many pending;
 * UV_ECANCELED: the client is closing; UV_ENOMEM). cb NULL: the answer is
 * not waited for. */
int tdjson_send(tdjson_client_t *c, json_t *request, tdjson_reply_cb cb, void *data);

/* Closes the client: sends "close", waits for authorizationStateClosed (at
 * most TDJSON_CLOSE_TIMEOUT_MS), fails what is pending with UV_ECANCELED,
 * then cb(data) and the client is freed. Updates stop before cb. */
void tdjson_client_close(tdjson_client_t *c, void (*cb)(void *data), void *data);

/* Like tdjson_client_close, but sends "logOut": the session ends on
 * Telegram's side too (a sign-in parley will not keep), then the client
 * closes (TDLib: authorizationStateLoggingOut, then Closed). */
void tdjson_client_log_out(tdjson_client_t *c, void (*cb)(void *data), void *data);

/* Requests of c still waiting for an answer. */
size_t tdjson_client_pending(const tdjson_client_t *c);

/* Stops the receiving thread (every client must be closed); cb(data) once
 * the thread ended and the loop's handles are closed. */
void tdjson_close(tdjson_t *td, void (*cb)(void *data), void *data);

/* Releases td after the loop has ended (NULL-safe). */
void tdjson_free(tdjson_t *td);

/* The seconds a 429 error says to wait ("Too Many Requests: retry after
 * 7"), at least 1; 0 when err is not a 429. */
long tdjson_retry_after(const json_t *err);

/* err's "message", or fallback. */
const char *tdjson_error_message(const json_t *err, const char *fallback);

#endif
