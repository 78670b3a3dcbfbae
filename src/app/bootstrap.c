/* app_bootstrap: one run of `parleyd bootstrap`, for a session-start hook
 * or a person: a project's memory of earlier agent sessions, what
 * bootstrap_memory answers (archive/memory_boot.h: the latest
 * continuation, the work before it, the foundational era, within the
 * token budget) for that project's sessions only, printed on stdout as
 * plain text (archive/memory_fit.h), or with --hook as the answer of a
 * SessionStart hook (Claude Code's and Codex's shape:
 * {"hookSpecificOutput": {"hookEventName": "SessionStart",
 * "additionalContext": TEXT}}).
 *
 * The project is a session's working directory: --project DIR, else with
 * --hook the hook input's cwd, else the current directory. A project with
 * no stored session answers nothing (an empty context, never another
 * project's memory), says so on stderr, and exits 0.
 *
 * Before the loop, app_bootstrap_prepare reads the hook's JSON from stdin
 * (a bounded read: BOOT_HOOK_INPUT_MAX) and resolves the project; after
 * the migrations (the database as every command opens it: a serving
 * daemon's embedded cluster is joined, not started again),
 * bootstrap_start runs the sequence on the read-write pool through
 * the archive, prints, and ends the command. Nothing but the answer goes
 * to stdout. */
#include "app/steps.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive/archive.h"
#include "archive/memory_boot.h"
#include "archive/memory_store.h"
#include "util/log.h"

/* The largest hook input read (Claude Code's SessionStart JSON is a few
 * hundred bytes). */
#define BOOT_HOOK_INPUT_MAX (64 * 1024)

/* ---- before the loop ----------------------------------------------------------- */

/* stdin, whole, at most BOOT_HOOK_INPUT_MAX bytes (malloc'd), or NULL with
 * err. */
static char *read_stdin(char *err, size_t errcap)
{
    char *buf = malloc(BOOT_HOOK_INPUT_MAX + 1);
    size_t len = 0;
    if (buf == NULL) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    for (;;) {
        ssize_t n = read(0, buf + len, BOOT_HOOK_INPUT_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, errcap, "--hook: reading stdin: %s", strerror(errno));
            free(buf);
            return NULL;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > BOOT_HOOK_INPUT_MAX) {
            snprintf(err, errcap, "--hook: the input on stdin is over %d bytes",
                     BOOT_HOOK_INPUT_MAX);
            free(buf);
            return NULL;
        }
    }
    buf[len] = '\0';
    return buf;
}

/* The hook's input: a JSON object of a SessionStart event whose cwd is
 * the project (unless --project named one). */
static int read_hook(config_t *cfg, char *err, size_t errcap)
{
    char *in = read_stdin(err, errcap);
    if (in == NULL)
        return UV_EINVAL;
    json_error_t je;
    json_t *v = json_loads(in, 0, &je);
    free(in);
    int rc = 0;
    const char *event = json_string_value(json_object_get(v, "hook_event_name"));
    const char *cwd = json_string_value(json_object_get(v, "cwd"));
    if (!json_is_object(v)) {
        snprintf(err, errcap,
                 "--hook: stdin is not a hook's JSON object (%s at line %d); the hook gives "
                 "{\"hook_event_name\": \"SessionStart\", \"cwd\": ..., \"source\": ..., "
                 "\"session_id\": ...}",
                 je.text, je.line);
        rc = UV_EINVAL;
    } else if (event != NULL && strcmp(event, "SessionStart") != 0) {
        snprintf(err, errcap,
                 "--hook answers SessionStart hooks, not %.64s (configure it under "
                 "SessionStart)",
                 event);
        rc = UV_EINVAL;
    } else if (cfg->boot_project[0] == '\0') {
        if (cwd == NULL || cwd[0] != '/' || strlen(cwd) >= sizeof cfg->boot_project) {
            snprintf(err, errcap,
                     "--hook: the hook's JSON has no absolute \"cwd\" (or give --project DIR)");
            rc = UV_EINVAL;
        } else {
            snprintf(cfg->boot_project, sizeof cfg->boot_project, "%s", cwd);
        }
    }
    json_decref(v);
    return rc;
}

int app_bootstrap_prepare(config_t *cfg, char *err, size_t errcap)
{
    if (cfg->boot_hook) {
        int rc = read_hook(cfg, err, errcap);
        if (rc != 0)
            return rc;
    }
    if (cfg->boot_project[0] == '\0') {
        if (getcwd(cfg->boot_project, sizeof cfg->boot_project) == NULL) {
            snprintf(err, errcap, "bootstrap: the current directory: %s (give --project DIR)",
                     strerror(errno));
            return UV_EINVAL;
        }
    } else if (cfg->boot_project[0] != '/') {
        /* A relative directory: the one it names from here. */
        char abs[PATH_MAX];
        if (realpath(cfg->boot_project, abs) == NULL || strlen(abs) >= sizeof cfg->boot_project) {
            snprintf(err, errcap, "--project: %.200s: %s (a project is a directory)",
                     cfg->boot_project, strerror(errno));
            return UV_EINVAL;
        }
        memcpy(cfg->boot_project, abs, strlen(abs) + 1);
    }
    return 0;
}

/* ---- on the loop ---------------------------------------------------------------- */

typedef struct boot_run_s {
    app_t *a;
    memory_boot_t *boot; /* in flight, or NULL */
} boot_run_t;

static void run_stop(void *obj)
{
    boot_run_t *r = obj;
    if (r->boot)
        memory_boot_cancel(r->boot);
}

static bool run_idle(const void *obj)
{
    return ((const boot_run_t *)obj)->boot == NULL;
}

static void run_free(void *obj)
{
    free(obj);
}

static void archive_part_free(void *obj)
{
    archive_free(obj);
}

static void store_part_free(void *obj)
{
    memory_store_free(obj);
}

static const app_part_ops_t run_part = {
    .name = "bootstrap", .stop = run_stop, .idle = run_idle, .free = run_free};
static const app_part_ops_t archive_part = {.name = "archive", .free = archive_part_free};
static const app_part_ops_t store_part = {.name = "memory", .free = store_part_free};

/* Writes the answer: text, or the hook's JSON around it. */
static int print_answer(const config_t *cfg, const char *text)
{
    if (!cfg->boot_hook)
        return fputs(text, stdout) < 0 || fflush(stdout) != 0 ? UV_EIO : 0;
    json_t *out = json_pack("{s:{s:s, s:s}}", "hookSpecificOutput", "hookEventName", "SessionStart",
                            "additionalContext", text);
    char *s = out ? json_dumps(out, JSON_COMPACT) : NULL;
    json_decref(out);
    int rc = s == NULL                                         ? UV_ENOMEM
             : fputs(s, stdout) < 0 || fputc('\n', stdout) < 0 ? UV_EIO
             : fflush(stdout) != 0                             ? UV_EIO
                                                               : 0;
    free(s);
    return rc;
}

static void booted(void *data, int status, const char *json, archive_err_t err, const char *message)
{
    (void)err;
    boot_run_t *r = data;
    app_t *a = r->a;
    const config_t *cfg = a->cfg;
    r->boot = NULL;
    if (status != 0) {
        fprintf(stderr, "parleyd: bootstrap: %s\n", message ? message : uv_strerror(status));
        app_shutdown(a, APP_EXIT_FAILURE);
        return;
    }
    json_error_t je;
    json_t *answer = json_loads(json, 0, &je);
    char *text = NULL;
    if (answer != NULL && memory_fit_empty(answer)) {
        fprintf(stderr,
                "parleyd: bootstrap: no earlier session is stored for the project %s (sessions "
                "are grouped by their working directory; import or follow its transcripts: "
                "parleyd import claude-code); the context is empty\n",
                cfg->boot_project);
        text = strdup("");
    } else if (answer != NULL) {
        text = memory_fit_text(answer, (long)cfg->boot_token_budget * MEMORY_CHARS_PER_TOKEN);
    }
    json_decref(answer);
    int rc = text ? print_answer(cfg, text) : UV_ENOMEM;
    free(text);
    if (rc != 0) {
        fprintf(stderr, "parleyd: bootstrap: writing the answer: %s\n", uv_strerror(rc));
        app_shutdown(a, APP_EXIT_FAILURE);
        return;
    }
    app_shutdown(a, APP_EXIT_OK);
}

static void bootstrap_start(app_t *a)
{
    archive_t *ar = NULL;
    memory_store_t *ms = NULL;
    int rc = archive_new(a->rw, a->rw, false, &ar);
    if (rc != 0) {
        app_fatal(a, "bootstrap", uv_strerror(rc));
        return;
    }
    if (app_push(a, &archive_part, ar) != 0) {
        archive_free(ar);
        return;
    }
    if ((rc = memory_store_new(ar, &ms)) != 0) {
        app_fatal(a, "bootstrap", uv_strerror(rc));
        return;
    }
    if (app_push(a, &store_part, ms) != 0) {
        memory_store_free(ms);
        return;
    }
    boot_run_t *r = calloc(1, sizeof *r);
    if (r == NULL) {
        app_fatal(a, "bootstrap", "out of memory");
        return;
    }
    r->a = a;
    if (app_push(a, &run_part, r) != 0) {
        free(r);
        return;
    }
    memory_boot_opts_t o = {.token_budget = a->cfg->boot_token_budget,
                            .project = a->cfg->boot_project};
    rc = memory_boot_start(memory_store_source(ms), &o, booted, r, &r->boot);
    if (rc != 0)
        app_fatal(a, "bootstrap", uv_strerror(rc));
}

const app_step_t app_step_bootstrap = {.cmd = CLI_CMD_BOOTSTRAP,
                                       .name = "bootstrap",
                                       .after = APP_AFTER_MIGRATIONS,
                                       .start = bootstrap_start};
