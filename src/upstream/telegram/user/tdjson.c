/* tdjson: TDLib's JSON interface on the loop (see tdjson.h): the library
 * loaded with dlopen, the receiving thread and its bounded queue, and the
 * clients with their requests matched by "@extra". */
#include "upstream/telegram/user/tdjson.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/queue.h"

#define TDJSON_TICK_MS 250 /* how often deadlines are checked */

struct tdjson_s {
    uv_loop_t *loop;
    void *lib;
    int (*create)(void);
    void (*send)(int client, const char *request);
    const char *(*receive)(double timeout);
    const char *(*execute)(const char *request);

    /* Shared with the receiving thread, under mu. */
    uv_mutex_t mu;
    uv_cond_t room; /* signalled when the loop took objects or stop is set */
    json_t *ring[TDJSON_QUEUE_MAX];
    size_t head, len;
    bool stop, thread_done;

    uv_thread_t thread;
    uv_async_t async;
    queue_node_t clients;
    bool closing;
    void (*closed_cb)(void *data);
    void *closed_data;
};

typedef enum { TDC_OPEN = 0, TDC_CLOSING, TDC_CLOSED } tdc_state_t;

struct tdjson_client_s {
    tdjson_t *td;
    int id;
    queue_node_t node; /* in td->clients while not closed */
    tdc_state_t state;
    uint32_t timeout_ms;
    tdjson_update_cb cb;
    void *data;
    queue_node_t pending; /* tdjson_req_t, oldest first (deadlines in order) */
    size_t npending;
    json_int_t next_extra;
    uv_timer_t timer;
    uint64_t close_deadline;
    void (*closed_cb)(void *data);
    void *closed_data;
};

typedef struct tdjson_req_s {
    queue_node_t node;
    json_int_t extra;
    uint64_t deadline;
    tdjson_reply_cb cb;
    void *data;
} tdjson_req_t;

/* ---- the receiving thread ------------------------------------------------------ */

static void td__thread(void *arg)
{
    tdjson_t *td = arg;
    for (;;) {
        uv_mutex_lock(&td->mu);
        bool stop = td->stop;
        uv_mutex_unlock(&td->mu);
        if (stop)
            break;
        const char *s = td->receive(TDJSON_RECEIVE_TIMEOUT_S);
        if (s == NULL)
            continue;
        json_error_t je;
        json_t *o = json_loads(s, 0, &je);
        if (o == NULL)
            continue;
        uv_mutex_lock(&td->mu);
        while (td->len == TDJSON_QUEUE_MAX && !td->stop)
            uv_cond_wait(&td->room, &td->mu);
        if (td->stop) {
            uv_mutex_unlock(&td->mu);
            json_decref(o);
            break;
        }
        td->ring[(td->head + td->len) % TDJSON_QUEUE_MAX] = o;
        td->len++;
        uv_mutex_unlock(&td->mu);
        uv_async_send(&td->async);
    }
    uv_mutex_lock(&td->mu);
    td->thread_done = true;
    uv_mutex_unlock(&td->mu);
    uv_async_send(&td->async);
}

/* ---- answers and updates on the loop ----------------------------------------- */

static int td__status(const json_t *o)
{
    const char *type = json_string_value(json_object_get(o, "@type"));
    if (type == NULL || strcmp(type, "error") != 0)
        return 0;
    switch (json_integer_value(json_object_get(o, "code"))) {
    case 400:
        return UV_EINVAL;
    case 401:
        return UV_EACCES;
    case 404:
        return UV_ENOENT;
    case 429:
        return UV_EAGAIN;
    case 500:
        return UV_EIO;
    default:
        return UV_EPROTO;
    }
}

static void tdc__timer_closed(uv_handle_t *h)
{
    tdjson_client_t *c = h->data;
    if (c->closed_cb)
        c->closed_cb(c->closed_data);
    free(c);
}

/* The client is gone: what waits fails, then the timer closes and frees c. */
static void tdc__finish_close(tdjson_client_t *c)
{
    if (c->state == TDC_CLOSED)
        return;
    c->state = TDC_CLOSED;
    queue_remove(&c->node);
    while (!queue_empty(&c->pending)) {
        tdjson_req_t *r = queue_entry(queue_head(&c->pending), tdjson_req_t, node);
        queue_remove(&r->node);
        c->npending--;
        if (r->cb)
            r->cb(r->data, UV_ECANCELED, NULL);
        free(r);
    }
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, tdc__timer_closed);
}

static bool td__is_closed_state(const json_t *o)
{
    const char *type = json_string_value(json_object_get(o, "@type"));
    if (type == NULL || strcmp(type, "updateAuthorizationState") != 0)
        return false;
    const char *st =
        json_string_value(json_object_get(json_object_get(o, "authorization_state"), "@type"));
    return st && strcmp(st, "authorizationStateClosed") == 0;
}

static void tdc__dispatch(tdjson_client_t *c, json_t *o)
{
    json_t *extra = json_object_get(o, "@extra");
    if (json_is_integer(extra)) {
        json_int_t x = json_integer_value(extra);
        for (queue_node_t *n = queue_head(&c->pending); n != &c->pending; n = n->next) {
            tdjson_req_t *r = queue_entry(n, tdjson_req_t, node);
            if (r->extra != x)
                continue;
            queue_remove(&r->node);
            c->npending--;
            if (r->cb)
                r->cb(r->data, td__status(o), o);
            free(r);
            return;
        }
    }
    bool closed = td__is_closed_state(o);
    if (c->state == TDC_OPEN && c->cb)
        c->cb(c, o, c->data);
    if (closed && c->state != TDC_CLOSED)
        tdc__finish_close(c);
}

static void td__dispatch(tdjson_t *td, json_t *o)
{
    json_int_t id = json_integer_value(json_object_get(o, "@client_id"));
    for (queue_node_t *n = queue_head(&td->clients); n != &td->clients; n = n->next) {
        tdjson_client_t *c = queue_entry(n, tdjson_client_t, node);
        if (c->id == id) {
            tdc__dispatch(c, o);
            return;
        }
    }
}

static void td__async_closed(uv_handle_t *h)
{
    tdjson_t *td = h->data;
    if (td->closed_cb)
        td->closed_cb(td->closed_data);
}

static void td__on_async(uv_async_t *a)
{
    tdjson_t *td = a->data;
    json_t *batch[TDJSON_QUEUE_MAX];
    uv_mutex_lock(&td->mu);
    size_t n = td->len;
    for (size_t i = 0; i < n; i++)
        batch[i] = td->ring[(td->head + i) % TDJSON_QUEUE_MAX];
    td->head = (td->head + n) % TDJSON_QUEUE_MAX;
    td->len = 0;
    bool done = td->thread_done;
    uv_cond_signal(&td->room);
    uv_mutex_unlock(&td->mu);
    for (size_t i = 0; i < n; i++) {
        td__dispatch(td, batch[i]);
        json_decref(batch[i]);
    }
    if (done && td->closing && !uv_is_closing((uv_handle_t *)&td->async)) {
        uv_thread_join(&td->thread);
        uv_close((uv_handle_t *)&td->async, td__async_closed);
    }
}

/* ---- the library ----------------------------------------------------------------- */

int tdjson_open(uv_loop_t *loop, const char *path, tdjson_t **out, char *err, size_t errcap)
{
    *out = NULL;
    const char *name = path && path[0] ? path : "libtdjson.so";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        char why[512];
        snprintf(why, sizeof why, "%s", dlerror());
        char installed[PATH_MAX];
        int n = snprintf(installed, sizeof installed, "%s/%s", TDJSON_INSTALL_DIR, name);
        if (strchr(name, '/') == NULL && n > 0 && (size_t)n < sizeof installed)
            lib = dlopen(installed, RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
            snprintf(err, errcap,
                     "cannot load TDLib (%s): %s; install it with deps/install.sh or name it "
                     "with telegram_tdjson",
                     name, why);
            return UV_ENOENT;
        }
    }
    tdjson_t *td = calloc(1, sizeof *td);
    if (td == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    td->loop = loop;
    td->lib = lib;
    *(void **)&td->create = dlsym(lib, "td_create_client_id");
    *(void **)&td->send = dlsym(lib, "td_send");
    *(void **)&td->receive = dlsym(lib, "td_receive");
    *(void **)&td->execute = dlsym(lib, "td_execute");
    if (!td->create || !td->send || !td->receive || !td->execute) {
        snprintf(err, errcap,
                 "%s is not TDLib's JSON interface (td_create_client_id, td_send, td_receive, "
                 "td_execute; TDLib 1.7 or newer)",
                 name);
        free(td);
        return UV_EINVAL;
    }
    queue_init(&td->clients);
    json_t *quiet =
        json_pack("{s:s, s:i}", "@type", "setLogVerbosityLevel", "new_verbosity_level", 1);
    json_decref(tdjson_execute(td, quiet));
    json_decref(quiet);
    if (uv_mutex_init(&td->mu) != 0 || uv_cond_init(&td->room) != 0) {
        snprintf(err, errcap, "cannot make a mutex");
        free(td);
        return UV_ENOMEM;
    }
    uv_async_init(loop, &td->async, td__on_async);
    td->async.data = td;
    int rc = uv_thread_create(&td->thread, td__thread, td);
    if (rc != 0) {
        snprintf(err, errcap, "cannot start TDLib's receiving thread: %s", uv_strerror(rc));
        td->closing = true;
        uv_close((uv_handle_t *)&td->async, NULL);
        *out = td; /* freed by tdjson_free after the loop */
        return rc;
    }
    *out = td;
    return 0;
}

json_t *tdjson_execute(tdjson_t *td, json_t *request)
{
    char *text = json_dumps(request, JSON_COMPACT);
    if (text == NULL)
        return NULL;
    const char *answer = td->execute(text);
    free(text);
    json_error_t je;
    return answer ? json_loads(answer, 0, &je) : NULL;
}

const char *tdjson_version(tdjson_t *td, char *out, size_t cap)
{
    json_t *rq = json_pack("{s:s, s:s}", "@type", "getOption", "name", "version");
    json_t *v = rq ? tdjson_execute(td, rq) : NULL;
    json_decref(rq);
    snprintf(out, cap, "%s", json_string_value(json_object_get(v, "value")) ?: "");
    json_decref(v);
    return out;
}

void tdjson_close(tdjson_t *td, void (*cb)(void *data), void *data)
{
    td->closed_cb = cb;
    td->closed_data = data;
    td->closing = true;
    uv_mutex_lock(&td->mu);
    td->stop = true;
    uv_cond_signal(&td->room);
    bool done = td->thread_done;
    uv_mutex_unlock(&td->mu);
    if (done)
        uv_async_send(&td->async);
}

void tdjson_free(tdjson_t *td)
{
    if (td == NULL)
        return;
    while (td->len > 0) {
        json_decref(td->ring[td->head]);
        td->head = (td->head + 1) % TDJSON_QUEUE_MAX;
        td->len--;
    }
    uv_cond_destroy(&td->room);
    uv_mutex_destroy(&td->mu);
    free(td);
}

/* ---- clients ------------------------------------------------------------------------ */

static void tdc__on_timer(uv_timer_t *t)
{
    tdjson_client_t *c = t->data;
    uint64_t now = uv_now(c->td->loop);
    while (!queue_empty(&c->pending)) {
        tdjson_req_t *r = queue_entry(queue_head(&c->pending), tdjson_req_t, node);
        if (r->deadline > now)
            break;
        queue_remove(&r->node);
        c->npending--;
        if (r->cb)
            r->cb(r->data, UV_ETIMEDOUT, NULL);
        free(r);
    }
    if (c->state == TDC_CLOSING && now >= c->close_deadline) {
        log_warn("telegram", "TDLib client %d did not report closed in %d ms", c->id,
                 TDJSON_CLOSE_TIMEOUT_MS);
        tdc__finish_close(c);
    }
}

int tdjson_client_new(tdjson_t *td, uint32_t timeout_ms, tdjson_update_cb cb, void *data,
                      tdjson_client_t **out)
{
    tdjson_client_t *c = calloc(1, sizeof *c);
    if (c == NULL)
        return UV_ENOMEM;
    c->td = td;
    c->id = td->create();
    c->timeout_ms = timeout_ms ? timeout_ms : TDJSON_REQUEST_TIMEOUT_MS;
    c->cb = cb;
    c->data = data;
    c->next_extra = 1;
    queue_init(&c->pending);
    queue_push_tail(&td->clients, &c->node);
    uv_timer_init(td->loop, &c->timer);
    c->timer.data = c;
    uv_timer_start(&c->timer, tdc__on_timer, TDJSON_TICK_MS, TDJSON_TICK_MS);
    *out = c;
    return 0;
}

int tdjson_send(tdjson_client_t *c, json_t *request, tdjson_reply_cb cb, void *data)
{
    if (c->state != TDC_OPEN) {
        json_decref(request);
        return UV_ECANCELED;
    }
    if (c->npending >= TDJSON_PENDING_MAX) {
        json_decref(request);
        return UV_EBUSY;
    }
    tdjson_req_t *r = calloc(1, sizeof *r);
    if (r == NULL || request == NULL) {
        free(r);
        json_decref(request);
        return UV_ENOMEM;
    }
    r->extra = c->next_extra++;
    json_object_set_new(request, "@extra", json_integer(r->extra));
    char *text = json_dumps(request, JSON_COMPACT);
    json_decref(request);
    if (text == NULL) {
        free(r);
        return UV_ENOMEM;
    }
    r->deadline = uv_now(c->td->loop) + c->timeout_ms;
    r->cb = cb;
    r->data = data;
    queue_push_tail(&c->pending, &r->node);
    c->npending++;
    c->td->send(c->id, text);
    free(text);
    return 0;
}

size_t tdjson_client_pending(const tdjson_client_t *c)
{
    return c->npending;
}

static void client_end(tdjson_client_t *c, void (*cb)(void *data), void *data, const char *req)
{
    c->closed_cb = cb;
    c->closed_data = data;
    if (c->state != TDC_OPEN)
        return;
    c->state = TDC_CLOSING;
    c->close_deadline = uv_now(c->td->loop) + TDJSON_CLOSE_TIMEOUT_MS;
    c->td->send(c->id, req);
}

void tdjson_client_close(tdjson_client_t *c, void (*cb)(void *data), void *data)
{
    client_end(c, cb, data, "{\"@type\":\"close\"}");
}

void tdjson_client_log_out(tdjson_client_t *c, void (*cb)(void *data), void *data)
{
    client_end(c, cb, data, "{\"@type\":\"logOut\"}");
}

/* ---- errors ------------------------------------------------------------------------ */

long tdjson_retry_after(const json_t *err)
{
    if (json_integer_value(json_object_get(err, "code")) != 429)
        return 0;
    const char *m = json_string_value(json_object_get(err, "message"));
    const char *p = m ? strstr(m, "retry after ") : NULL;
    long s = p ? strtol(p + strlen("retry after "), NULL, 10) : 0;
    return s > 0 ? s : 1;
}

const char *tdjson_error_message(const json_t *err, const char *fallback)
{
    const char *m = json_string_value(json_object_get(err, "message"));
    return m && m[0] ? m : fallback;
}
