/* tg_import: streaming import of Telegram Desktop exports (see
 * tg_import.h). One step at a time: the reader parses a chunk on the
 * thread pool, then its events run against the database in order; the next
 * chunk is read only when they are done, so memory is bounded by one
 * chunk and its rows. */
#include "archive/tg_import.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/media_store.h"
#include "archive/tg_reader.h"
#include "util/log.h"

#define IMPORT_TAG "import"

typedef enum {
    IMP_ID = 0,  /* getting an import id */
    IMP_READING, /* a reader step runs on the thread pool */
    IMP_EVENTS,  /* running a step's events */
    IMP_CLEANUP, /* removing staged rows after an error */
    IMP_DONE,
} imp_state_t;

struct tg_import_s {
    uv_loop_t *loop;
    pg_pool_t *pool;
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
    int64_t import_id;
    tg_reader_t *reader;
    uv_work_t work;
    int step_rc;
    tg_event_t events[TG_READER_MAX_EVENTS];
    int nevents, next_event;
    json_t *headers; /* chat_key -> the chat's fields, while it is open */
    pg_query_t q;
    pg_stmt_t stmt;
    const char *params[5];
    char param_buf[3][32];
    char *param_json;
    tg_import_stats_t stats;
    json_t *imported; /* names of the chats imported completely */
    int status;
    char error[6144];
    uint64_t started_ms, last_progress_ms;
    bool tty;
    bool stop;
    tg_import_cb cb;
    void *data;
};

static void step_start(tg_import_t *imp);
static void events_next(tg_import_t *imp);

/* ---- helpers ------------------------------------------------------------- */

bool tg_import_parse_tz(const char *tz, char *out, size_t cap)
{
    if (strcmp(tz, "UTC") == 0 || strcmp(tz, "Z") == 0 || strcmp(tz, "utc") == 0) {
        snprintf(out, cap, "+00:00");
        return true;
    }
    int sign = tz[0] == '-' ? -1 : 1;
    if (tz[0] != '+' && tz[0] != '-')
        return false;
    int h = 0, m = 0;
    const char *p = tz + 1;
    if (strlen(p) == 4 && strspn(p, "0123456789") == 4) {
        h = (p[0] - '0') * 10 + (p[1] - '0');
        m = (p[2] - '0') * 10 + (p[3] - '0');
    } else {
        char extra;
        int n = sscanf(p, "%2d:%2d%c", &h, &m, &extra);
        if (n == 1 && strspn(p, "0123456789") == strlen(p) && strlen(p) <= 2)
            m = 0;
        else if (n != 2 || strlen(p) != 5)
            return false;
    }
    if (h > 14 || m > 59)
        return false;
    snprintf(out, cap, "%c%02d:%02d", sign < 0 ? '-' : '+', h, m);
    return true;
}

static void progress(tg_import_t *imp, bool final)
{
    uint64_t now = uv_now(imp->loop);
    if (!final && !imp->tty && now - imp->last_progress_ms < TG_IMPORT_PROGRESS_MS)
        return;
    imp->last_progress_ms = now;
    uint64_t done = imp->reader ? tg_reader_offset(imp->reader) : 0;
    uint64_t msgs = imp->reader ? tg_reader_messages(imp->reader) : 0;
    double secs = (double)(now - imp->started_ms) / 1000.0;
    if (secs < 0.001)
        secs = 0.001;
    double pct = imp->size ? 100.0 * (double)done / (double)imp->size : 100.0;
    double mbps = (double)done / secs / 1e6;
    double rate = (double)msgs / secs;
    double eta =
        done > 0 && imp->size > done ? secs * (double)(imp->size - done) / (double)done : 0;
    if (imp->tty) {
        char bar[31];
        int fill = (int)(pct * 30 / 100);
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r%5.1f%% [%s] %.1f MB/s, %.0f msg/s, %llu messages, ETA %d:%02d ", pct,
                bar, mbps, rate, (unsigned long long)msgs, (int)eta / 60, (int)eta % 60);
        if (final)
            fputc('\n', stderr);
    } else {
        log_info(IMPORT_TAG, "%.1f%% (%llu of %llu bytes), %llu messages, %.0f msg/s, ETA %.0f s",
                 pct, (unsigned long long)done, (unsigned long long)imp->size,
                 (unsigned long long)msgs, rate, eta);
    }
}

static void finish(tg_import_t *imp, int status)
{
    imp->state = IMP_DONE;
    imp->status = status;
    if (imp->fd >= 0) {
        close(imp->fd);
        imp->fd = -1;
    }
    if (status == 0)
        progress(imp, true);
    else if (imp->tty)
        fputc('\n', stderr);
    imp->cb(imp, status);
}

static void fail_later_cleanup(tg_import_t *imp, int status);

static void submit(tg_import_t *imp, const char *sql, int nparams, pg_query_cb cb)
{
    memset(&imp->q, 0, sizeof imp->q);
    memset(&imp->stmt, 0, sizeof imp->stmt);
    imp->stmt.sql = sql;
    imp->stmt.nparams = nparams;
    imp->stmt.params = imp->params;
    imp->q.stmts = &imp->stmt;
    imp->q.nstmts = 1;
    imp->q.timeout_ms = TG_IMPORT_QUERY_TIMEOUT_MS;
    imp->q.cb = cb;
    imp->q.data = imp;
    int rc = pg_pool_submit(imp->pool, &imp->q);
    if (rc != 0) {
        snprintf(imp->error, sizeof imp->error, "%s: database: %s", imp->path, uv_strerror(rc));
        fail_later_cleanup(imp, rc);
    }
}

/* ---- errors and cleanup --------------------------------------------------- */

static void cleanup_done(pg_query_t *q, int status)
{
    tg_import_t *imp = q->data;
    if (status != 0)
        log_warn(IMPORT_TAG, "could not remove the staged rows of import %lld: %s",
                 (long long)imp->import_id, q->error);
    pg_query_release(q);
    finish(imp, imp->status);
}

static void fail_later_cleanup(tg_import_t *imp, int status)
{
    imp->status = status ? status : UV_EINVAL;
    size_t n = json_array_size(imp->imported);
    if (n > 0) {
        size_t len = strlen(imp->error);
        snprintf(imp->error + len, sizeof imp->error - len,
                 "; %zu chat(s) had been imported completely before it, the rest is unchanged", n);
    } else {
        size_t len = strlen(imp->error);
        snprintf(imp->error + len, sizeof imp->error - len, "; the store is unchanged");
    }
    if (imp->import_id <= 0) {
        finish(imp, imp->status);
        return;
    }
    imp->state = IMP_CLEANUP;
    snprintf(imp->param_buf[0], sizeof imp->param_buf[0], "%lld", (long long)imp->import_id);
    imp->params[0] = imp->param_buf[0];
    memset(&imp->q, 0, sizeof imp->q);
    memset(&imp->stmt, 0, sizeof imp->stmt);
    imp->stmt.sql = "DELETE FROM import_staging WHERE import_id = $1";
    imp->stmt.nparams = 1;
    imp->stmt.params = imp->params;
    imp->q.stmts = &imp->stmt;
    imp->q.nstmts = 1;
    imp->q.cb = cleanup_done;
    imp->q.data = imp;
    if (pg_pool_submit(imp->pool, &imp->q) != 0)
        finish(imp, imp->status);
}

/* ---- events ---------------------------------------------------------------- */

/* ---- media files ------------------------------------------------------------- */

static void media_next(tg_import_t *imp);

/* True when p is a relative path that stays inside the export folder. */
static bool safe_relative(const char *p)
{
    if (p[0] == '/' || p[0] == '\0')
        return false;
    for (const char *s = p; *s;) {
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t)(slash - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.')
            return false;
        s += n + (slash ? 1 : 0);
        if (!slash)
            break;
    }
    return true;
}

static void media_work(uv_work_t *w)
{
    tg_import_t *imp = w->data;
    size_t i;
    json_t *row;
    json_array_foreach(imp->media_batch, i, row)
    {
        const char *rel = json_string_value(json_object_get(row, "export_path"));
        char full[8200], err[512], sha[65], stored[MEDIA_STORE_REL_MAX];
        uint64_t size = 0;
        struct stat st;
        if (rel == NULL || !safe_relative(rel)) {
            json_object_set_new(row, "state", json_string("error"));
            json_object_set_new(row, "error", json_string("path leaves the export folder"));
            continue;
        }
        snprintf(full, sizeof full, "%s/%s", imp->export_dir, rel);
        if (lstat(full, &st) != 0 || !S_ISREG(st.st_mode)) {
            json_object_set_new(row, "state", json_string("unavailable"));
            json_object_set_new(row, "error", json_string("not in the export folder"));
            continue;
        }
        if (media_store_put(imp->media_root, full, sha, stored, &size, err, sizeof err) != 0) {
            json_object_set_new(row, "state", json_string("error"));
            json_object_set_new(row, "error", json_string(err));
            continue;
        }
        json_object_set_new(row, "state", json_string("done"));
        json_object_set_new(row, "sha256", json_string(sha));
        json_object_set_new(row, "local_path", json_string(stored));
        json_object_set_new(row, "size", json_integer((json_int_t)size));
    }
}

static void media_saved(pg_query_t *q, int status)
{
    tg_import_t *imp = q->data;
    pg_query_release(q);
    free(imp->param_json);
    imp->param_json = NULL;
    if (status != 0) {
        snprintf(imp->error, sizeof imp->error, "%s: database: %s", imp->path, q->error);
        fail_later_cleanup(imp, status);
        return;
    }
    size_t i;
    json_t *row;
    json_array_foreach(imp->media_batch, i, row)
    {
        const char *st = json_string_value(json_object_get(row, "state"));
        if (st && strcmp(st, "done") == 0)
            imp->stats.files_stored++;
        else
            imp->stats.files_missing++;
    }
    json_decref(imp->media_batch);
    imp->media_batch = NULL;
    media_next(imp);
}

static void media_after(uv_work_t *w, int status)
{
    tg_import_t *imp = w->data;
    if (status != 0) {
        snprintf(imp->error, sizeof imp->error, "%s: %s", imp->path, uv_strerror(status));
        fail_later_cleanup(imp, status);
        return;
    }
    imp->param_json = json_dumps(imp->media_batch, JSON_COMPACT);
    imp->params[0] = imp->media_chat_buf;
    imp->params[1] = imp->param_json ? imp->param_json : "[]";
    submit(imp,
           "UPDATE media m SET state = u.state, sha256 = u.sha256, local_path = u.local_path, "
           "error = u.error, file_size = coalesce(u.size, m.file_size), "
           "downloaded_at = CASE WHEN u.state = 'done' THEN now() END, updated_at = now() "
           "FROM jsonb_to_recordset($2::jsonb) AS u(message_id bigint, ordinal smallint, "
           "state text, sha256 text, local_path text, error text, size bigint) "
           "WHERE m.chat_id = $1::bigint AND m.message_id = u.message_id "
           "AND m.ordinal = u.ordinal",
           2, media_saved);
}

static void media_listed(pg_query_t *q, int status)
{
    tg_import_t *imp = q->data;
    if (status != 0 || q->results[0] == NULL) {
        snprintf(imp->error, sizeof imp->error, "%s: database: %s", imp->path, q->error);
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
        snprintf(imp->error, sizeof imp->error, "%s: %s", imp->path, uv_strerror(rc));
        fail_later_cleanup(imp, rc);
    }
}

/* Copies the next batch of the chat's files that are still to be looked
 * at; back to the events when none is left. */
static void media_next(tg_import_t *imp)
{
    snprintf(imp->media_chat_buf, sizeof imp->media_chat_buf, "%lld", (long long)imp->media_chat);
    imp->params[0] = imp->media_chat_buf;
    snprintf(imp->param_buf[2], sizeof imp->param_buf[2], "%d", TG_IMPORT_MEDIA_BATCH);
    imp->params[1] = imp->param_buf[2];
    submit(imp,
           "SELECT coalesce(jsonb_agg(jsonb_build_object('message_id', message_id, 'ordinal', "
           "ordinal, 'export_path', export_path) ORDER BY message_id, ordinal), '[]')::text "
           "FROM (SELECT message_id, ordinal, export_path FROM media "
           "WHERE chat_id = $1::bigint AND state = 'remote' AND export_path IS NOT NULL "
           "AND NOT parley_tg_file_missing(export_path) ORDER BY message_id, ordinal "
           "LIMIT $2::integer) s",
           2, media_listed);
}

static void event_done(pg_query_t *q, int status)
{
    tg_import_t *imp = q->data;
    tg_event_t *e = &imp->events[imp->next_event - 1];
    if (status != 0) {
        snprintf(imp->error, sizeof imp->error, "%s: database: %s", imp->path,
                 q->error[0] ? q->error : uv_strerror(status));
        pg_query_release(q);
        free(imp->param_json);
        imp->param_json = NULL;
        fail_later_cleanup(imp, status);
        return;
    }
    if (e->kind == TG_EV_CHAT_END && q->results[0] && PQntuples(q->results[0]) == 1) {
        json_error_t je;
        json_t *res = json_loads(PQgetvalue(q->results[0], 0, 0), 0, &je);
        imp->stats.chats++;
        imp->stats.messages += (uint64_t)json_integer_value(json_object_get(res, "messages"));
        imp->stats.written += (uint64_t)json_integer_value(json_object_get(res, "written"));
        const char *name = json_string_value(json_object_get(e->json, "name"));
        json_array_append_new(imp->imported, json_string(name ? name : "(unnamed)"));
        if (!imp->tty)
            log_info(IMPORT_TAG, "chat %s (%lld): %lld messages, %lld new or changed",
                     name ? name : "(unnamed)",
                     (long long)json_integer_value(json_object_get(res, "chat_id")),
                     (long long)json_integer_value(json_object_get(res, "messages")),
                     (long long)json_integer_value(json_object_get(res, "written")));
        imp->media_chat = json_integer_value(json_object_get(res, "chat_id"));
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

static void events_next(tg_import_t *imp)
{
    while (imp->next_event < imp->nevents) {
        tg_event_t *e = &imp->events[imp->next_event++];
        switch (e->kind) {
        case TG_EV_CHAT_BEGIN:
            continue;
        case TG_EV_ROWS:
            if (e->rows.len == 0)
                continue;
            memset(&imp->q, 0, sizeof imp->q);
            memset(&imp->stmt, 0, sizeof imp->stmt);
            imp->stmt.sql = "COPY import_staging (import_id, chat_key, msg) FROM STDIN";
            imp->stmt.copy_data = e->rows.data;
            imp->stmt.copy_len = e->rows.len;
            imp->q.stmts = &imp->stmt;
            imp->q.nstmts = 1;
            imp->q.timeout_ms = TG_IMPORT_QUERY_TIMEOUT_MS;
            imp->q.cb = event_done;
            imp->q.data = imp;
            if (pg_pool_submit(imp->pool, &imp->q) != 0) {
                snprintf(imp->error, sizeof imp->error, "%s: database busy", imp->path);
                fail_later_cleanup(imp, UV_EBUSY);
            }
            return;
        case TG_EV_CHAT_END: {
            snprintf(imp->param_buf[0], sizeof imp->param_buf[0], "%lld",
                     (long long)imp->import_id);
            snprintf(imp->param_buf[1], sizeof imp->param_buf[1], "%lld", (long long)e->chat_key);
            imp->param_json = json_dumps(e->json, JSON_COMPACT);
            imp->params[0] = imp->param_buf[0];
            imp->params[1] = imp->param_buf[1];
            imp->params[2] = imp->param_json ? imp->param_json : "{}";
            imp->params[3] = imp->tz;
            imp->params[4] = e->left ? "true" : "false";
            submit(imp,
                   "SELECT parley_tg_import_chat($1::bigint, $2::bigint, $3::jsonb, "
                   "$4::interval, $5::boolean)::text",
                   5, event_done);
            return;
        }
        case TG_EV_PERSONAL:
            if (!json_is_object(e->json))
                continue;
            imp->param_json = json_dumps(e->json, JSON_COMPACT);
            imp->params[0] = imp->param_json ? imp->param_json : "{}";
            submit(imp, "SELECT parley_tg_import_self($1::jsonb)", 1, event_done);
            return;
        case TG_EV_CONTACTS:
            if (!json_is_array(e->json))
                continue;
            imp->param_json = json_dumps(e->json, JSON_COMPACT);
            imp->params[0] = imp->param_json ? imp->param_json : "[]";
            submit(imp, "SELECT parley_tg_import_contacts($1::jsonb)", 1, event_done);
            return;
        }
    }
    /* All events of the step ran. */
    tg_events_free(imp->events, imp->nevents);
    imp->nevents = imp->next_event = 0;
    if (imp->step_rc == 1) {
        finish(imp, 0);
        return;
    }
    progress(imp, false);
    if (imp->stop) {
        snprintf(imp->error, sizeof imp->error, "%s: interrupted", imp->path);
        fail_later_cleanup(imp, UV_ECANCELED);
        return;
    }
    step_start(imp);
}

/* ---- reader steps ----------------------------------------------------------- */

static void step_work(uv_work_t *w)
{
    tg_import_t *imp = w->data;
    imp->step_rc = tg_reader_step(imp->reader, imp->events, &imp->nevents);
}

static void step_after(uv_work_t *w, int status)
{
    tg_import_t *imp = w->data;
    if (status != 0) {
        snprintf(imp->error, sizeof imp->error, "%s: %s", imp->path, uv_strerror(status));
        tg_events_free(imp->events, imp->nevents);
        imp->nevents = 0;
        fail_later_cleanup(imp, status);
        return;
    }
    if (imp->step_rc < 0) {
        snprintf(imp->error, sizeof imp->error, "%s: %s", imp->path, tg_reader_error(imp->reader));
        /* The events before the error belong to a chat that will not be
         * completed: drop them. */
        tg_events_free(imp->events, imp->nevents);
        imp->nevents = 0;
        fail_later_cleanup(imp, imp->step_rc);
        return;
    }
    imp->state = IMP_EVENTS;
    imp->next_event = 0;
    events_next(imp);
}

static void step_start(tg_import_t *imp)
{
    imp->state = IMP_READING;
    imp->work.data = imp;
    int rc = uv_queue_work(imp->loop, &imp->work, step_work, step_after);
    if (rc != 0) {
        snprintf(imp->error, sizeof imp->error, "%s: %s", imp->path, uv_strerror(rc));
        fail_later_cleanup(imp, rc);
    }
}

static void id_done(pg_query_t *q, int status)
{
    tg_import_t *imp = q->data;
    if (status != 0 || q->results[0] == NULL || PQntuples(q->results[0]) != 1) {
        snprintf(imp->error, sizeof imp->error, "%s: database: %s", imp->path,
                 q->error[0] ? q->error : uv_strerror(status ? status : UV_EIO));
        pg_query_release(q);
        finish(imp, status ? status : UV_EIO);
        return;
    }
    imp->import_id = strtoll(PQgetvalue(q->results[0], 0, 0), NULL, 10);
    pg_query_release(q);
    imp->reader = tg_reader_new(imp->fd, imp->import_id);
    if (imp->reader == NULL) {
        snprintf(imp->error, sizeof imp->error, "out of memory");
        fail_later_cleanup(imp, UV_ENOMEM);
        return;
    }
    log_info(IMPORT_TAG, "importing %s (%llu bytes)", imp->path, (unsigned long long)imp->size);
    step_start(imp);
}

/* ---- public ------------------------------------------------------------------ */

int tg_import_start(uv_loop_t *loop, pg_pool_t *pool, const char *path, const char *tz,
                    const char *media_root, tg_import_cb cb, void *data, tg_import_t **out,
                    char *err, size_t errcap)
{
    char tzn[16];
    if (!tg_import_parse_tz(tz, tzn, sizeof tzn)) {
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
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errcap, "%s: %s", file, strerror(errno));
        return -errno;
    }
    tg_import_t *imp = calloc(1, sizeof *imp);
    if (imp == NULL) {
        close(fd);
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    imp->loop = loop;
    imp->pool = pool;
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
    snprintf(imp->media_root, sizeof imp->media_root, "%s", media_root);
    snprintf(imp->tz, sizeof imp->tz, "%s", tzn);
    imp->cb = cb;
    imp->data = data;
    imp->imported = json_array();
    imp->tty = isatty(2) == 1;
    imp->started_ms = imp->last_progress_ms = uv_now(loop);
    imp->state = IMP_ID;
    *out = imp;
    submit(imp, "SELECT nextval('import_id_seq')", 0, id_done);
    return 0;
}

void tg_import_stop(tg_import_t *imp)
{
    imp->stop = true;
}

bool tg_import_done(const tg_import_t *imp)
{
    return imp->state == IMP_DONE;
}

const char *tg_import_error(const tg_import_t *imp)
{
    return imp->error;
}

void tg_import_get_stats(const tg_import_t *imp, tg_import_stats_t *out)
{
    *out = imp->stats;
}

void *tg_import_data(const tg_import_t *imp)
{
    return imp->data;
}

void tg_import_free(tg_import_t *imp)
{
    if (imp == NULL)
        return;
    tg_events_free(imp->events, imp->nevents);
    tg_reader_free(imp->reader);
    json_decref(imp->headers);
    json_decref(imp->imported);
    json_decref(imp->media_batch);
    free(imp->param_json);
    if (imp->fd >= 0)
        close(imp->fd);
    free(imp);
}
