/* tg_import: streaming import of Telegram Desktop exports (see
 * tg_import.h). The reader parses and maps a chunk on the thread pool
 * while the events of the chunk before it run against the database, in
 * order: at most two chunks and their rows are held, and the importer's
 * CPU work runs beside PostgreSQL's.
 *
 * Each chat is one transaction on a connection of its own (a pool of one,
 * whose sessions are read-only by default: a statement that would land in
 * a new session after a lost connection fails instead of committing half a
 * chat): BEGIN READ WRITE and parley_tg_import_begin, the COPYs of its
 * rows, parley_tg_import_chat and COMMIT. Then its files are copied into
 * the media store on the main pool. */
#include "import/tg_import.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import/tg_import_media.h"
#include "import/tg_map.h"
#include "import/tg_reader.h"
#include "util/log.h"

#define IMPORT_TAG "import"

typedef enum {
    IMP_RUNNING = 0,
    IMP_CLEANUP, /* rolling back, closing the chat connection; then done */
} imp_state_t;

#define COPY_ROWS_DIRECT "COPY messages (" TG_MAP_MESSAGE_COLUMNS ") FROM STDIN"
#define COPY_ROWS_STAGED "COPY import_rows (" TG_MAP_MESSAGE_COLUMNS ") FROM STDIN"
#define COPY_MEDIA       "COPY import_media (" TG_MAP_MEDIA_COLUMNS ") FROM STDIN"
/* Connection set-up and ROLLBACK of the chat connection. */
#define TX_CONNECT_TIMEOUT_MS  30000
#define TX_ROLLBACK_TIMEOUT_MS 10000

struct tg_import_s {
    uv_loop_t *loop;
    pg_pool_t *pool;
    pg_pool_t *tx;    /* the chat transactions' connection */
    bool in_tx;       /* a chat's transaction is open */
    bool tx_closing;  /* waiting for tx to close before finishing */
    bool chat_direct; /* the open chat's ordered rows go into messages */
    int event_part;   /* ROWS: 0 rows, 1 media next, 2 media sent */
    imp_state_t state;
    char path[4096];
    char export_dir[4096];
    char media_root[4096];
    int64_t media_chat;
    json_t *media_batch; /* [{message_id, ordinal, export_path}] -> results */
    uv_work_t media_work;
    char media_chat_buf[32];
    char tz[16];
    int fd;
    uint64_t size;
    tg_reader_t *reader;
    uv_work_t work;
    /* Two event buffers: one runs (cur, while executing), the reader fills
     * the other (while reading), or it waits (ready). */
    tg_event_t events[2][TG_READER_MAX_EVENTS];
    int nevents[2];
    int step_rc[2];
    int cur, next_event;
    bool reading, ready, executing, finishing;
    int read_buf;    /* the buffer a running step fills */
    int read_failed; /* a step failed: its code, once the events before it ran */
    uint64_t read_offset, read_messages; /* the reader's, after its last step */
    pg_query_t q;
    pg_stmt_t stmt[2];
    const char *params[5];
    char param_buf[3][32];
    char *param_json;
    tg_import_stats_t stats;
    uint64_t notes_logged; /* the reader's notes warned */
    json_t *imported;      /* names of the chats imported completely */
    int status;
    char chat_name[64];  /* of the chat being imported, for the progress lines */
    importer_run_t *run; /* the owner's side: stop, error, progress (by bytes) */
};

static void step_start(tg_import_t *imp);
static void events_next(tg_import_t *imp);

/* ---- helpers ------------------------------------------------------------- */

static void progress(tg_import_t *imp, bool final)
{
    import_progress_report(&imp->run->progress, imp->read_offset, imp->size, imp->read_messages,
                           final);
}

/* What the import waits on from now, for the progress lines: what (a
 * format with one %s) and the name of the chat being imported. */
static void wait_on(tg_import_t *imp, const char *what)
{
    char line[IMPORT_PROGRESS_WAIT_MAX];
    snprintf(line, sizeof line, what, imp->chat_name);
    import_progress_waiting(&imp->run->progress, line);
}

static void tx_closed(pg_pool_t *pool)
{
    tg_import_t *imp = pg_pool_get_data(pool);
    imp->tx = NULL;
    importer__finished(imp->run, imp->status);
}

/* Ends the import once no reader step runs: closes the chat connection,
 * then calls back. */
static void finish(tg_import_t *imp, int status)
{
    imp->state = IMP_CLEANUP;
    imp->status = status;
    imp->finishing = true;
    if (imp->reading)
        return; /* step_after comes back here */
    if (imp->tx_closing)
        return;
    if (imp->fd >= 0) {
        close(imp->fd);
        imp->fd = -1;
    }
    if (status == 0)
        progress(imp, true);
    else
        import_progress_abort(&imp->run->progress);
    if (imp->tx) {
        imp->tx_closing = true;
        pg_pool_close(imp->tx, tx_closed);
        return;
    }
    importer__finished(imp->run, status);
}

static void fail_later_cleanup(tg_import_t *imp, int status);

/* Submits imp->stmt[0..nstmts) on pool as imp->q. */
static int queue_stmts(tg_import_t *imp, pg_pool_t *pool, int nstmts, uint32_t timeout_ms,
                       pg_query_cb cb)
{
    memset(&imp->q, 0, sizeof imp->q);
    imp->q.stmts = imp->stmt;
    imp->q.nstmts = nstmts;
    imp->q.timeout_ms = timeout_ms;
    imp->q.cb = cb;
    imp->q.data = imp;
    return pg_pool_submit(pool, &imp->q);
}

static void submit_stmts(tg_import_t *imp, pg_pool_t *pool, int nstmts, uint32_t timeout_ms,
                         pg_query_cb cb)
{
    int rc = queue_stmts(imp, pool, nstmts, timeout_ms, cb);
    if (rc != 0) {
        snprintf(imp->run->error, sizeof imp->run->error, "%s: database: %s", imp->path,
                 uv_strerror(rc));
        fail_later_cleanup(imp, rc);
    }
}

/* One statement with imp->params on pool. */
static void submit_on(tg_import_t *imp, pg_pool_t *pool, const char *sql, int nparams,
                      pg_query_cb cb)
{
    memset(imp->stmt, 0, sizeof imp->stmt);
    imp->stmt[0].sql = sql;
    imp->stmt[0].nparams = nparams;
    imp->stmt[0].params = imp->params;
    submit_stmts(imp, pool, 1, TG_IMPORT_QUERY_TIMEOUT_MS, cb);
}

static void submit(tg_import_t *imp, const char *sql, int nparams, pg_query_cb cb)
{
    submit_on(imp, imp->pool, sql, nparams, cb);
}

/* ---- errors and cleanup --------------------------------------------------- */

static void rollback_done(pg_query_t *q, int status)
{
    tg_import_t *imp = q->data;
    if (status != 0)
        log_warn(IMPORT_TAG,
                 "rollback of the chat being imported: %s (the connection is "
                 "closed, which rolls it back too)",
                 q->error);
    pg_query_release(q);
    finish(imp, imp->status);
}

static void fail_later_cleanup(tg_import_t *imp, int status)
{
    if (imp->state != IMP_RUNNING)
        return; /* already failing */
    imp->status = status ? status : UV_EINVAL;
    imp->state = IMP_CLEANUP;
    size_t n = json_array_size(imp->imported);
    if (n > 0) {
        size_t len = strlen(imp->run->error);
        snprintf(imp->run->error + len, sizeof imp->run->error - len,
                 "; %zu chat(s) had been imported completely before it, the rest is unchanged", n);
    } else {
        size_t len = strlen(imp->run->error);
        snprintf(imp->run->error + len, sizeof imp->run->error - len, "; the store is unchanged");
    }
    if (!imp->in_tx || imp->tx == NULL) {
        finish(imp, imp->status);
        return;
    }
    imp->in_tx = false;
    memset(imp->stmt, 0, sizeof imp->stmt);
    imp->stmt[0].sql = "ROLLBACK";
    if (queue_stmts(imp, imp->tx, 1, TX_ROLLBACK_TIMEOUT_MS, rollback_done) != 0)
        finish(imp, imp->status);
}

/* ---- media files (tg_import_media.h) ------------------------------------------ */

static void media_next(tg_import_t *imp);

static void media_work(uv_work_t *w)
{
    tg_import_t *imp = w->data;
    tg_import_media_copy(imp->media_batch, imp->export_dir, imp->media_root, imp->path);
}

static void media_saved(pg_query_t *q, int status)
{
    tg_import_t *imp = q->data;
    pg_query_release(q);
    free(imp->param_json);
    imp->param_json = NULL;
    if (status != 0) {
        snprintf(imp->run->error, sizeof imp->run->error, "%s: database: %s", imp->path, q->error);
        fail_later_cleanup(imp, status);
        return;
    }
    tg_import_media_count(imp->media_batch, &imp->stats);
    json_decref(imp->media_batch);
    imp->media_batch = NULL;
    media_next(imp);
}

static void media_after(uv_work_t *w, int status)
{
    tg_import_t *imp = w->data;
    if (status != 0) {
        snprintf(imp->run->error, sizeof imp->run->error, "%s: %s", imp->path, uv_strerror(status));
        fail_later_cleanup(imp, status);
        return;
    }
    imp->param_json = json_dumps(imp->media_batch, JSON_COMPACT);
    imp->params[0] = imp->media_chat_buf;
    imp->params[1] = imp->param_json ? imp->param_json : "[]";
    submit(imp, TG_IMPORT_MEDIA_SAVE_SQL, 2, media_saved);
}

static void media_listed(pg_query_t *q, int status)
{
    tg_import_t *imp = q->data;
    if (status != 0 || q->results[0] == NULL) {
        snprintf(imp->run->error, sizeof imp->run->error, "%s: database: %s", imp->path, q->error);
        pg_query_release(q);
        fail_later_cleanup(imp, status ? status : UV_EIO);
        return;
    }
    json_error_t je;
    imp->media_batch = json_loads(PQgetvalue(q->results[0], 0, 0), 0, &je);
    pg_query_release(q);
    if (json_array_size(imp->media_batch) == 0) {
        json_decref(imp->media_batch);
        imp->media_batch = NULL;
        events_next(imp);
        return;
    }
    imp->media_work.data = imp;
    int rc = uv_queue_work(imp->loop, &imp->media_work, media_work, media_after);
    if (rc != 0) {
        snprintf(imp->run->error, sizeof imp->run->error, "%s: %s", imp->path, uv_strerror(rc));
        fail_later_cleanup(imp, rc);
    }
}

/* Copies the next batch of the chat's files that are still to be looked
 * at; back to the events when none is left. */
static void media_next(tg_import_t *imp)
{
    wait_on(imp, "the files of chat \"%s\" (copied into the media store)");
    snprintf(imp->media_chat_buf, sizeof imp->media_chat_buf, "%lld", (long long)imp->media_chat);
    imp->params[0] = imp->media_chat_buf;
    snprintf(imp->param_buf[2], sizeof imp->param_buf[2], "%d", TG_IMPORT_MEDIA_BATCH);
    imp->params[1] = imp->param_buf[2];
    submit(imp, TG_IMPORT_MEDIA_LIST_SQL, 2, media_listed);
}

/* ---- events ---------------------------------------------------------------- */

static void events_done(tg_import_t *imp);

static void query_failed(tg_import_t *imp, pg_query_t *q, int status)
{
    snprintf(imp->run->error, sizeof imp->run->error, "%s: database: %s", imp->path,
             q->error[0] ? q->error : uv_strerror(status));
    pg_query_release(q);
    free(imp->param_json);
    imp->param_json = NULL;
    fail_later_cleanup(imp, status);
}

static void event_done(pg_query_t *q, int status)
{
    tg_import_t *imp = q->data;
    tg_event_t *e = &imp->events[imp->cur][imp->next_event - 1];
    if (status != 0) {
        query_failed(imp, q, status);
        return;
    }
    if (e->kind == TG_EV_CHAT_BEGIN) {
        PGresult *r = q->results[1];
        imp->chat_direct = r && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    } else if (e->kind == TG_EV_ROWS && imp->event_part == 0 && e->media.len > 0) {
        /* The rows are in: now the event's files. */
        pg_query_release(q);
        imp->event_part = 1;
        imp->next_event--;
        events_next(imp);
        return;
    } else if (e->kind == TG_EV_ROWS) {
        imp->event_part = 0;
    } else if (e->kind == TG_EV_CHAT_END && q->results[0] && PQntuples(q->results[0]) == 1) {
        imp->in_tx = false; /* committed */
        json_error_t je;
        json_t *res = json_loads(PQgetvalue(q->results[0], 0, 0), 0, &je);
        imp->stats.chats++;
        imp->stats.messages += (uint64_t)json_integer_value(json_object_get(res, "messages"));
        imp->stats.written += (uint64_t)json_integer_value(json_object_get(res, "written"));
        const char *name = json_string_value(json_object_get(e->json, "name"));
        json_array_append_new(imp->imported, json_string(name ? name : "(unnamed)"));
        if (!imp->run->progress.tty)
            log_info(IMPORT_TAG, "chat %s (%lld): %lld messages, %lld new or changed",
                     name ? name : "(unnamed)",
                     (long long)json_integer_value(json_object_get(res, "chat_id")),
                     (long long)json_integer_value(json_object_get(res, "messages")),
                     (long long)json_integer_value(json_object_get(res, "written")));
        imp->media_chat = json_integer_value(json_object_get(res, "chat_id"));
        /* An id given more than once: its other copies were left out. */
        json_int_t dups = json_integer_value(json_object_get(res, "duplicates"));
        if (dups > 0) {
            size_t i;
            json_t *d;
            json_array_foreach(json_object_get(res, "duplicate_ids"), i, d)
                log_warn(IMPORT_TAG,
                         "%s: chat %s: message id %lld is given more than once; the copy "
                         "edited last was kept, the others left out",
                         imp->path, name ? name : "(unnamed)", (long long)json_integer_value(d));
            if (json_array_size(json_object_get(res, "duplicate_ids")) == 20)
                log_warn(IMPORT_TAG, "%s: chat %s: more copies left out; the summary counts them",
                         imp->path, name ? name : "(unnamed)");
            imp->stats.duplicates += (uint64_t)dups;
            imp->stats.skipped += (uint64_t)dups;
        }
        json_decref(res);
        pg_query_release(q);
        free(imp->param_json);
        imp->param_json = NULL;
        media_next(imp);
        return;
    } else if (e->kind == TG_EV_CONTACTS && q->results[0] && PQntuples(q->results[0]) == 1) {
        imp->stats.contacts += strtoull(PQgetvalue(q->results[0], 0, 0), NULL, 10);
    }
    pg_query_release(q);
    free(imp->param_json);
    imp->param_json = NULL;
    events_next(imp);
}

/* A COPY of data on the chat connection. */
static void submit_copy(tg_import_t *imp, const char *sql, const buf_t *data)
{
    memset(imp->stmt, 0, sizeof imp->stmt);
    imp->stmt[0].sql = sql;
    imp->stmt[0].copy_data = data->data;
    imp->stmt[0].copy_len = data->len;
    submit_stmts(imp, imp->tx, 1, TG_IMPORT_QUERY_TIMEOUT_MS, event_done);
}

/* Statements on the chat connection, run as one pipeline: sql0 (without
 * parameters), then sql1 with imp->params. */
static void submit_tx(tg_import_t *imp, const char *sql0, const char *sql1, int nparams,
                      bool params_first)
{
    memset(imp->stmt, 0, sizeof imp->stmt);
    imp->stmt[0].sql = sql0;
    imp->stmt[1].sql = sql1;
    pg_stmt_t *p = &imp->stmt[params_first ? 0 : 1];
    p->nparams = nparams;
    p->params = imp->params;
    submit_stmts(imp, imp->tx, 2, TG_IMPORT_QUERY_TIMEOUT_MS, event_done);
}

static void events_next(tg_import_t *imp)
{
    if (imp->state != IMP_RUNNING)
        return;
    while (imp->next_event < imp->nevents[imp->cur]) {
        tg_event_t *e = &imp->events[imp->cur][imp->next_event++];
        switch (e->kind) {
        case TG_EV_CHAT_BEGIN: {
            const char *name = json_string_value(json_object_get(e->json, "name"));
            snprintf(imp->chat_name, sizeof imp->chat_name, "%s", name ? name : "(unnamed)");
            wait_on(imp, "the database: opening chat \"%s\"");
            imp->chat_direct = false;
            imp->param_json = json_dumps(e->json, JSON_COMPACT);
            snprintf(imp->param_buf[0], sizeof imp->param_buf[0], "%lld", (long long)e->chat_id);
            imp->params[0] = imp->param_json ? imp->param_json : "{}";
            imp->params[1] = e->left ? "true" : "false";
            imp->params[2] = e->chat_known ? imp->param_buf[0] : NULL;
            imp->in_tx = true;
            submit_tx(imp, "BEGIN READ WRITE",
                      "SELECT parley_tg_import_begin($1::jsonb, $2::boolean, $3::bigint)", 3,
                      false);
            return;
        }
        case TG_EV_ROWS:
            if (imp->event_part == 1) {
                imp->event_part = 2;
                wait_on(imp, "the database: loading file records of chat \"%s\"");
                submit_copy(imp, COPY_MEDIA, &e->media);
                return;
            }
            if (e->rows.len == 0)
                continue;
            wait_on(imp, "the database: loading messages of chat \"%s\"");
            submit_copy(imp, e->ordered && imp->chat_direct ? COPY_ROWS_DIRECT : COPY_ROWS_STAGED,
                        &e->rows);
            return;
        case TG_EV_CHAT_END: {
            snprintf(imp->param_buf[0], sizeof imp->param_buf[0], "%lld", (long long)e->chat_id);
            imp->param_json = json_dumps(e->json, JSON_COMPACT);
            imp->params[0] = imp->param_json ? imp->param_json : "{}";
            imp->params[1] = e->left ? "true" : "false";
            imp->params[2] = imp->chat_direct ? "true" : "false";
            imp->params[3] = e->chat_known ? imp->param_buf[0] : NULL;
            wait_on(imp, imp->chat_direct
                             ? "the database: completing chat \"%s\" (senders, files, topics)"
                             : "the database: merging the messages of chat \"%s\" into the "
                               "store");
            submit_tx(imp,
                      "SELECT parley_tg_import_chat($1::jsonb, $2::boolean, $3::boolean, "
                      "$4::bigint)::text",
                      "COMMIT", 4, true);
            return;
        }
        case TG_EV_PERSONAL:
            if (!json_is_object(e->json))
                continue;
            imp->param_json = json_dumps(e->json, JSON_COMPACT);
            imp->params[0] = imp->param_json ? imp->param_json : "{}";
            import_progress_waiting(&imp->run->progress, "the database: the account's own user");
            submit(imp, "SELECT parley_tg_import_self($1::jsonb)", 1, event_done);
            return;
        case TG_EV_CONTACTS:
            if (!json_is_array(e->json))
                continue;
            imp->param_json = json_dumps(e->json, JSON_COMPACT);
            imp->params[0] = imp->param_json ? imp->param_json : "[]";
            import_progress_waiting(&imp->run->progress, "the database: contacts");
            submit(imp, "SELECT parley_tg_import_contacts($1::jsonb)", 1, event_done);
            return;
        }
    }
    events_done(imp);
}

/* ---- reader steps ----------------------------------------------------------- */

static void step_start(tg_import_t *imp);

static void step_work(uv_work_t *w)
{
    tg_import_t *imp = w->data;
    int b = imp->read_buf;
    imp->step_rc[b] = tg_reader_step(imp->reader, imp->events[b], &imp->nevents[b]);
}

/* Runs the events of the step that waits, and starts reading the next. */
static void run_ready(tg_import_t *imp)
{
    imp->cur = 1 - imp->cur;
    imp->ready = false;
    imp->executing = true;
    imp->next_event = 0;
    imp->event_part = 0;
    if (imp->step_rc[imp->cur] == 0 && !importer__stopping(imp->run))
        step_start(imp);
    events_next(imp);
}

/* The events of a step ran (or the import is failing). */
static void events_done(tg_import_t *imp)
{
    tg_events_free(imp->events[imp->cur], imp->nevents[imp->cur]);
    imp->nevents[imp->cur] = 0;
    imp->executing = false;
    if (imp->read_failed) {
        fail_later_cleanup(imp, imp->read_failed);
        return;
    }
    if (imp->step_rc[imp->cur] == 1) {
        finish(imp, 0);
        return;
    }
    progress(imp, false);
    if (importer__stopping(imp->run)) {
        snprintf(imp->run->error, sizeof imp->run->error, "%s: interrupted", imp->path);
        fail_later_cleanup(imp, UV_ECANCELED);
        return;
    }
    import_progress_waiting(&imp->run->progress, "reading the export");
    if (imp->ready)
        run_ready(imp);
    else if (!imp->reading)
        step_start(imp);
}

static void step_after(uv_work_t *w, int status)
{
    tg_import_t *imp = w->data;
    int b = imp->read_buf;
    imp->reading = false;
    imp->read_offset = tg_reader_offset(imp->reader);
    imp->read_messages = tg_reader_messages(imp->reader);
    for (uint64_t n = tg_reader_notes(imp->reader); imp->notes_logged < n; imp->notes_logged++) {
        const char *note = tg_reader_note(imp->reader, imp->notes_logged);
        if (note)
            log_warn(IMPORT_TAG, "%s: %s", imp->path, note);
        else if (imp->notes_logged == TG_READER_NOTES_MAX)
            log_warn(IMPORT_TAG, "%s: more messages left out or repaired; the summary counts them",
                     imp->path);
    }
    imp->stats.skipped = tg_reader_skipped(imp->reader) + imp->stats.duplicates;
    imp->stats.repaired = tg_reader_repaired(imp->reader);
    if (imp->state != IMP_RUNNING) {
        /* The import is failing: drop what was read and finish. */
        tg_events_free(imp->events[b], imp->nevents[b]);
        imp->nevents[b] = 0;
        if (imp->finishing)
            finish(imp, imp->status);
        return;
    }
    int rc = status != 0 ? status : imp->step_rc[b] < 0 ? imp->step_rc[b] : 0;
    if (rc != 0) {
        if (status != 0)
            snprintf(imp->run->error, sizeof imp->run->error, "%s: %s", imp->path,
                     uv_strerror(status));
        else
            snprintf(imp->run->error, sizeof imp->run->error, "%s: %s", imp->path,
                     tg_reader_error(imp->reader));
        /* The events before the error belong to a chat that will not be
         * completed: drop them. */
        tg_events_free(imp->events[b], imp->nevents[b]);
        imp->nevents[b] = 0;
        if (imp->executing)
            imp->read_failed = rc; /* once the running events are done */
        else
            fail_later_cleanup(imp, rc);
        return;
    }
    imp->ready = true;
    if (!imp->executing)
        run_ready(imp);
}

static void step_start(tg_import_t *imp)
{
    imp->reading = true;
    imp->read_buf = 1 - imp->cur;
    imp->work.data = imp;
    int rc = uv_queue_work(imp->loop, &imp->work, step_work, step_after);
    if (rc != 0) {
        imp->reading = false;
        snprintf(imp->run->error, sizeof imp->run->error, "%s: %s", imp->path, uv_strerror(rc));
        if (imp->executing)
            imp->read_failed = rc;
        else
            fail_later_cleanup(imp, rc);
    }
}

/* ---- the source (importer.h) --------------------------------------------- */

/* Checks env->path (a result.json, or a folder holding one) and env->tz (a
 * TZ offset such as "+03:00" for exports without date_unixtime), opens the
 * file and starts. env->pool runs the statements outside the chats'
 * transactions; the transactions get a connection of their own to
 * env->conninfo (the same database). The files of each chat found in the
 * export folder are copied into the media store DATA_DIR/media (see
 * media_store.h) after the chat is imported. */
static int source_start(const importer_env_t *env, importer_run_t *run, void **impl, char *err,
                        size_t errcap)
{
    const char *path = env->path, *tz = env->tz;
    char tzn[16];
    if (!tg_map_parse_tz(tz, tzn, sizeof tzn)) {
        snprintf(err, errcap, "--tz '%s' is not a UTC offset (e.g. +03:00, -05:00, UTC)", tz);
        return UV_EINVAL;
    }
    char file[4096 - 16];
    struct stat st;
    /* Start-up checks on one path: bounded, before any work. */
    if (stat(path, &st) != 0) {
        snprintf(err, errcap, "%s: %s", path, strerror(errno));
        return -errno;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(file, sizeof file, "%s/result.json", path);
        if (stat(file, &st) != 0) {
            snprintf(err, errcap,
                     "%s: the folder has no result.json (export the chat history as JSON in "
                     "Telegram Desktop, then pass the folder or its result.json)",
                     path);
            return UV_ENOENT;
        }
    } else {
        snprintf(file, sizeof file, "%s", path);
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errcap, "%s: not a regular file", file);
        return UV_EINVAL;
    }
    /* O_NONBLOCK: a FIFO put in its place since the stat opens at once
     * (and fstat refuses it) instead of waiting for a writer; the
     * descriptor checked is the one read. */
    int fd = open(file, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errcap, "%s: %s", file, strerror(e));
        return -e;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(err, errcap, "%s: not a regular file", file);
        return UV_EINVAL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    tg_import_t *imp = calloc(1, sizeof *imp);
    if (imp == NULL) {
        close(fd);
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    *impl = imp;
    imp->run = run;
    imp->loop = env->loop;
    imp->pool = env->pool;
    imp->fd = fd;
    imp->size = (uint64_t)st.st_size;
    snprintf(imp->path, sizeof imp->path, "%s", file);
    snprintf(imp->export_dir, sizeof imp->export_dir, "%s", file);
    char *slash = strrchr(imp->export_dir, '/');
    if (slash == NULL)
        snprintf(imp->export_dir, sizeof imp->export_dir, ".");
    else if (slash == imp->export_dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    snprintf(imp->media_root, sizeof imp->media_root, "%s/media", env->data_dir);
    snprintf(imp->tz, sizeof imp->tz, "%s", tzn);
    imp->imported = json_array();
    import_progress_init(&run->progress, env->loop, IMPORT_TAG, "bytes", env->progress,
                         env->progress_ms);
    imp->state = IMP_RUNNING;
    imp->cur = 1; /* the first step fills buffer 0 */
    pg_pool_config_t pc = {
        .name = "db-import",
        .size = 1,
        .queue_max = 4,
        .query_timeout_ms = TG_IMPORT_QUERY_TIMEOUT_MS,
        .connect_timeout_ms = TX_CONNECT_TIMEOUT_MS,
        .read_only = true, /* only BEGIN READ WRITE writes */
        .keep_transactions = true,
    };
    imp->reader = tg_reader_new(fd, tg_map_tz_seconds(tzn));
    if (imp->reader == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    int rc = pg_pool_new(env->loop, &pc, env->conninfo, &imp->tx, err, errcap);
    if (rc != 0)
        return rc;
    pg_pool_set_data(imp->tx, imp);
    log_info(IMPORT_TAG, "importing %s (%llu bytes)", imp->path, (unsigned long long)imp->size);
    step_start(imp);
    return 0;
}

static int source_check(const importer_env_t *env, char *err, size_t errcap)
{
    char tzn[16];
    if (tg_map_parse_tz(env->tz, tzn, sizeof tzn))
        return 0;
    snprintf(err, errcap, "tz: '%s' is not a UTC offset (e.g. +03:00, -05:00, UTC)", env->tz);
    return UV_EINVAL;
}

static void source_summary(const void *impl, char *out, size_t cap, bool *changed)
{
    const tg_import_t *imp = impl;
    const tg_import_stats_t *st = &imp->stats;
    *changed = st->written > 0 || st->files_stored > 0;
    snprintf(out, cap,
             "imported %llu chat%s, %llu messages (%llu new or changed), %llu contacts, %llu files "
             "stored (%llu not in the export, %llu refused); %llu message%s left out, %llu "
             "repaired (see the "
             "warnings)",
             (unsigned long long)st->chats, st->chats == 1 ? "" : "s",
             (unsigned long long)st->messages, (unsigned long long)st->written,
             (unsigned long long)st->contacts, (unsigned long long)st->files_stored,
             (unsigned long long)st->files_missing, (unsigned long long)st->files_refused,
             (unsigned long long)st->skipped, st->skipped == 1 ? "" : "s",
             (unsigned long long)st->repaired);
}

/* Frees an import that ended (or never started its steps). */
static void source_free(void *impl)
{
    tg_import_t *imp = impl;
    tg_events_free(imp->events[0], imp->nevents[0]);
    tg_events_free(imp->events[1], imp->nevents[1]);
    tg_reader_free(imp->reader);
    json_decref(imp->imported);
    json_decref(imp->media_batch);
    free(imp->param_json);
    if (imp->fd >= 0)
        close(imp->fd);
    free(imp);
}

const importer_def_t tg_import_source = {
    .name = "telegram-export",
    .args = "PATH",
    .min_args = 1,
    .max_args = 1,
    .what = "import a Telegram Desktop JSON export (result.json or its folder) into the store; "
            "idempotent",
    .help = "PATH is a Telegram Desktop export in JSON: its result.json, or the folder holding it "
            "(a\nsingle chat or the whole account). Every chat, message, person and file record "
            "is\nstored; importing the same export again changes nothing. Progress is logged;\n"
            "SIGINT or SIGTERM stops at the next step: the partial chat is rolled back, the\n"
            "chats imported completely stay, and running the import again completes it.\n",
    .check = source_check,
    .folder_file = "result.json",
    .start = source_start,
    .summary = source_summary,
    .free = source_free,
};
