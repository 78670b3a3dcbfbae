/* app_stack: the parts the entry started (pools, the MCP server,
 * connectors, endpoints, an import, ...), kept in start order so that
 * shutdown stops, drains, closes, disposes and frees them in reverse: a
 * part is closed only after every part started after it (which may use
 * it) has closed. Replaces hand-kept close callbacks and counters: the
 * entry pushes each part as it starts it and closes the stack once.
 *
 * Each part is an object and a table of optional functions (NULL: nothing
 * to do at that stage). Parts close one at a time, newest first; a part's
 * close calls app_stack_next once it is closed, from any callback later
 * (never from inside close itself is fine too). */
#ifndef PARLEY_APP_STACK_H
#define PARLEY_APP_STACK_H

#include <stdbool.h>

/* Parts at most: pools, listener, MCP server, archive, clients, memory,
 * connectors, pages, jobs, toolsets, endpoints, search, followers. */
#define APP_STACK_MAX 64

typedef struct app_stack_s app_stack_t;

typedef struct app_part_ops_s {
    const char *name;
    void (*stop)(void *obj);                  /* stop taking new work */
    bool (*idle)(const void *obj);            /* nothing in flight (NULL: idle) */
    void (*close)(void *obj, app_stack_t *s); /* then app_stack_next(s) once closed */
    bool (*dispose)(void *obj);               /* after uv_run: true if it must run again */
    void (*free)(void *obj);                  /* last, after the loop ended */
} app_part_ops_t;

typedef struct app_part_s {
    const app_part_ops_t *ops;
    void *obj;
} app_part_t;

struct app_stack_s {
    app_part_t parts[APP_STACK_MAX];
    int n;
    int closing; /* the part being closed; parts above it are closed */
    bool started_closing;
    void (*done)(app_stack_t *s); /* every part closed */
    void *data;                   /* the owner's */
};

/* Pushes a started part. UV_ENOSPC when the stack is full (a bug: raise
 * APP_STACK_MAX); obj is then not owned. */
int app_stack_push(app_stack_t *s, const app_part_ops_t *ops, void *obj);
/* Inserts a started part at index at (0: the oldest), before the parts
 * from at up, which then close before it; while nothing closes yet. */
int app_stack_insert(app_stack_t *s, int at, const app_part_ops_t *ops, void *obj);
/* Every part's stop, newest first. */
void app_stack_stop(app_stack_t *s);
/* True when every part is idle. */
__attribute__((warn_unused_result)) bool app_stack_idle(const app_stack_t *s);
/* Closes the parts one after the other, newest first; done(s) once the
 * oldest is closed (at once when there is none). Once only. */
void app_stack_close(app_stack_t *s, void (*done)(app_stack_t *s));
/* The part being closed is closed: the next one. */
void app_stack_next(app_stack_t *s);
/* app_stack_next for a library's close callback that carries a data
 * pointer (the stack). */
void app_stack_next_cb(void *stack);
/* Every part's dispose; true when one asks for another loop run (the
 * entry runs it again anyway, for its own handles). */
bool app_stack_dispose(app_stack_t *s);
/* Every part's free, newest first; the stack is empty afterwards. */
void app_stack_free(app_stack_t *s);

#endif
