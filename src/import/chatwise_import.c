/* chatwise_import: ChatWise's app.db into the store (see chatwise_import.h).
 * Steps: open and check the file (thread pool) -> per batch: read up to
 * CHATWISE_IMPORT_BATCH rows of chat, then of message, after the last rowid
 * read (thread pool) -> apply them (SQL) -> the next batch; the file is
 * closed on the thread pool when the last batch was read. */
#include "import/chatwise_import.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import/progress.h"
#include "util/file_kind.h"
#include "util/log.h"
#include "util/strutil.h"

#define CW_TAG "import"
/* The error of a stopped import. */
#define CW_STOPPED "stopped; what was applied stays, and importing again completes it"

typedef enum { CW_CHATS, CW_MESSAGES, CW_END } cw_phase_t;

struct chatwise_import_s {
    uv_loop_t *loop;
    pg_pool_t *pool;
    char path[PATH_MAX];
    sqlite3 *db;
    /* which optional columns the file has */
    bool chat_title, chat_created, chat_updated, msg_meta, msg_files, msg_role;
    cw_phase_t phase;
    int64_t after; /* last rowid read in this phase */
    char *rows;    /* JSON text of the batch in flight, or NULL */
    size_t nrows;
    uint64_t total_messages;
    uv_work_t work;
    uint64_t warned_truncated, warned_times, warned_refused;
    int status;
    chatwise_import_stats_t st;
    importer_run_t *run; /* the owner's side: stop, error, progress (by messages) */
};

static void next_batch(chatwise_import_t *imp);

static void progress(chatwise_import_t *imp, bool final)
{
    import_progress_report(&imp->run->progress, imp->st.messages, imp->total_messages,
                           imp->st.messages, final);
}

static void finish(chatwise_import_t *imp, int status)
{
    if (status == 0)
        progress(imp, true);
    imp->status = status;
    importer__finished(imp->run, status);
}

/* ---- reading (thread pool) ------------------------------------------------------ */

static void set_sqlite_error(chatwise_import_t *imp, const char *what)
{
    int code = sqlite3_errcode(imp->db);
    if (code == SQLITE_NOTADB)
        snprintf(imp->run->error, sizeof imp->run->error, "%s: not a SQLite database", imp->path);
    else
        snprintf(imp->run->error, sizeof imp->run->error, "%s: %s: %s", imp->path, what,
                 sqlite3_errmsg(imp->db));
}

/* Sets *has for each of the table's columns named in names (NULL-ended).
 * Answers false (error set) when the table is missing. */
static bool table_columns(chatwise_import_t *imp, const char *table, const char *const *names,
                          bool **has)
{
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", table);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(imp->db, sql, -1, &st, NULL) != SQLITE_OK) {
        set_sqlite_error(imp, "reading its tables");
        return false;
    }
    bool any = false;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        any = true;
        const char *col = (const char *)sqlite3_column_text(st, 1);
        for (int i = 0; col && names[i]; i++)
            if (strcmp(col, names[i]) == 0)
                *has[i] = true;
    }
    if (rc != SQLITE_DONE) {
        set_sqlite_error(imp, "reading its tables");
        sqlite3_finalize(st);
        return false;
    }
    sqlite3_finalize(st);
    if (!any) {
        snprintf(imp->run->error, sizeof imp->run->error,
                 "%s: no table %s: this is not a ChatWise database (app.db)", imp->path, table);
        return false;
    }
    return true;
}

/* Answers false (error set) unless name is an ordinary table of the
 * file: a view (whose query could be endless), a virtual table or a
 * missing one is refused by name before any statement reads it. */
static bool real_table(chatwise_import_t *imp, const char *name)
{
    /* pragma_table_list says what SQLite itself takes the name for (a
     * view, a virtual table), whatever the text of its CREATE; a column
     * SQLite computes on every read (GENERATED ALWAYS AS, hidden 2 or 3
     * in pragma_table_xinfo) is refused too: one such value can cost any
     * time and memory, far beyond the file's size. */
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(imp->db,
                           "SELECT type, (SELECT x.name FROM pragma_table_xinfo(t.name) x "
                           "WHERE x.hidden IN (2, 3) LIMIT 1) "
                           "FROM pragma_table_list t WHERE t.schema = 'main' "
                           "AND t.name = ?1 COLLATE NOCASE LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK) {
        set_sqlite_error(imp, "reading its tables");
        return false;
    }
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        set_sqlite_error(imp, "reading its tables");
        sqlite3_finalize(st);
        return false;
    }
    const char *type = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    const char *generated = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 1) : NULL;
    const char *what = type == NULL                   ? NULL
                       : strcmp(type, "view") == 0    ? "a view"
                       : strcmp(type, "virtual") == 0 ? "a virtual table"
                       : strcmp(type, "table") != 0   ? "not an ordinary table"
                                                      : NULL;
    bool ok = type != NULL && what == NULL && generated == NULL;
    if (type == NULL)
        snprintf(imp->run->error, sizeof imp->run->error,
                 "%s: no table %s: this is not a ChatWise database (app.db)", imp->path, name);
    else if (what != NULL)
        snprintf(imp->run->error, sizeof imp->run->error, "%s: %s is %s, not a table; refused",
                 imp->path, name, what);
    else if (generated != NULL)
        snprintf(imp->run->error, sizeof imp->run->error,
                 "%s: column %.100s of %s is generated (computed by SQLite at every read), not "
                 "stored: this is not a ChatWise database; refused",
                 imp->path, generated, name);
    sqlite3_finalize(st);
    return ok;
}

/* SQLite's progress handler: a statement in flight is interrupted
 * (SQLITE_INTERRUPT) once *stop is set. */
static int stop_requested(void *data)
{
    return __atomic_load_n((const bool *)data, __ATOMIC_RELAXED) ? 1 : 0;
}

void chatwise_import__guard(struct sqlite3 *db, const bool *stop)
{
    sqlite3_progress_handler(db, CHATWISE_IMPORT_PROGRESS_OPS, stop_requested, (void *)stop);
}

/* Whether path is a regular file (or, when optional, absent), without
 * blocking on it; else imp->status and error are set. */
static bool regular_file(chatwise_import_t *imp, const char *path, bool optional)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st = {0};
    if (fd < 0) {
        int e = errno;
        if (optional && e == ENOENT)
            return true;
        imp->status = -e;
        snprintf(imp->run->error, sizeof imp->run->error, "%s: %s", path, strerror(e));
        return false;
    }
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    close(fd);
    if (!ok) {
        imp->status = UV_EINVAL;
        snprintf(imp->run->error, sizeof imp->run->error, "%s: %s; refused", path,
                 file_kind_not_regular(st.st_mode));
    }
    return ok;
}

static void open_work(uv_work_t *w)
{
    chatwise_import_t *imp = w->data;
    struct stat st;
    if (stat(imp->path, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t n = strlen(imp->path);
        if (n + sizeof "/app.db" > sizeof imp->path) {
            imp->status = UV_ENAMETOOLONG;
            snprintf(imp->run->error, sizeof imp->run->error, "%s: the path is too long",
                     imp->path);
            return;
        }
        memcpy(imp->path + n, "/app.db", sizeof "/app.db");
    }
    if (stat(imp->path, &st) != 0) {
        int e = errno;
        imp->status = -e;
        snprintf(imp->run->error, sizeof imp->run->error, "%s: %s", imp->path, strerror(e));
        return;
    }
    char real[PATH_MAX];
    if (realpath(imp->path, real) != NULL)
        snprintf(imp->path, sizeof imp->path, "%s", real);
    /* SQLite opens the file (and its -wal and -shm) blocking: a FIFO
     * would wait for a writer forever. Only regular files, checked on a
     * descriptor opened without blocking. */
    if (!regular_file(imp, imp->path, false))
        return;
    static const char *const sides[] = {"-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof sides / sizeof *sides; i++) {
        char side[PATH_MAX + 16];
        snprintf(side, sizeof side, "%s%s", imp->path, sides[i]);
        if (!regular_file(imp, side, true))
            return;
    }
    /* Read-only through SQLite's own locking: a file the app is writing
     * is read as a consistent snapshot, never copied. */
    if (sqlite3_open_v2(imp->path, &imp->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        set_sqlite_error(imp, "opening");
        imp->status = UV_EINVAL;
        return;
    }
    sqlite3_busy_timeout(imp->db, CHATWISE_IMPORT_BUSY_MS);
    chatwise_import__guard(imp->db, &imp->run->stop);
    if (!real_table(imp, "chat") || !real_table(imp, "message")) {
        imp->status = UV_EINVAL;
        return;
    }
    bool chat_id = false, msg_id = false, msg_chat = false, msg_content = false,
         msg_created = false;
    const char *chat_cols[] = {"id", "title", "createdAt", "updatedAt", NULL};
    bool *chat_has[] = {&chat_id, &imp->chat_title, &imp->chat_created, &imp->chat_updated};
    const char *msg_cols[] = {"id",        "chatId", "role",           "content",
                              "createdAt", "meta",   "generatedFiles", NULL};
    bool *msg_has[] = {&msg_id,      &msg_chat,      &imp->msg_role, &msg_content,
                       &msg_created, &imp->msg_meta, &imp->msg_files};
    if (!table_columns(imp, "chat", chat_cols, chat_has) ||
        !table_columns(imp, "message", msg_cols, msg_has)) {
        imp->status = UV_EINVAL;
        return;
    }
    if (!chat_id || !msg_id || !msg_chat || !msg_content || !msg_created) {
        snprintf(imp->run->error, sizeof imp->run->error,
                 "%s: table chat needs column id, table message id, chatId, content and "
                 "createdAt: this is not a ChatWise database (app.db)",
                 imp->path);
        imp->status = UV_EINVAL;
        return;
    }
    sqlite3_stmt *cnt;
    if (sqlite3_prepare_v2(imp->db, "SELECT count(*) FROM message", -1, &cnt, NULL) == SQLITE_OK &&
        sqlite3_step(cnt) == SQLITE_ROW)
        imp->total_messages = (uint64_t)sqlite3_column_int64(cnt, 0);
    sqlite3_finalize(cnt);
}

json_t *chatwise_text_json(const unsigned char *s, size_t n)
{
    /* PostgreSQL's jsonb has no NUL character: those become U+FFFD too. */
    json_t *v = memchr(s, 0, n) ? NULL : json_stringn((const char *)s, n);
    if (v != NULL)
        return v;
    char *fixed = n <= (SIZE_MAX - 1) / 3 ? malloc(n * 3 + 1) : NULL;
    if (fixed == NULL)
        return json_null();
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = s[i] != 0 ? str_utf8_seq(s + i, n - i) : 0;
        if (len > 0) {
            memcpy(fixed + o, s + i, len);
            o += len;
            i += len;
        } else {
            memcpy(fixed + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    v = json_stringn(fixed, o);
    free(fixed);
    return v ? v : json_null();
}

/* A column's value; a text over CHATWISE_IMPORT_MAX_VALUE bytes cut to
 * it (at a character's start), its size then in *full (else 0). *bytes
 * grows by the value's size. */
static json_t *column_value(sqlite3_stmt *st, int i, size_t *full, size_t *bytes)
{
    *full = 0;
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return json_integer(sqlite3_column_int64(st, i));
    case SQLITE_FLOAT:
        return json_real(sqlite3_column_double(st, i));
    case SQLITE_TEXT: {
        const unsigned char *t = sqlite3_column_text(st, i);
        size_t n = (size_t)sqlite3_column_bytes(st, i);
        if (t == NULL)
            return json_null();
        if (n > CHATWISE_IMPORT_MAX_VALUE) {
            *full = n;
            n = CHATWISE_IMPORT_MAX_VALUE;
            while (n > 0 && (t[n] & 0xC0) == 0x80)
                n--;
        }
        *bytes += n;
        return chatwise_text_json(t, n);
    }
    default:
        return json_null();
    }
}

/* A JSON text's value, or NULL when it is not JSON. */
static json_t *parse_json(json_t *s)
{
    if (!json_is_string(s))
        return NULL;
    return json_loadb(json_string_value(s), json_string_length(s), JSON_DECODE_ANY, NULL);
}

json_t *chatwise_meta_json(json_t *raw)
{
    json_t *meta = parse_json(raw);
    if (meta == NULL)
        return json_incref(raw);
    if (!json_is_object(meta))
        return meta;
    json_t *calls = json_object_get(meta, "toolCall");
    const char *key;
    json_t *call;
    if (json_is_object(calls)) {
        json_object_foreach(calls, key, call)
        {
            const char *names[] = {"arguments", "args"};
            for (int k = 0; k < 2 && json_is_object(call); k++) {
                json_t *parsed = parse_json(json_object_get(call, names[k]));
                if (parsed)
                    json_object_set_new(call, names[k], parsed);
            }
        }
    }
    json_t *result = parse_json(json_object_get(meta, "toolResult"));
    if (result)
        json_object_set_new(meta, "toolResult", result);
    return meta;
}

static void read_work(uv_work_t *w)
{
    chatwise_import_t *imp = w->data;
    char sql[512];
    if (imp->phase == CW_CHATS)
        snprintf(sql, sizeof sql,
                 "SELECT rowid, id, %s, %s, %s FROM chat WHERE rowid > ?1 ORDER BY rowid "
                 "LIMIT %d",
                 imp->chat_title ? "title" : "NULL", imp->chat_created ? "createdAt" : "NULL",
                 imp->chat_updated ? "updatedAt" : "NULL", CHATWISE_IMPORT_BATCH);
    else
        snprintf(sql, sizeof sql,
                 "SELECT rowid, id, chatId, %s, content, createdAt, %s, %s FROM message "
                 "WHERE rowid > ?1 ORDER BY rowid LIMIT %d",
                 imp->msg_role ? "role" : "NULL", imp->msg_meta ? "meta" : "NULL",
                 imp->msg_files ? "generatedFiles" : "NULL", CHATWISE_IMPORT_BATCH);
    static const char *const chat_keys[] = {"id", "title", "created", "updated"};
    static const char *const msg_keys[] = {"id", "chat", "role", "content", "at", "meta", "files"};
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(imp->db, sql, -1, &st, NULL) != SQLITE_OK) {
        set_sqlite_error(imp, "reading");
        imp->status = UV_EIO;
        return;
    }
    sqlite3_bind_int64(st, 1, imp->after);
    json_t *rows = json_array();
    int rc;
    size_t bytes = 0;
    /* A batch ends early past CHATWISE_IMPORT_BATCH_BYTES, so that large
     * rows are applied a few at a time (each statement well within
     * IMPORTER_QUERY_TIMEOUT_MS). */
    while (bytes < CHATWISE_IMPORT_BATCH_BYTES && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        imp->after = sqlite3_column_int64(st, 0);
        json_t *row = json_object();
        json_t *cut = NULL;
        int ncols = imp->phase == CW_CHATS ? 4 : 7;
        for (int i = 0; i < ncols; i++) {
            const char *key = imp->phase == CW_CHATS ? chat_keys[i] : msg_keys[i];
            size_t full;
            json_t *v = column_value(st, i + 1, &full, &bytes);
            if (full > 0) {
                /* Cut: a meta value is then kept as its text. */
                if (cut == NULL)
                    cut = json_object();
                json_object_set_new(cut, key, json_integer((json_int_t)full));
            } else if (imp->phase == CW_MESSAGES && i == 5) {
                json_t *m = chatwise_meta_json(v);
                json_decref(v);
                v = m;
            }
            json_object_set_new(row, key, v);
        }
        if (cut != NULL) {
            imp->st.truncated++;
            if (imp->warned_truncated++ < CHATWISE_IMPORT_MAX_WARNINGS) {
                const char *k;
                json_t *v;
                json_object_foreach(cut, k, v)
                {
                    log_warn(CW_TAG,
                             "%s: table %s, row id %.80s%s: %s of %lld bytes stored cut to %u "
                             "bytes",
                             imp->path, imp->phase == CW_CHATS ? "chat" : "message",
                             json_string_value(json_object_get(row, "id"))
                                 ? json_string_value(json_object_get(row, "id"))
                                 : "?",
                             json_string_length(json_object_get(row, "id")) > 80 ? "..." : "", k,
                             (long long)json_integer_value(v), CHATWISE_IMPORT_MAX_VALUE);
                }
            }
            json_object_set_new(row, "truncated", cut);
        }
        json_array_append_new(rows, row);
    }
    if (bytes >= CHATWISE_IMPORT_BATCH_BYTES)
        rc = SQLITE_DONE;
    if (rc == SQLITE_INTERRUPT && importer__stopping(imp->run)) {
        snprintf(imp->run->error, sizeof imp->run->error, "%s", CW_STOPPED);
        imp->status = UV_ECANCELED;
    } else if (rc != SQLITE_DONE) {
        set_sqlite_error(imp, "reading");
        imp->status = UV_EIO;
    }
    sqlite3_finalize(st);
    imp->nrows = json_array_size(rows);
    imp->rows = imp->status == 0 && imp->nrows ? json_dumps(rows, JSON_COMPACT) : NULL;
    json_decref(rows);
    if (imp->status == 0 && imp->nrows && imp->rows == NULL)
        imp->status = UV_ENOMEM;
    if (imp->status == 0 && imp->nrows == 0 && imp->phase == CW_MESSAGES) {
        sqlite3_close(imp->db);
        imp->db = NULL;
    }
}

/* ---- applying (loop) ----------------------------------------------------------- */

static void applied(void *data, int status, const char *value, const char *sqlstate,
                    const char *error)
{
    chatwise_import_t *imp = data;
    (void)sqlstate;
    free(imp->rows);
    imp->rows = NULL;
    if (status != 0) {
        snprintf(imp->run->error, sizeof imp->run->error, "%s", error);
        finish(imp, status);
        return;
    }
    json_t *r = value ? json_loads(value, 0, NULL) : NULL;
    imp->st.chats_written += (uint64_t)json_integer_value(json_object_get(r, "chatsWritten"));
    imp->st.written += (uint64_t)json_integer_value(json_object_get(r, "written"));
    imp->st.tool_calls += (uint64_t)json_integer_value(json_object_get(r, "toolCalls"));
    imp->st.orphans += (uint64_t)json_integer_value(json_object_get(r, "orphans"));
    const char *table = imp->phase == CW_CHATS ? "chat" : "message";
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(r, "badTimes"), i, x)
    {
        imp->st.bad_times++;
        if (imp->warned_times++ < CHATWISE_IMPORT_MAX_WARNINGS)
            log_warn(CW_TAG,
                     "%s: table %s, row id %.80s%s: a time that is not one (out of the years 1 "
                     "to 9999, or unreadable); stored without it%s",
                     imp->path, table, json_string_value(x) ? json_string_value(x) : "?",
                     json_string_length(x) > 80 ? "..." : "",
                     imp->phase == CW_CHATS ? "" : " (dated as its chat)");
    }
    json_array_foreach(json_object_get(r, "refused"), i, x)
    {
        imp->st.refused++;
        json_t *id = json_object_get(x, "id");
        if (imp->warned_refused++ < CHATWISE_IMPORT_MAX_WARNINGS)
            log_warn(CW_TAG, "%s: table %s, row id %.80s%s: not stored (%.300s); skipped",
                     imp->path, table, json_is_string(id) ? json_string_value(id) : "?",
                     json_string_length(id) > 80 ? "..." : "",
                     json_string_value(json_object_get(x, "error")));
    }
    json_decref(r);
    progress(imp, false);
    next_batch(imp);
}

static void read_after(uv_work_t *w, int status)
{
    chatwise_import_t *imp = w->data;
    if (importer__stopping(imp->run) && status == 0 && imp->status == 0) {
        /* Stopped while reading: the pools may be closing; touch nothing. */
        free(imp->rows);
        imp->rows = NULL;
        snprintf(imp->run->error, sizeof imp->run->error, "%s", CW_STOPPED);
        finish(imp, UV_ECANCELED);
        return;
    }
    int rc = importer__step_status(imp->run, status, imp->status);
    if (rc != 0) {
        free(imp->rows);
        imp->rows = NULL;
        finish(imp, rc);
        return;
    }
    if (imp->nrows == 0) {
        imp->phase = imp->phase == CW_CHATS ? CW_MESSAGES : CW_END;
        imp->after = 0;
        next_batch(imp);
        return;
    }
    if (imp->phase == CW_CHATS)
        imp->st.chats += imp->nrows;
    else
        imp->st.messages += imp->nrows;
    const char *params[3] = {imp->path, imp->phase == CW_CHATS ? "chats" : "messages", imp->rows};
    import_progress_waiting(&imp->run->progress, imp->phase == CW_CHATS
                                                     ? "the database: a batch of chats"
                                                     : "the database: a batch of messages");
    rc = pg_pool_call_timeout(imp->pool, IMPORTER_QUERY_TIMEOUT_MS, "parley_chatwise_ingest",
                              "SELECT parley_chatwise_ingest($1, $2, $3::jsonb)::text", 3, params,
                              applied, imp, NULL);
    if (rc != 0) {
        free(imp->rows);
        imp->rows = NULL;
        snprintf(imp->run->error, sizeof imp->run->error, "the database is busy: %s",
                 uv_strerror(rc));
        finish(imp, rc);
    }
}

static void next_batch(chatwise_import_t *imp)
{
    if (imp->phase == CW_END) {
        finish(imp, 0);
        return;
    }
    if (importer__stopping(imp->run)) {
        snprintf(imp->run->error, sizeof imp->run->error, "%s", CW_STOPPED);
        finish(imp, UV_ECANCELED);
        return;
    }
    import_progress_waiting(&imp->run->progress, "reading app.db");
    int rc = uv_queue_work(imp->loop, &imp->work, read_work, read_after);
    if (rc != 0)
        finish(imp, rc);
}

static void open_after(uv_work_t *w, int status)
{
    chatwise_import_t *imp = w->data;
    int rc = importer__step_status(imp->run, status, imp->status);
    if (rc != 0) {
        finish(imp, rc);
        return;
    }
    if (imp->run->progress.on)
        log_info(CW_TAG, "%s: %llu messages", imp->path, (unsigned long long)imp->total_messages);
    next_batch(imp);
}

/* ---- the source (importer.h) --------------------------------------------- */

static int source_start(const importer_env_t *env, importer_run_t *run, void **impl, char *err,
                        size_t errcap)
{
    const char *path = env->path;
    if (strlen(path) >= PATH_MAX - sizeof "/app.db") {
        snprintf(err, errcap, "%s: the path is too long", path);
        return UV_ENAMETOOLONG;
    }
    chatwise_import_t *imp = calloc(1, sizeof *imp);
    *impl = imp;
    if (imp == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    imp->loop = env->loop;
    imp->pool = env->pool;
    snprintf(imp->path, sizeof imp->path, "%s", path);
    imp->run = run;
    imp->work.data = imp;
    import_progress_init(&run->progress, env->loop, CW_TAG, "messages", env->progress,
                         env->progress_ms);
    return uv_queue_work(env->loop, &imp->work, open_work, open_after);
}

/* Only once the import ended (the thread-pool work is over). */
static void source_free(void *impl)
{
    chatwise_import_t *imp = impl;
    if (imp->db)
        sqlite3_close(imp->db);
    free(imp->rows);
    free(imp);
}

static void source_summary(const void *impl, char *out, size_t cap, bool *changed)
{
    const chatwise_import_stats_t *st = &((const chatwise_import_t *)impl)->st;
    *changed = st->chats_written > 0 || st->written > 0;
    snprintf(out, cap,
             "imported %llu chat%s (%llu new or changed), %llu messages (%llu new or changed), "
             "%llu with tool calls; %llu without their chat skipped, %llu not stored; %llu with "
             "a value cut to %u MiB, %llu with a time left out",
             (unsigned long long)st->chats, st->chats == 1 ? "" : "s",
             (unsigned long long)st->chats_written, (unsigned long long)st->messages,
             (unsigned long long)st->written, (unsigned long long)st->tool_calls,
             (unsigned long long)st->orphans, (unsigned long long)st->refused,
             (unsigned long long)st->truncated, CHATWISE_IMPORT_MAX_VALUE >> 20,
             (unsigned long long)st->bad_times);
}

const importer_def_t chatwise_import_source = {
    .name = "chatwise",
    .args = "PATH",
    .min_args = 1,
    .max_args = 1,
    .what = "import the chats of ChatWise (its app.db, or the folder holding it); incremental "
            "and idempotent",
    .help = "PATH is ChatWise's SQLite database app.db, or the folder holding it; it is read, "
            "never\nwritten. Only chats and messages changed since the last import are read. A "
            "row that\ncannot be stored as it is (a time out of range, a value over 8 MiB, a row "
            "the store\nrefuses) is stored degraded or skipped with a warning naming table and row "
            "id; the\nsummary counts them. `serve --chatwise-db PATH` follows the file while "
            "serving.\n",
    .follow_file = "app.db",
    .folder_file = "app.db",
    .follow_companion = "-wal",
    .start = source_start,
    .summary = source_summary,
    .free = source_free,
};
