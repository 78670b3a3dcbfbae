/* search: message search over the store, for the toolsets (no MCP here).
 * One request becomes one parameterised call of parley_search
 * (src/db/sql/search.sql), which returns the whole answer as JSON built by PostgreSQL:
 *
 *   {"results": [{chat_id, chat_title, id, topic_id, date, edit_date,
 *                 sender_id, sender_name, text, snippet, rank, media_kind,
 *                 has_link, kind, reply_to_id}, ...],
 *    "count": N, "limit": L, "offset": O,
 *    "mode": "fulltext" | "substring" | "fuzzy" | "regex" | "filter"}
 *
 * count is exact up to 1,000; past it count is 1000 and "countCapped" is
 * true. A full-text query that found few messages because of a word in few
 * (or none) may be answered by its near reading (src/db/sql/search_near.sql):
 * "corrections": [{from, to}], "notes": [sentence], and "near": true on
 * each result that does not match the query as written. While the word
 * forms asked for are being brought in, "formsPending": true and a
 * sentence in "notes".
 *
 * Query syntax is web-search syntax: words, "quoted phrases", OR, -word.
 * Text in scripts without spaces (CJK, Thai) is matched by substring;
 * fuzzy uses trigram word similarity; regex is case-insensitive POSIX.
 * Snippets mark matches with **. */
#ifndef PARLEY_ARCHIVE_SEARCH_H
#define PARLEY_ARCHIVE_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "db/pool.h"

#define ARCHIVE_SEARCH_MAX_CHATS 256
#define ARCHIVE_SEARCH_MAX_LIMIT 500

typedef enum {
    ARCHIVE_KIND_ANY = 0,
    ARCHIVE_KIND_LINKS,
    ARCHIVE_KIND_MEDIA,
    ARCHIVE_KIND_PHOTOS,
    ARCHIVE_KIND_VIDEOS,
    ARCHIVE_KIND_DOCUMENTS,
    ARCHIVE_KIND_FILES,
} archive_kind_t;

typedef struct archive_search_req_s {
    const char *query; /* NULL or "": no text condition */
    const char *regex; /* NULL: none */
    bool fuzzy;
    const int64_t *chat_ids; /* NULL: every chat */
    int nchats;
    bool has_topic;
    int64_t topic_id;
    bool has_sender;
    int64_t sender_id;
    const char *from_date; /* ISO 8601, NULL: open */
    const char *to_date;
    archive_kind_t kind;
    bool order_by_rank; /* else newest first */
    int limit;          /* 1..ARCHIVE_SEARCH_MAX_LIMIT */
    int offset;
} archive_search_req_t;

typedef struct archive_op_s archive_op_t;

/* The answer: status 0 with json (valid during the call), or a negative
 * code with error: UV_EINVAL for a bad argument the database rejected
 * (an invalid regex or date: the message says which), UV_EBUSY,
 * UV_ETIMEDOUT, UV_ECANCELED, UV_EIO. */
typedef void (*archive_json_cb)(void *data, int status, const char *json, const char *error);

/* Starts a search on pool. Returns 0 with *op (valid until the callback,
 * for archive_cancel), or a negative code (UV_EINVAL for arguments out of
 * range or a regex with a back-reference, see regex_guard.h; UV_EBUSY,
 * UV_ENOMEM) without calling back. */
int archive_search(pg_pool_t *pool, const archive_search_req_t *req, archive_json_cb cb, void *data,
                   archive_op_t **op);

/* Cancels the query on the server; the callback still runs (UV_ECANCELED). */
void archive_cancel(archive_op_t *op);

#endif
