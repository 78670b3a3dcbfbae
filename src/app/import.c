/* app_import: one run of `parleyd import SOURCE`, after the migrations:
 * the word forms' target is set (so that the trigger fills the forms of
 * the rows as they load), the source's importer runs (found by name in
 * import/importers.c), its summary is logged, then the word forms are
 * brought into use as serve would (archive/search_forms.h: the rows
 * written before the list was asked for filled, the index built, the
 * search switched, with its progress lines), so that the first search of
 * the next serve already matches every form; then the words the rows
 * appended are merged into the fuzzy search's vocabulary, and the command
 * ends. The importer is a part
 * on the entry's stack: a signal stops it at its next step. Its progress
 * lines come every IMPORT_PROGRESS_MS; the environment variable
 * PARLEY_IMPORT_PROGRESS_MS (not a setting: for tests, which watch the
 * lines of a small import) gives another interval. Before any of it
 * (import_check, run before the database starts) the path must be there:
 * a missing one fails at once, no cluster made. */
#include "app/steps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive/search_forms.h"
#include "import/importers.h"
#include "import/progress.h"
#include "util/log.h"

/* Calls of the word forms' step that may give up waiting for the other
 * writers of messages (7 s each: parley_messages_hold_writers), or lose a
 * deadlock to one, before the import fails: about fourteen minutes, as
 * long as another daemon's index build on a large store may hold
 * messages; a line every twelve says so. */
#define IMPORT_FORMS_WAITS 120

static void import_stop(void *obj)
{
    importer_stop(obj);
}

static bool import_idle(const void *obj)
{
    return importer_done(obj);
}

static void import_free(void *obj)
{
    importer_free(obj);
}

static const app_part_ops_t import_part = {
    .name = "import", .stop = import_stop, .idle = import_idle, .free = import_free};

static void merge_words(app_t *a);

static void words_merged(void *data, int status, const char *value, const char *sqlstate,
                         const char *error)
{
    (void)sqlstate;
    app_t *a = data;
    if (status == 0) {
        long long n = value ? strtoll(value, NULL, 10) : 0;
        a->words_merged += n;
        if (n >= SEARCH_WORDS_MERGE_BATCH && a->state == APP_STARTING) {
            merge_words(a);
            return;
        }
        log_info(APP_TAG, "%lld new words merged into the fuzzy search's vocabulary",
                 a->words_merged);
    } else if (status != UV_ECANCELED) {
        log_warn(APP_TAG, "merging the new words into the vocabulary: %s (the next serve does)",
                 error ? error : uv_strerror(status));
    }
    app_shutdown(a, APP_EXIT_OK);
}

/* SEARCH_WORDS_MERGE_BATCH rows a statement (search_forms.c does it while
 * serving; after an import alone the fuzzy search would read them
 * unmerged), then the command ends. */
static void merge_words(app_t *a)
{
    char batch[16];
    snprintf(batch, sizeof batch, "%d", SEARCH_WORDS_MERGE_BATCH);
    const char *p[] = {batch};
    int rc = pg_pool_call(a->rw, NULL, "SELECT parley_search_words_merge($1::integer)", 1, p,
                          words_merged, a, NULL);
    if (rc != 0) {
        log_warn(APP_TAG, "merging the new words into the vocabulary: %s", uv_strerror(rc));
        app_shutdown(a, APP_EXIT_OK);
    }
}

/* The word forms are in use: the builder stops (its vocabulary work is
 * serve's), the words are merged. Or they could not be brought in: an
 * unknown configuration (which the target step would have refused
 * already) fails the command; a failed statement (fail-fast: a lost
 * connection, a full disk) leaves them to the next serve, with a warning,
 * and the import still ends 0, its rows stored. */
static void forms_ready(search_forms_t *sf, int status)
{
    app_t *a = search_forms_data(sf);
    if (status == UV_EINVAL) {
        app_fatal(a, "search", search_forms_error(sf));
        return;
    }
    if (status != 0)
        log_warn(APP_TAG,
                 "the search's word forms or indexes not all brought into use (%s); the next "
                 "serve does (its searches say so while the forms are missing)",
                 search_forms_error(sf));
    search_forms_stop(sf);
    if (a->state == APP_STARTING)
        merge_words(a);
}

static void imported(importer_t *imp, int status)
{
    app_t *a = importer_data(imp);
    if (status != 0) {
        log_error(APP_TAG, "import failed: %s", importer_error(imp));
        app_shutdown(a, APP_EXIT_FAILURE);
        return;
    }
    char line[1024];
    bool changed;
    importer_summary(imp, line, sizeof line, &changed);
    log_info(APP_TAG, "%s", line);
    if (a->state != APP_STARTING) /* stopped meanwhile: the forms are serve's */
        return;
    const config_t *cfg = a->cfg;
    search_forms_t *sf = NULL;
    char why[CONFIG_ERR_MAX] = "";
    int rc = search_forms_start(&a->loop, &a->conninfo, a->rw, cfg->search_languages,
                                cfg->search_fill_batch, (uint32_t)cfg->db_connect_timeout_ms,
                                forms_ready, a, &sf, why, sizeof why);
    if (rc != 0) {
        app_fatal(a, "search_languages", why);
        return;
    }
    search_forms_fail_fast(sf);
    (void)app_push(a, &app_forms_part, sf);
}

/* The interval between progress lines: PARLEY_IMPORT_PROGRESS_MS when it
 * is a number of milliseconds in range, else 0 (the default). */
static uint64_t progress_interval(void)
{
    const char *v = getenv("PARLEY_IMPORT_PROGRESS_MS");
    if (v == NULL || *v == '\0')
        return 0;
    char *end;
    long ms = strtol(v, &end, 10);
    if (*end != '\0' || ms < IMPORT_PROGRESS_MS_MIN || ms > IMPORT_PROGRESS_MS_MAX) {
        log_warn(APP_TAG, "PARLEY_IMPORT_PROGRESS_MS: '%s' is not %d..%d ms; using %d", v,
                 IMPORT_PROGRESS_MS_MIN, IMPORT_PROGRESS_MS_MAX, IMPORT_PROGRESS_MS);
        return 0;
    }
    return (uint64_t)ms;
}

static void import_start(app_t *a);

static void target_set(void *data, int status, const char *value, const char *sqlstate,
                       const char *error)
{
    (void)value;
    app_t *a = data;
    if (status != 0 && (strcmp(sqlstate, "55P03") == 0 || strcmp(sqlstate, "40P01") == 0) &&
        a->state == APP_STARTING && ++a->forms_waits < IMPORT_FORMS_WAITS) {
        /* A new list waits for the writers of messages (7 s a call,
         * parley_search_forms_step): another daemon or import is writing,
         * or building an index on it. */
        if (a->forms_waits % 12 == 1)
            log_info(APP_TAG,
                     "search_languages: waiting for the other writers of messages (another "
                     "daemon or import, or an index being built) to end (try %d)",
                     a->forms_waits);
        import_start(a);
        return;
    }
    if (status != 0) {
        app_fatal(a, "search", error ? error : uv_strerror(status));
        return;
    }
    if (a->state != APP_STARTING)
        return;
    const config_t *cfg = a->cfg;
    importer_env_t env = {.loop = &a->loop,
                          .pool = a->rw,
                          .conninfo = &a->conninfo,
                          .path = cfg->import_path,
                          .data_dir = cfg->data_dir,
                          .tz = cfg->tz,
                          .eras = cfg->eras,
                          .progress = true,
                          .progress_ms = progress_interval()};
    const importer_def_t *def = importers_find(cfg->import_source);
    char err[CONFIG_ERR_MAX];
    importer_t *imp = NULL;
    int rc = def ? importer_start(def, &env, imported, a, &imp, err, sizeof err) : UV_EINVAL;
    if (rc != 0) {
        app_fatal(a, "import", def ? err : "no such source");
        return;
    }
    (void)app_push(a, &import_part, imp);
}

static void import_start(app_t *a)
{
    const char *p[] = {a->cfg->search_languages};
    int rc = pg_pool_call(a->rw, NULL, "SELECT parley_search_forms_step($1::text)", 1, p,
                          target_set, a, NULL);
    if (rc != 0)
        app_fatal(a, "search", uv_strerror(rc));
}

/* Before any database work (no cluster created, started or joined): the
 * path the source reads is there and readable, and a folder given for a
 * source that reads one file in it (folder_file: telegram-export's
 * result.json, ChatWise's app.db) holds that file. What the file holds is
 * the importer's to judge. */
static int import_check(const config_t *cfg, char *err, size_t errcap)
{
    const importer_def_t *def = importers_find(cfg->import_source);
    const char *path = cfg->import_path;
    struct stat st;
    if (def == NULL) {
        snprintf(err, errcap, "no import source '%s'", cfg->import_source);
        return UV_EINVAL;
    }
    if (stat(path, &st) != 0 || access(path, R_OK) != 0) {
        int e = errno;
        snprintf(err, errcap, "%s: %s (parleyd import %s %s: see parleyd import %s --help)", path,
                 strerror(e), def->name, def->args, def->name);
        return -e;
    }
    if (S_ISDIR(st.st_mode) && def->folder_file != NULL) {
        char file[CONFIG_PATH_MAX + 64];
        snprintf(file, sizeof file, "%s/%s", path, def->folder_file);
        if (stat(file, &st) != 0) {
            int e = errno;
            snprintf(err, errcap, "%s: the folder has no %s (%s: %s; see parleyd import %s --help)",
                     path, def->folder_file, file, strerror(e), def->name);
            return -e;
        }
    }
    return 0;
}

const app_step_t app_step_import = {.cmd = CLI_CMD_IMPORT,
                                    .name = "import",
                                    .after = APP_AFTER_MIGRATIONS,
                                    .check = import_check,
                                    .start = import_start};
