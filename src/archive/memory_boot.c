/* memory_boot: bootstrap_memory's sequence over a memory source (see
 * memory_boot.h). */
#include "archive/memory_boot.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>

struct memory_boot_s {
    memory_source_t *src;
    memory_fit_t fit;
    char *era_name, *project;
    void (*progress)(void *data, int step, int total);
    memory_cb cb;
    void *data;
    void *handle; /* the source call in flight */
    bool cancelled;
    int step;
};

static void boot_free(memory_boot_t *b)
{
    memory_fit_free(&b->fit);
    free(b->era_name);
    free(b->project);
    free(b);
}

static void boot_step(memory_boot_t *b);

static void boot_got(void *data, int status, const char *json, archive_err_t err,
                     const char *message)
{
    memory_boot_t *b = data;
    b->handle = NULL;
    if (status != 0) {
        b->cb(b->data, status, NULL, err, message);
        boot_free(b);
        return;
    }
    json_error_t je;
    json_t *v = json_loads(json, JSON_DECODE_ANY, &je);
    if (b->step == 0)
        memory_fit_continuation(&b->fit, v);
    else if (b->step == 1)
        memory_fit_before(&b->fit, v);
    else
        memory_fit_era(&b->fit, v);
    json_decref(v);
    b->step++;
    boot_step(b);
}

/* The arguments of step b->step. */
static json_t *step_args(memory_boot_t *b)
{
    json_t *args;
    if (b->step == 0) {
        args = json_object();
    } else if (b->step == 1) {
        json_t *cont = json_object_get(b->fit.out, "continuation");
        if (json_is_object(cont))
            args = json_pack("{s:O, s:i}", "reference_id", json_object_get(cont, "message_id"),
                             "limit", MEMORY_BOOT_FETCH);
        else
            args = json_pack("{s:s, s:i}", "reference_timestamp", "9999-12-31T00:00:00Z", "limit",
                             MEMORY_BOOT_FETCH);
    } else if (b->era_name != NULL || strcmp(b->src->name, "store") != 0) {
        /* The era named, else memory-lane's foundational one by its name. */
        args =
            json_pack("{s:s, s:i}", "era_name", b->era_name ? b->era_name : MEMORY_FOUNDATION_ERA,
                      "limit", MEMORY_BOOT_FETCH);
    } else {
        /* parley's store: the earliest era of the project worked on last
         * (imported transcripts have one era a project). */
        args = json_pack("{s:b, s:i}", "foundational", 1, "limit", MEMORY_BOOT_FETCH);
    }
    if (args && b->project)
        json_object_set_new(args, "project", json_string(b->project));
    return args;
}

/* Asks the source for step b->step; 0, or a negative code (no call
 * back). */
static int boot_ask(memory_boot_t *b)
{
    static const char *const what[MEMORY_BOOT_STEPS] = {"latest_continuation", "messages_before",
                                                        "era_summary"};
    if (b->progress)
        b->progress(b->data, b->step, MEMORY_BOOT_STEPS);
    json_t *args = step_args(b);
    char *text = args ? json_dumps(args, JSON_COMPACT) : NULL;
    json_decref(args);
    int rc =
        text ? b->src->call(b->src->impl, what[b->step], text, boot_got, b, &b->handle) : UV_ENOMEM;
    free(text);
    return rc;
}

static void boot_step(memory_boot_t *b)
{
    if (b->step == MEMORY_BOOT_STEPS || b->cancelled) {
        char *text = memory_fit_json(&b->fit);
        if (text == NULL)
            b->cb(b->data, UV_ENOMEM, NULL, ARCHIVE_ERR_INTERNAL, "out of memory");
        else
            b->cb(b->data, 0, text, ARCHIVE_ERR_NONE, NULL);
        free(text);
        boot_free(b);
        return;
    }
    if (boot_ask(b) != 0) {
        b->cb(b->data, UV_EBUSY, NULL, ARCHIVE_ERR_BUSY, "The memory source is busy");
        boot_free(b);
    }
}

int memory_boot_start(memory_source_t *src, const memory_boot_opts_t *opts, memory_cb cb,
                      void *data, memory_boot_t **out)
{
    memory_boot_t *b = calloc(1, sizeof *b);
    if (b == NULL)
        return UV_ENOMEM;
    b->src = src;
    b->cb = cb;
    b->data = data;
    b->progress = opts->progress;
    if ((opts->era_name && (b->era_name = strdup(opts->era_name)) == NULL) ||
        (opts->project && (b->project = strdup(opts->project)) == NULL) ||
        memory_fit_init(&b->fit, opts->token_budget, opts->project) != 0) {
        boot_free(b);
        return UV_ENOMEM;
    }
    *out = b;
    int rc = boot_ask(b);
    if (rc != 0) {
        *out = NULL;
        boot_free(b);
    }
    return rc;
}

void memory_boot_cancel(memory_boot_t *b)
{
    b->cancelled = true;
    if (b->handle)
        b->src->cancel(b->src->impl, b->handle);
}
