/* search_forms: brings the archive search to the configured word forms
 * (search_languages) while parleyd serves. The store keeps each message's
 * words and their forms in messages.forms (migration 022), filled by a
 * trigger for every row written; when the list asked for is new, the rows
 * written before are filled in batches (search_fill_batch rows a
 * statement, in key order, the cursor kept in the database so that a
 * restart goes on where it stopped), then the column's GIN index is built
 * with CREATE INDEX CONCURRENTLY, then the search switches over. Until
 * then it matches words as written. Progress is logged every
 * SEARCH_FORMS_PROGRESS_MS.
 *
 * The work runs on a connection of its own (a one-connection pool), so
 * that the index build, which takes minutes on a large archive and cannot
 * run in a pipeline or a transaction, holds none of the pools' sessions;
 * the progress of the build is read through the read-write pool. Several
 * daemons on one database share the work: the fill's cursor is one row
 * (each batch locks it), and the index is built by the daemon holding the
 * session advisory lock SEARCH_FORMS_LOCK_KEY. A failure (a lost
 * connection, a cancelled build) is logged and the step tried again after
 * SEARCH_FORMS_RETRY_MS; only a list naming an unknown configuration ends
 * the work with an error.
 *
 * Then it keeps the vocabulary the fuzzy search reads (search_words,
 * migration 024): the words of the rows stored before it are put in, in
 * batches of search_fill_batch rows (a cursor in the database, as above),
 * and the words that writers append to search_words_new are merged into it
 * every SEARCH_WORDS_MERGE_MS, until the builder is stopped. */
#ifndef PARLEY_ARCHIVE_SEARCH_FORMS_H
#define PARLEY_ARCHIVE_SEARCH_FORMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "db/conninfo.h"
#include "db/pool.h"

#define SEARCH_FORMS_PROGRESS_MS 10000
#define SEARCH_FORMS_RETRY_MS    30000
/* Steps in a row that may meet the writers of messages (another daemon's
 * import or index build: parley_messages_hold_writers) before a fail_fast
 * builder gives up: ten minutes at SEARCH_FORMS_RETRY_MS. */
#define SEARCH_FORMS_BUSY_TRIES 20
/* The vocabulary's new words are merged every SEARCH_WORDS_MERGE_MS, at
 * most SEARCH_WORDS_MERGE_BATCH rows a statement (again at once while a
 * statement takes a full batch). */
#define SEARCH_WORDS_MERGE_MS    2000
#define SEARCH_WORDS_MERGE_BATCH 50000
/* The longest a statement of the builder may run: the index build on a
 * very large archive. */
#define SEARCH_FORMS_BUILD_TIMEOUT_MS (12u * 3600u * 1000u)
#define SEARCH_FORMS_LOCK_KEY         "parley_search_forms"
#define SEARCH_FORMS_ERR_MAX          512

typedef struct search_forms_s search_forms_t;

/* Called once when the search uses the list (status 0; the vocabulary
 * work goes on after it), or when the list
 * cannot be used (UV_EINVAL: an unknown configuration; UV_EIO: a failure
 * under search_forms_fail_fast; the reason in search_forms_error). Not
 * called after search_forms_stop. */
typedef void (*search_forms_cb)(search_forms_t *s, int status);

/* Starts bringing the search to languages (comma-separated text search
 * configurations; "" for words as written only) on a connection of its
 * own to conninfo; rw is the read-write pool for progress reads. Returns
 * 0 and *out, or a negative code with err. */
int search_forms_start(uv_loop_t *loop, const pg_conninfo_t *conninfo, pg_pool_t *rw,
                       const char *languages, int fill_batch, uint32_t connect_timeout_ms,
                       search_forms_cb cb, void *data, search_forms_t **out, char *err,
                       size_t errcap);

/* Makes a failed statement before the list is in use end the work (the
 * callback with UV_EIO, the reason in search_forms_error) instead of
 * trying again every SEARCH_FORMS_RETRY_MS: for a command that must end
 * (parleyd import), where serve would wait. The one failure still tried
 * again: the step that changes the list gave up waiting for the writers
 * of messages (lock_not_available; they end). Call right after start. */
void search_forms_fail_fast(search_forms_t *s);

/* Stops: a statement in flight is cancelled (an unfinished index build is
 * left invalid and built again at the next start). */
void search_forms_stop(search_forms_t *s);
/* True once stopped (or done) and every handle and the connection are
 * closed; then search_forms_free. */
__attribute__((warn_unused_result)) bool search_forms_idle(const search_forms_t *s);
void search_forms_free(search_forms_t *s);

const char *search_forms_error(const search_forms_t *s);
void *search_forms_data(const search_forms_t *s);

#endif
