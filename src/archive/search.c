/* search: message search through parley_search (see search.h). */
#include "archive/search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/regex_guard.h"
#include "util/buf.h"

#define NPARAMS 12

struct archive_op_s {
    pg_call_t *pc;
    archive_json_cb cb;
    void *data;
};

static const char *const kinds[] = {NULL,     "links",     "media", "photos",
                                    "videos", "documents", "files"};

static void op_done(void *data, int status, const char *value, const char *sqlstate,
                    const char *error)
{
    archive_op_t *op = data;
    if (status == 0 && value == NULL)
        status = UV_EIO;
    if (status != 0) {
        /* Invalid regular expression (2201B), bad datetime (22007, 22008):
         * the caller's argument. */
        if (strcmp(sqlstate, "2201B") == 0 || strncmp(sqlstate, "2200", 4) == 0)
            status = UV_EINVAL;
        error = error && error[0] ? error : uv_strerror(status);
    }
    op->cb(op->data, status, status == 0 ? value : NULL, status == 0 ? NULL : error);
    free(op);
}

int archive_search(pg_pool_t *pool, const archive_search_req_t *req, archive_json_cb cb, void *data,
                   archive_op_t **out)
{
    if (req->limit < 1 || req->limit > ARCHIVE_SEARCH_MAX_LIMIT || req->offset < 0 ||
        req->nchats < 0 || req->nchats > ARCHIVE_SEARCH_MAX_CHATS ||
        (unsigned)req->kind >= sizeof kinds / sizeof kinds[0] ||
        archive_regex_has_backref(req->regex, NULL))
        return UV_EINVAL;
    char *chats = NULL;
    if (req->chat_ids != NULL) {
        buf_t b;
        buf_init(&b, 64u * 1024);
        int rc = buf_append_str(&b, "{");
        for (int i = 0; rc == 0 && i < req->nchats; i++)
            rc = buf_printf(&b, "%s%lld", i ? "," : "", (long long)req->chat_ids[i]);
        if (rc == 0)
            rc = buf_append_str(&b, "}");
        size_t len;
        chats = rc == 0 ? buf_steal(&b, &len) : NULL;
        buf_free(&b);
        if (chats == NULL)
            return UV_ENOMEM;
    }
    archive_op_t *op = calloc(1, sizeof *op);
    if (op == NULL) {
        free(chats);
        return UV_ENOMEM;
    }
    op->cb = cb;
    op->data = data;
    char num[4][24];
    snprintf(num[0], sizeof num[0], "%lld", (long long)req->topic_id);
    snprintf(num[1], sizeof num[1], "%lld", (long long)req->sender_id);
    snprintf(num[2], sizeof num[2], "%d", req->limit);
    snprintf(num[3], sizeof num[3], "%d", req->offset);
    const char *p[NPARAMS] = {
        req->query && req->query[0] ? req->query : NULL,
        req->regex && req->regex[0] ? req->regex : NULL,
        req->fuzzy ? "true" : "false",
        chats,
        req->has_topic ? num[0] : NULL,
        req->has_sender ? num[1] : NULL,
        req->from_date,
        req->to_date,
        kinds[req->kind],
        req->order_by_rank ? "rank" : "time",
        num[2],
        num[3],
    };
    int rc = pg_pool_call(pool, "parley_search",
                          "SELECT parley_search($1::text, $2::text, $3::boolean, $4::bigint[], "
                          "$5::bigint, $6::bigint, $7::timestamptz, $8::timestamptz, $9::text, "
                          "$10::text, $11::integer, $12::integer)::text",
                          NPARAMS, p, op_done, op, &op->pc);
    free(chats);
    if (rc != 0) {
        free(op);
        return rc;
    }
    if (out)
        *out = op;
    return 0;
}

void archive_cancel(archive_op_t *op)
{
    pg_call_cancel(op->pc);
}
