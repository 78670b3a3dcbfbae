/* agent_import: agents' session transcripts into the store (see
 * agent_import.h), in either format (Claude Code's, Codex CLI's): a format
 * is a listing rule and a parser of a piece of lines (agent_formats.c);
 * the rest is this file's.
 * Steps: list the files (DIR/PROJECT/SESSION.jsonl; DIR/YYYY/MM/DD/
 * rollout-*.jsonl), or take the ones given (thread pool) -> per file: its
 * offset (SQL) -> read a piece of complete lines from there and parse them
 * (thread pool) -> apply the piece with the new offset (SQL) -> the next
 * piece, or the next file. */
#include "import/agent_import.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import/agent_formats.h"
#include "util/beneath.h"
#include "util/log.h"
#include "util/secret_file.h"

#define AI_TAG "import"
/* The longest folder path taken (imp->dir; paths below it are built in
 * 2 and 4 KiB buffers). */
#define AGENT_IMPORT_DIR_MAX 1024

struct agent_import_s {
    const agent_format_t *fmt;
    uv_loop_t *loop;
    pg_pool_t *pool;
    char dir[AGENT_IMPORT_DIR_MAX];
    agent_listing_t list; /* the files to read */
    char **given;         /* the files to read, relative to dir (env->files); NULL: list */
    size_t ngiven;
    char eras_path[1024]; /* the eras file, or "" */
    json_t *eras;         /* its object, {KEY: name}; NULL when none */
    size_t next;          /* the file read now, in list */
    uv_work_t work;
    /* the piece in flight */
    uint64_t from, to, lines_in_piece, first_line;
    char *events; /* JSON text: [{line, event}] */
    bool eof;
    bool skip_file;       /* the file is not read (warned) */
    bool restarting;      /* the file shrank: read from 0, replacing the offset restart */
    uint64_t restart;     /* the recorded offset given up */
    bool counted_changed; /* the file counted in files_changed */
    char known_ident[48]; /* the file the store's offset is of ("dev:ino"), or "" */
    char ident[48];       /* the file read now */
    int status;
    agent_import_stats_t st;
    importer_run_t *run; /* the owner's side: stop, error, progress (by files) */
};

static void next_file(agent_import_t *imp);

static void finish(agent_import_t *imp, int status)
{
    if (status == 0)
        import_progress_report(&imp->run->progress, imp->list.nfiles, imp->list.nfiles,
                               imp->st.messages, true);
    imp->status = status;
    importer__finished(imp->run, status);
}

/* ---- listing (thread pool) ---------------------------------------------------- */

/* Reads the eras file (thread pool): a JSON object of names. 0, or a
 * negative code with the error set. Opened as settings files are
 * (secret_file_open: a FIFO named as the eras file is refused at once, not
 * waited on; the descriptor checked is the one read). */
static int load_eras(agent_import_t *imp)
{
    char *error = imp->run->error;
    size_t cap = sizeof imp->run->error;
    int fd;
    struct stat st;
    int rc = secret_file_open(imp->eras_path, 0, "eras file", &fd, &st, error, cap);
    if (rc != 0)
        return rc;
    if (st.st_size > AGENT_IMPORT_MAX_ERAS_FILE) {
        close(fd);
        snprintf(error, cap, "eras file %s: larger than %u bytes", imp->eras_path,
                 AGENT_IMPORT_MAX_ERAS_FILE);
        return UV_EFBIG;
    }
    json_error_t je;
    json_t *o = json_loadfd(fd, 0, &je);
    close(fd);
    if (o == NULL) {
        snprintf(error, cap, "eras file %s: line %d: %s", imp->eras_path, je.line, je.text);
        return UV_EINVAL;
    }
    const char *key;
    json_t *v;
    if (!json_is_object(o)) {
        json_decref(o);
        snprintf(error, cap, "eras file %s: expected an object {\"KEY\": \"Era name\"}",
                 imp->eras_path);
        return UV_EINVAL;
    }
    json_object_foreach(o, key, v)
    {
        if (!json_is_string(v) || json_string_length(v) == 0) {
            snprintf(error, cap, "eras file %s: the name for \"%.200s\" must be a non-empty string",
                     imp->eras_path, key);
            json_decref(o);
            return UV_EINVAL;
        }
    }
    imp->eras = o;
    return 0;
}

static void list_work(uv_work_t *w)
{
    agent_import_t *imp = w->data;
    if (imp->eras_path[0] && (imp->status = load_eras(imp)) != 0)
        return;
    imp->status = agent_formats_list(&imp->list, imp->fmt, imp->dir, imp->given, imp->ngiven,
                                     imp->run->error, sizeof imp->run->error);
    imp->st.files_skipped += imp->list.skipped;
}

/* ---- a piece of a file (thread pool) -------------------------------------------- */

static void skip_file(agent_import_t *imp, const char *why)
{
    log_warn(AI_TAG, "%s: %s; skipped", imp->list.files[imp->next], why);
    imp->skip_file = true;
    imp->eof = true;
}

/* The offset just after the newline that ends the line at from, reading
 * from at (the line has no newline before it); 0 when the file ends first
 * (or on a read error, or when stopped). */
static uint64_t line_end(agent_import_t *imp, int fd, char *buf, size_t cap, uint64_t at)
{
    for (;;) {
        if (importer__stopping(imp->run))
            return 0;
        ssize_t r = pread(fd, buf, cap, (off_t)at);
        if (r <= 0)
            return 0;
        char *nl = memchr(buf, '\n', (size_t)r);
        if (nl != NULL)
            return at + (uint64_t)(nl - buf) + 1;
        at += (uint64_t)r;
    }
}

static void read_work(uv_work_t *w)
{
    agent_import_t *imp = w->data;
    const char *path = imp->list.files[imp->next];
    imp->status = 0;
    imp->eof = false;
    imp->skip_file = false;
    imp->lines_in_piece = 0;
    /* Opened once beneath DIR (beneath_open_read): a folder or the file
     * swapped for a symbolic link since the listing fails instead of
     * being followed, a FIFO is refused at once instead of waited on; the
     * descriptor is what is read. path is DIR/… as listed. */
    uint64_t size = 0;
    int fd = beneath_open_read(imp->dir, path + strlen(imp->dir) + 1, 0, &size);
    if (fd < 0) {
        skip_file(imp, fd == -ELOOP || fd == -ENOTDIR ? AGENT_FORMATS_LINK_SKIPPED
                       : fd == -EINVAL                ? "not a regular file"
                                                      : strerror(-fd));
        return;
    }
    /* A file rewritten since it was read (shorter than the offset, the
     * offset no longer just after a newline, or another file under the
     * name: another inode) is read again from its start; the messages are
     * keyed, so nothing is stored twice. */
    struct stat st;
    imp->ident[0] = '\0';
    if (fstat(fd, &st) == 0)
        snprintf(imp->ident, sizeof imp->ident, "%llu:%llu", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
    bool replaced = imp->from > 0 && imp->known_ident[0] && imp->ident[0] &&
                    strcmp(imp->known_ident, imp->ident) != 0;
    char before = '\n';
    if (imp->from > 0 && (replaced || size < imp->from ||
                          pread(fd, &before, 1, (off_t)imp->from - 1) != 1 || before != '\n')) {
        log_warn(AI_TAG,
                 "%s: rewritten (%lld bytes; %llu were read before, up to a line's end): read "
                 "again from its start; what was stored stays",
                 path, (long long)size, (unsigned long long)imp->from);
        imp->restarting = true;
        imp->restart = imp->from;
        imp->from = 0;
        imp->first_line = 0;
    }
    /* The next pieces are of this file (the store records it with them). */
    snprintf(imp->known_ident, sizeof imp->known_ident, "%s", imp->ident);
    size_t cap = AGENT_IMPORT_CHUNK;
    char *buf = malloc(cap);
    ssize_t n = buf ? pread(fd, buf, cap, (off_t)imp->from) : -1;
    if (n < 0) {
        int e = buf ? errno : ENOMEM;
        free(buf);
        close(fd);
        if (e == ENOMEM) {
            imp->status = UV_ENOMEM;
            snprintf(imp->run->error, sizeof imp->run->error, "out of memory");
        } else {
            skip_file(imp, strerror(e));
        }
        return;
    }
    /* Only complete lines: up to the last newline (a line still being
     * written waits for the next run). */
    size_t end = (size_t)n;
    while (end > 0 && buf[end - 1] != '\n')
        end--;
    if (end == 0 && (size_t)n == cap) {
        /* A line longer than a piece: read alone, up to
         * AGENT_IMPORT_MAX_LINE bytes and its newline. */
        size_t len = (size_t)n;
        while (end == 0 && len < (size_t)AGENT_IMPORT_MAX_LINE + 1 &&
               !importer__stopping(imp->run)) {
            if (len == cap) {
                size_t ncap = cap * 2 > (size_t)AGENT_IMPORT_MAX_LINE + 1
                                  ? (size_t)AGENT_IMPORT_MAX_LINE + 1
                                  : cap * 2;
                char *nb = realloc(buf, ncap);
                if (nb == NULL)
                    break;
                buf = nb;
                cap = ncap;
            }
            ssize_t r = pread(fd, buf + len, cap - len, (off_t)(imp->from + len));
            if (r <= 0)
                break;
            char *nl = memchr(buf + len, '\n', (size_t)r);
            if (nl != NULL)
                end = (size_t)(nl - buf) + 1;
            len += (size_t)r;
        }
        if (end == 0 && len > (size_t)AGENT_IMPORT_MAX_LINE) {
            /* Too long: skipped up to its newline (none yet: the next run). */
            uint64_t next = line_end(imp, fd, buf, cap, imp->from + len);
            if (next != 0) {
                log_warn(AI_TAG, "%s:%llu: a line of more than %u MiB (%llu bytes); skipped", path,
                         (unsigned long long)imp->first_line + 1, AGENT_IMPORT_MAX_LINE >> 20,
                         (unsigned long long)(next - imp->from - 1));
                imp->st.too_long++;
                imp->lines_in_piece = 1;
                imp->to = next;
                imp->events = strdup("[]");
                if (imp->events == NULL) {
                    imp->status = UV_ENOMEM;
                    snprintf(imp->run->error, sizeof imp->run->error, "out of memory");
                }
                free(buf);
                close(fd);
                return;
            }
        }
    }
    close(fd);
    if (end == 0) {
        free(buf);
        imp->eof = true;
        return;
    }
    uint64_t malformed = 0;
    imp->events =
        imp->fmt->parse(buf, end, path, imp->first_line, &imp->lines_in_piece, &malformed);
    imp->st.malformed += malformed;
    free(buf);
    imp->to = imp->from + end;
    if (imp->events == NULL) {
        imp->status = UV_ENOMEM;
        snprintf(imp->run->error, sizeof imp->run->error, "out of memory");
    }
}

static void read_after(uv_work_t *w, int status);

static void applied(void *data, int status, const char *value, const char *sqlstate,
                    const char *error)
{
    agent_import_t *imp = data;
    (void)sqlstate;
    free(imp->events);
    imp->events = NULL;
    if (status != 0) {
        snprintf(imp->run->error, sizeof imp->run->error, "%s: %s", imp->list.files[imp->next],
                 error);
        finish(imp, status);
        return;
    }
    json_error_t je;
    json_t *r = json_loads(value ? value : "{}", 0, &je);
    if (!json_is_true(json_object_get(r, "skipped"))) {
        size_t i;
        json_t *bad;
        json_array_foreach(json_object_get(r, "badLines"), i, bad)
        {
            log_warn(AI_TAG, "%s:%lld: not stored (%s); skipped", imp->list.files[imp->next],
                     (long long)json_integer_value(json_object_get(bad, "line")),
                     json_string_value(json_object_get(bad, "error")));
            imp->st.refused++;
        }
        if (json_is_true(json_object_get(r, "restarted")))
            imp->st.reread++;
        imp->st.messages += (uint64_t)json_integer_value(json_object_get(r, "messages"));
        imp->st.heaps += (uint64_t)json_integer_value(json_object_get(r, "heaps"));
        imp->st.sessions += json_array_size(json_object_get(r, "newSessions"));
        imp->st.lines += imp->lines_in_piece;
    }
    json_decref(r);
    imp->restarting = false;
    imp->first_line += imp->lines_in_piece;
    imp->from = imp->to;
    if (importer__stopping(imp->run)) {
        finish(imp, UV_ECANCELED);
        return;
    }
    imp->work.data = imp;
    int rc = uv_queue_work(imp->loop, &imp->work, read_work, read_after);
    if (rc != 0)
        finish(imp, rc);
}

static void read_after(uv_work_t *w, int status)
{
    agent_import_t *imp = w->data;
    if (importer__stopping(imp->run) && status == 0 && imp->status == 0) {
        /* Stopped while reading: the pools may be closing; touch nothing. */
        free(imp->events);
        imp->events = NULL;
        finish(imp, UV_ECANCELED);
        return;
    }
    int rc = importer__step_status(imp->run, status, imp->status);
    if (rc != 0) {
        finish(imp, rc);
        return;
    }
    if (imp->eof) {
        if (imp->skip_file)
            imp->st.files_skipped++;
        imp->next++;
        next_file(imp);
        return;
    }
    char from[24], to[24], lines[24], restart[24];
    snprintf(from, sizeof from, "%llu", (unsigned long long)imp->from);
    snprintf(to, sizeof to, "%llu", (unsigned long long)imp->to);
    snprintf(lines, sizeof lines, "%llu", (unsigned long long)imp->lines_in_piece);
    snprintf(restart, sizeof restart, "%llu", (unsigned long long)imp->restart);
    json_t *f = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:O?, s:s?, s:s?}", "source", imp->fmt->source, "path",
        imp->list.files[imp->next], "folder", imp->list.projects[imp->next], "project",
        imp->fmt->project(imp->list.projects[imp->next]), "from", from, "to", to, "lines", lines,
        "eras", imp->eras, "restart", imp->restarting ? restart : NULL, "ident",
        imp->ident[0] ? imp->ident : NULL);
    char *ftext = f ? json_dumps(f, JSON_COMPACT) : NULL;
    json_decref(f);
    const char *params[2] = {ftext ? ftext : "{}", imp->events};
    if (!imp->counted_changed) {
        imp->counted_changed = true;
        imp->st.files_changed++;
    }
    import_progress_waiting(&imp->run->progress, "the database: a batch of transcript events");
    rc = pg_pool_call_timeout(imp->pool, IMPORTER_QUERY_TIMEOUT_MS, "parley_agent_ingest",
                              "SELECT parley_agent_ingest($1::jsonb, $2::jsonb)::text", 2, params,
                              applied, imp, NULL);
    free(ftext);
    if (rc != 0) {
        free(imp->events);
        imp->events = NULL;
        snprintf(imp->run->error, sizeof imp->run->error, "the database is busy: %s",
                 uv_strerror(rc));
        finish(imp, rc);
    }
}

/* ---- per file -------------------------------------------------------------------- */

static void got_offset(void *data, int status, const char *value, const char *sqlstate,
                       const char *error)
{
    agent_import_t *imp = data;
    (void)sqlstate;
    if (status != 0) {
        snprintf(imp->run->error, sizeof imp->run->error, "%s", error);
        finish(imp, status);
        return;
    }
    /* Line numbers count from the file's start: the lines read before. */
    json_t *r = json_loads(value ? value : "{}", 0, NULL);
    imp->from = (uint64_t)json_integer_value(json_object_get(r, "readTo"));
    imp->first_line = (uint64_t)json_integer_value(json_object_get(r, "lines"));
    const char *ident = json_string_value(json_object_get(r, "ident"));
    snprintf(imp->known_ident, sizeof imp->known_ident, "%s", ident ? ident : "");
    json_decref(r);
    imp->restarting = false;
    imp->counted_changed = false;
    imp->work.data = imp;
    import_progress_waiting(&imp->run->progress, "reading a transcript");
    int rc = uv_queue_work(imp->loop, &imp->work, read_work, read_after);
    if (rc != 0)
        finish(imp, rc);
}

static void next_file(agent_import_t *imp)
{
    if (importer__stopping(imp->run)) {
        finish(imp, UV_ECANCELED);
        return;
    }
    import_progress_report(&imp->run->progress, imp->next, imp->list.nfiles, imp->st.messages,
                           false);
    if (imp->next >= imp->list.nfiles) {
        finish(imp, 0);
        return;
    }
    imp->st.files++;
    const char *params[1] = {imp->list.files[imp->next]};
    int rc =
        pg_pool_call(imp->pool, "parley_agent_file_state",
                     "SELECT parley_agent_file_state($1)::text", 1, params, got_offset, imp, NULL);
    if (rc != 0) {
        snprintf(imp->run->error, sizeof imp->run->error, "the database is busy: %s",
                 uv_strerror(rc));
        finish(imp, rc);
    }
}

static void named_eras(void *data, int status, const char *value, const char *sqlstate,
                       const char *error)
{
    agent_import_t *imp = data;
    (void)sqlstate;
    if (status != 0) {
        snprintf(imp->run->error, sizeof imp->run->error, "naming eras: %s", error);
        finish(imp, status);
        return;
    }
    if (value && strcmp(value, "0") != 0)
        log_info(AI_TAG, "%s era(s) renamed from %s", value, imp->eras_path);
    next_file(imp);
}

static void list_after(uv_work_t *w, int status)
{
    agent_import_t *imp = w->data;
    int rc = importer__step_status(imp->run, status, imp->status);
    if (rc != 0) {
        finish(imp, rc);
        return;
    }
    log_info(AI_TAG, "%zu transcript file(s) under %s", imp->list.nfiles, imp->dir);
    if (imp->eras == NULL) {
        next_file(imp);
        return;
    }
    /* Eras imported before get the file's names too; new ones get them as
     * their files are applied. */
    char *names = json_dumps(imp->eras, JSON_COMPACT);
    const char *params[1] = {names ? names : "{}"};
    rc = pg_pool_call(imp->pool, "parley_agent_name_eras",
                      "SELECT parley_agent_name_eras($1::jsonb)", 1, params, named_eras, imp, NULL);
    free(names);
    if (rc != 0) {
        snprintf(imp->run->error, sizeof imp->run->error, "the database is busy: %s",
                 uv_strerror(rc));
        finish(imp, rc);
    }
}

/* ---- the source (importer.h) --------------------------------------------- */

static void free_given(agent_import_t *imp)
{
    for (size_t i = 0; i < imp->ngiven; i++)
        free(imp->given[i]);
    free(imp->given);
}

static int start(const agent_format_t *fmt, const importer_env_t *env, importer_run_t *run,
                 void **impl, char *err, size_t errcap)
{
    /* Paths below the folder are built in buffers a few KiB long: a
     * folder named by a path this long is refused, never cut. */
    if (strlen(env->path) >= AGENT_IMPORT_DIR_MAX) {
        snprintf(err, errcap, "%.200s...: a folder path of at most %d bytes", env->path,
                 AGENT_IMPORT_DIR_MAX - 1);
        return UV_ENAMETOOLONG;
    }
    agent_import_t *imp = calloc(1, sizeof *imp);
    *impl = imp;
    if (imp == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    imp->fmt = fmt;
    imp->run = run;
    if (env->files != NULL) {
        /* Copied: the list is the caller's only until start returns. */
        imp->given = calloc(env->nfiles + 1, sizeof *imp->given);
        for (size_t i = 0; imp->given && i < env->nfiles; i++, imp->ngiven++)
            if ((imp->given[i] = strdup(env->files[i])) == NULL)
                break;
        if (imp->given == NULL || imp->ngiven < env->nfiles) {
            snprintf(err, errcap, "out of memory");
            return UV_ENOMEM;
        }
    }
    imp->loop = env->loop;
    imp->pool = env->pool;
    snprintf(imp->dir, sizeof imp->dir, "%s", env->path);
    snprintf(imp->eras_path, sizeof imp->eras_path, "%s", env->eras ? env->eras : "");
    imp->work.data = imp;
    import_progress_init(&run->progress, env->loop, AI_TAG, "files", env->progress,
                         env->progress_ms);
    return uv_queue_work(env->loop, &imp->work, list_work, list_after);
}

/* Only once the import ended (the thread-pool work is over). */
static void source_free(void *impl)
{
    agent_import_t *imp = impl;
    agent_formats_listing_free(&imp->list);
    free_given(imp);
    free(imp->events);
    json_decref(imp->eras);
    free(imp);
}

static void source_summary(const void *impl, char *out, size_t cap, bool *changed)
{
    const agent_import_stats_t *st = &((const agent_import_t *)impl)->st;
    *changed = st->files_changed > 0;
    snprintf(out, cap,
             "imported %llu transcript file%s (%llu with new lines): %llu lines, %llu new "
             "session%s, %llu messages, %llu context heaps; %llu malformed line%s skipped, %llu "
             "over %u MiB skipped, %llu not stored, %llu file%s skipped (not regular or "
             "unreadable), %llu read again from the start",
             (unsigned long long)st->files, st->files == 1 ? "" : "s",
             (unsigned long long)st->files_changed, (unsigned long long)st->lines,
             (unsigned long long)st->sessions, st->sessions == 1 ? "" : "s",
             (unsigned long long)st->messages, (unsigned long long)st->heaps,
             (unsigned long long)st->malformed, st->malformed == 1 ? "" : "s",
             (unsigned long long)st->too_long, AGENT_IMPORT_MAX_LINE >> 20,
             (unsigned long long)st->refused, (unsigned long long)st->files_skipped,
             st->files_skipped == 1 ? "" : "s", (unsigned long long)st->reread);
}

static int source_start(const importer_env_t *env, importer_run_t *run, void **impl, char *err,
                        size_t errcap)
{
    return start(&agent_formats_claude, env, run, impl, err, errcap);
}

static int codex_start(const importer_env_t *env, importer_run_t *run, void **impl, char *err,
                       size_t errcap)
{
    return start(&agent_formats_codex, env, run, impl, err, errcap);
}

const importer_def_t agent_import_source = {
    .name = "claude-code",
    .follow_dir = true,
    .args = "[DIR]",
    .min_args = 0,
    .max_args = 1,
    .default_arg = ".claude/projects",
    .what = "import agents' session transcripts (DIR/PROJECT/*.jsonl; default ~/.claude/projects); "
            "incremental and idempotent; --eras FILE names the eras",
    .help = "DIR holds one folder per project with the sessions' JSON Lines transcripts (default\n"
            "~/.claude/projects). Only what was appended since the last import is read; a\n"
            "transcript that shrank or was rewritten is read again from its start (nothing is\n"
            "stored twice). Entries that are not regular files, malformed lines, lines over the\n"
            "limit and events the store refuses are skipped with a warning naming file and line;\n"
            "the summary counts them. --eras FILE (a JSON object {\"KEY\": \"Era name\"}, KEY a\n"
            "project folder or a working directory) names the eras.\n",
    .start = source_start,
    .summary = source_summary,
    .free = source_free,
};

const importer_def_t codex_import_source = {
    .name = "codex",
    .follow_dir = true,
    .args = "DIR",
    .min_args = 1,
    .max_args = 1,
    .default_arg = NULL,
    .what = "import Codex CLI sessions (DIR/YYYY/MM/DD/rollout-*.jsonl: ~/.codex/sessions or "
            "$CODEX_HOME/sessions); incremental and idempotent",
    .help = "DIR is Codex CLI's sessions folder (usually ~/.codex/sessions, or\n"
            "$CODEX_HOME/sessions), its rollouts in date folders. Each session lands among the\n"
            "agents' sessions, grouped by its working directory (its project): the words of\n"
            "the user and the agent once each, reasoning summaries (never the encrypted\n"
            "reasoning), tool calls with their outputs, and a compaction's summary as the\n"
            "continuation. Only what was appended since the last import is read; a rollout\n"
            "that shrank or was rewritten is read again from its start (nothing is stored\n"
            "twice). Malformed lines and entries that are not regular files are skipped with\n"
            "a warning naming file and line; the summary counts them. --eras FILE (a JSON\n"
            "object {\"WORKING_DIRECTORY\": \"Era name\"}) names the eras.\n",
    .start = codex_start,
    .summary = source_summary,
    .free = source_free,
};
