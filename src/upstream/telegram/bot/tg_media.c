/* tg_media: Bot API file downloads into the media store (see tg_media.h).
 *
 * Each failure is either passing (no answer, a server error, a body cut
 * short, a store that cannot be written) and recorded with the wait before
 * the next attempt, or a refusal (the Bot API will not serve the file),
 * retried a few times by the queue's rule. A download is stored only when
 * it has the size getFile announced; the temporary file of one that failed
 * is removed. */
#include "upstream/telegram/bot/tg_media.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive/media_store.h"
#include "util/log.h"
#include "util/queue.h"

#define MEDIA_TAG "telegram"

typedef struct item_s item_t;

struct tg_media_wait_s {
    queue_node_t node; /* in m->claims while claiming, then in its item's waiters */
    tg_media_t *m;
    item_t *item; /* NULL while claiming */
    int64_t chat, message;
    bool cancelled; /* while claiming: free when the claim returns */
    tg_media_progress_cb progress;
    tg_media_fetch_cb done;
    void *data;
};

struct item_s {
    queue_node_t node; /* in m->items */
    queue_node_t waiters;
    bool in_request;
    tg_media_t *m;
    json_t *row; /* from the claim; results are added to it */
    net_req_t req;
    char url[1536];
    char tmp[1100];
    char body[512];
    uint64_t expect; /* size getFile announced (0: unknown) */
    uv_work_t work;
    /* uv_hrtime() when started, getFile answered, the download ended and
     * the file was stored: logged at debug level when the row is saved. */
    uint64_t t_start, t_path, t_body, t_stored;
};

/* Where a download failed, for the counters and the log. */
enum { FAIL_UPSTREAM = 0, FAIL_STORE = 1, FAIL_KINDS };

struct tg_media_s {
    uv_loop_t *loop;
    net_client_t *net;
    pg_pool_t *rw;
    char api_url[512];
    char token[256];
    char media_root[1024];
    char owner[160]; /* what its claims are recorded under */
    uint64_t max_bytes;
    uint32_t stall_ms, retry_max_ms;
    int64_t account;
    int active;
    bool claiming;
    int claiming_one; /* tg_media_fetch claims in flight */
    bool again;       /* kicked while claiming */
    bool closing;
    uint64_t stored;
    uint64_t failures[FAIL_KINDS];
    uint64_t unlogged[FAIL_KINDS]; /* failures since the last line logged */
    uint64_t logged_at[FAIL_KINDS];
    bool logged_once[FAIL_KINDS];
    bool failing[FAIL_KINDS]; /* a failure was logged, no success since */
    uv_timer_t idle;
    bool idle_open;
    queue_node_t items;
    queue_node_t claims; /* waiters whose claim is in flight */
    int waiters;
    uv_timer_t tick; /* progress for waiters */
    bool tick_open;
    void (*close_cb)(void *data);
    void *close_data;
};

static void claim(tg_media_t *m);
static void maybe_closed(tg_media_t *m);

/* Tells the item's waiters how it ended (its row as recorded). */
static void item_notify(item_t *it)
{
    const char *state = json_string_value(json_object_get(it->row, "state"));
    char *json = json_dumps(it->row, JSON_COMPACT);
    while (!queue_empty(&it->waiters)) {
        tg_media_wait_t *w = queue_entry(it->waiters.next, tg_media_wait_t, node);
        queue_remove(&w->node);
        it->m->waiters--;
        if (state && strcmp(state, "remote") == 0)
            w->done(w->data, UV_ECANCELED, NULL, "the daemon is stopping");
        else
            w->done(w->data, json ? 0 : UV_ENOMEM, json, json ? NULL : "out of memory");
        free(w);
    }
    free(json);
}

static void item_free(item_t *it)
{
    item_notify(it);
    queue_remove(&it->node);
    json_decref(it->row);
    free(it);
}

static void item_saved(void *data, int status, const char *value, const char *sqlstate,
                       const char *error)
{
    item_t *it = data;
    tg_media_t *m = it->m;
    (void)value;
    (void)sqlstate;
    if (status != 0)
        log_warn(MEDIA_TAG, "recording a download failed: %s", error);
    else if (it->t_stored)
        log_debug(MEDIA_TAG,
                  "stored %lld bytes: getFile %.1f ms, download %.1f ms, store %.1f ms, row "
                  "%.1f ms",
                  (long long)json_integer_value(json_object_get(it->row, "size")),
                  (double)(it->t_path - it->t_start) / 1e6, (double)(it->t_body - it->t_path) / 1e6,
                  (double)(it->t_stored - it->t_body) / 1e6,
                  (double)(uv_hrtime() - it->t_stored) / 1e6);
    item_free(it);
    m->active--;
    if (!m->closing)
        claim(m);
    maybe_closed(m);
}

/* Counts a failed attempt; logs it unless a failure of its kind was logged
 * less than TG_MEDIA_LOG_EVERY_MS ago (the next line counts those). */
static void note_failure(tg_media_t *m, int kind, const char *msg)
{
    m->failures[kind]++;
    uint64_t now = uv_now(m->loop);
    if (m->logged_once[kind] && now - m->logged_at[kind] < TG_MEDIA_LOG_EVERY_MS) {
        m->unlogged[kind]++;
        return;
    }
    char more[64] = "";
    if (m->unlogged[kind] > 0)
        snprintf(more, sizeof more, "; %llu more failed since the last report",
                 (unsigned long long)m->unlogged[kind]);
    if (kind == FAIL_STORE)
        log_error(MEDIA_TAG,
                  "the media store cannot keep downloaded files: %s; the downloads are kept in "
                  "the queue and retried until it can (at most every %u s)%s",
                  msg, m->retry_max_ms / 1000, more);
    else
        log_warn(MEDIA_TAG,
                 "media downloads are failing: %s; each is retried, waiting %u s, doubling up "
                 "to %u s%s",
                 msg, TG_MEDIA_RETRY_BASE_MS / 1000, m->retry_max_ms / 1000, more);
    m->logged_once[kind] = true;
    m->logged_at[kind] = now;
    m->unlogged[kind] = 0;
    m->failing[kind] = true;
}

/* A file was downloaded and stored: the failures logged are over. */
static void note_success(tg_media_t *m)
{
    if (m->failing[FAIL_STORE])
        log_info(MEDIA_TAG, "the media store keeps downloaded files again");
    if (m->failing[FAIL_UPSTREAM])
        log_info(MEDIA_TAG, "media downloads succeed again");
    m->failing[FAIL_STORE] = m->failing[FAIL_UPSTREAM] = false;
}

static void item_finish(item_t *it, const char *state, const char *error);

/* Records a passing failure: the file is claimed again after a wait that
 * doubles with each attempt, however many it takes. */
static void item_retry(item_t *it, int kind, const char *msg)
{
    tg_media_t *m = it->m;
    json_int_t attempts = json_integer_value(json_object_get(it->row, "attempts"));
    uint64_t wait = TG_MEDIA_RETRY_BASE_MS;
    for (json_int_t i = 1; i < attempts && wait < m->retry_max_ms; i++)
        wait *= 2;
    if (wait > m->retry_max_ms)
        wait = m->retry_max_ms;
    json_object_set_new(it->row, "retry_ms", json_integer((json_int_t)wait));
    note_failure(m, kind, msg);
    item_finish(it, "error", msg);
}

/* Records the item's outcome (state done or error). */
static void item_finish(item_t *it, const char *state, const char *error)
{
    json_object_set_new(it->row, "state", json_string(state));
    if (error)
        json_object_set_new(it->row, "error", json_string(error));
    if (strcmp(state, "done") == 0)
        it->m->stored++;
    char *pjson = json_dumps(it->row, JSON_COMPACT);
    const char *params[1] = {pjson ? pjson : "{}"};
    int rc =
        pg_pool_call(it->m->rw, "parley_bot_media_done", "SELECT parley_bot_media_done($1::jsonb)",
                     1, params, item_saved, it, NULL);
    free(pjson);
    if (rc != 0) {
        tg_media_t *m = it->m;
        item_free(it);
        m->active--;
        maybe_closed(m);
    }
}

static void store_work(uv_work_t *w)
{
    item_t *it = w->data;
    char sha[65], rel[MEDIA_STORE_REL_MAX], err[512];
    uint64_t size = 0;
    /* The download was written inside the store: moved, not copied. */
    int rc = media_store_adopt(it->m->media_root, it->tmp, sha, rel, &size, err, sizeof err);
    unlink(it->tmp);
    if (rc != 0) {
        json_object_set_new(it->row, "store_error", json_string(err));
        return;
    }
    json_object_set_new(it->row, "sha256", json_string(sha));
    json_object_set_new(it->row, "local_path", json_string(rel));
    json_object_set_new(it->row, "size", json_integer((json_int_t)size));
}

static void store_after(uv_work_t *w, int status)
{
    item_t *it = w->data;
    it->t_stored = uv_hrtime();
    const char *err = json_string_value(json_object_get(it->row, "store_error"));
    if (status != 0 || err) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", err ? err : uv_strerror(status));
        json_object_del(it->row, "store_error");
        item_retry(it, FAIL_STORE, msg);
    } else {
        note_success(it->m);
        item_finish(it, "done", NULL);
    }
}

static void downloaded(net_req_t *r, int status)
{
    item_t *it = r->data;
    it->t_body = uv_hrtime();
    it->in_request = false;
    long http = r->http_status;
    uint64_t got = r->bytes;
    bool file_failed = r->file_failed;
    char why[320];
    snprintf(why, sizeof why, "%s", r->error);
    net_req_release(r);
    if (status == UV_ECANCELED) {
        unlink(it->tmp);
        item_finish(it, "remote", NULL); /* stopped: taken up again later */
        return;
    }
    char msg[400];
    if (status != 0 || http != 200) {
        snprintf(msg, sizeof msg, "download failed: %s",
                 status != 0 ? (why[0] ? why : uv_strerror(status))
                             : "the Bot API answered an error");
        if (status == 0)
            snprintf(msg, sizeof msg, "download failed: the Bot API answered HTTP %ld", http);
        unlink(it->tmp);
        /* Larger than the limit, or refused for good (a 4xx other than a
         * rate limit, a timeout or a path gone stale): a refusal. */
        if (status == UV_E2BIG ||
            (status == 0 && http >= 400 && http < 500 && http != 404 && http != 408 && http != 429))
            item_finish(it, "error", msg);
        else
            item_retry(it, file_failed ? FAIL_STORE : FAIL_UPSTREAM, msg);
        return;
    }
    if (it->expect > 0 && got != it->expect) {
        snprintf(msg, sizeof msg, "download failed: %llu bytes arrived of the %llu announced",
                 (unsigned long long)got, (unsigned long long)it->expect);
        unlink(it->tmp);
        item_retry(it, FAIL_UPSTREAM, msg);
        return;
    }
    it->work.data = it;
    if (uv_queue_work(it->m->loop, &it->work, store_work, store_after) != 0) {
        unlink(it->tmp);
        item_finish(it, "error", "cannot queue the store");
    }
}

static void got_path(net_req_t *r, int status)
{
    item_t *it = r->data;
    it->t_path = uv_hrtime();
    it->in_request = false;
    tg_media_t *m = it->m;
    if (status == UV_ECANCELED || m->closing) {
        net_req_release(r);
        item_finish(it, "remote", NULL);
        return;
    }
    long http = r->http_status;
    char why[320];
    snprintf(why, sizeof why, "%s", r->error);
    json_error_t je;
    json_t *doc =
        status == 0 ? json_loadb(r->body_buf.data ? r->body_buf.data : "", r->body_buf.len, 0, &je)
                    : NULL;
    net_req_release(r);
    json_t *result = json_object_get(doc, "result");
    const char *path = json_string_value(json_object_get(result, "file_path"));
    if (path == NULL) {
        const char *desc = json_string_value(json_object_get(doc, "description"));
        char msg[400];
        snprintf(msg, sizeof msg, "getFile failed: %s",
                 desc     ? desc
                 : status ? (why[0] ? why : uv_strerror(status))
                 : doc    ? "no file_path"
                          : "the answer is not JSON");
        /* A Bot API answer other than a server error or a rate limit
         * refuses the file; no answer, or a broken one, passes. */
        bool refused = doc != NULL && http < 500 && http != 429 && http != 408;
        json_decref(doc);
        if (refused)
            item_finish(it, "error", msg);
        else
            item_retry(it, FAIL_UPSTREAM, msg);
        return;
    }
    json_int_t announced = json_integer_value(json_object_get(result, "file_size"));
    if (announced <= 0)
        announced = json_integer_value(json_object_get(it->row, "file_size"));
    it->expect = announced > 0 ? (uint64_t)announced : 0;
    snprintf(it->url, sizeof it->url, "%s/file/bot%s/%s", m->api_url, m->token, path);
    json_decref(doc);
    static unsigned seq;
    snprintf(it->tmp, sizeof it->tmp, "%s/.download-%d-%u", m->media_root, (int)getpid(), ++seq);
    memset(&it->req, 0, sizeof it->req);
    it->req.url = it->url;
    it->req.to_file = it->tmp;
    it->req.max_bytes = m->max_bytes;
    it->req.stall_ms = m->stall_ms; /* large files on slow links take their time */
    it->req.cb = downloaded;
    it->req.data = it;
    if (net_request(m->net, &it->req) != 0) {
        net_req_release(&it->req);
        char msg[400];
        snprintf(msg, sizeof msg, "download failed: %s",
                 it->req.error[0] ? it->req.error : "cannot start it");
        item_retry(it, it->req.file_failed ? FAIL_STORE : FAIL_UPSTREAM, msg);
        return;
    }
    it->in_request = true;
}

/* Starts an item; w (or NULL) waits for it. */
static void start_item(tg_media_t *m, json_t *row, tg_media_wait_t *w)
{
    item_t *it = calloc(1, sizeof *it);
    if (it == NULL) {
        if (w) {
            m->waiters--;
            w->done(w->data, UV_ENOMEM, NULL, "out of memory");
            free(w);
        }
        return;
    }
    it->t_start = uv_hrtime();
    it->m = m;
    it->row = json_incref(row);
    queue_init(&it->waiters);
    if (w) {
        w->item = it;
        queue_push_tail(&it->waiters, &w->node);
    }
    queue_push_tail(&m->items, &it->node);
    m->active++;
    json_t *stored = json_object_get(row, "stored");
    if (json_is_object(stored)) {
        /* The same file (file_unique_id) is in the store already. */
        json_object_set(row, "sha256", json_object_get(stored, "sha256"));
        json_object_set(row, "local_path", json_object_get(stored, "local_path"));
        json_object_set(row, "size", json_object_get(stored, "size"));
        item_finish(it, "done", NULL);
        return;
    }
    json_int_t size = json_integer_value(json_object_get(row, "file_size"));
    if (size > 0 && (uint64_t)size > m->max_bytes) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "the file has %lld bytes, more than the %llu the Bot API serves (20 MB on the "
                 "public server; a self-hosted Bot API server serves more)",
                 (long long)size, (unsigned long long)m->max_bytes);
        item_finish(it, "error", msg);
        return;
    }
    snprintf(it->url, sizeof it->url, "%s/bot%s/getFile", m->api_url, m->token);
    snprintf(it->body, sizeof it->body, "{\"file_id\":\"%s\"}",
             json_string_value(json_object_get(row, "file_id")));
    memset(&it->req, 0, sizeof it->req);
    it->req.url = it->url;
    it->req.body = it->body;
    it->req.body_len = strlen(it->body);
    it->req.content_type = "application/json";
    it->req.stall_ms = m->stall_ms; /* an answer that never comes */
    it->req.cb = got_path;
    it->req.data = it;
    if (net_request(m->net, &it->req) != 0) {
        net_req_release(&it->req);
        item_finish(it, "error", "cannot start getFile");
        return;
    }
    it->in_request = true;
}

static void idle_cb(uv_timer_t *t)
{
    claim(t->data);
}

static void claimed(void *data, int status, const char *value, const char *sqlstate,
                    const char *error)
{
    tg_media_t *m = data;
    (void)sqlstate;
    (void)error;
    m->claiming = false;
    json_t *rows = NULL;
    if (status == 0 && value) {
        json_error_t je;
        rows = json_loads(value, 0, &je);
    }
    size_t i, n = json_array_size(rows);
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        if (!m->closing)
            start_item(m, row, NULL);
    }
    json_decref(rows);
    if (!m->closing && (m->again || (n > 0 && m->active < TG_MEDIA_MAX_ACTIVE))) {
        m->again = false;
        claim(m);
    }
    maybe_closed(m);
}

static void claim(tg_media_t *m)
{
    if (m->closing || m->account == 0)
        return;
    if (m->claiming) {
        m->again = true;
        return;
    }
    int want = TG_MEDIA_MAX_ACTIVE - m->active;
    if (want <= 0)
        return;
    char account[24], nwant[24];
    snprintf(account, sizeof account, "%lld", (long long)m->account);
    snprintf(nwant, sizeof nwant, "%d", want);
    const char *params[3] = {account, nwant, m->owner[0] ? m->owner : NULL};
    if (pg_pool_call(m->rw, "parley_bot_media_claim",
                     "SELECT parley_bot_media_claim($1::bigint, $2::integer, $3::text)::text", 3,
                     params, claimed, m, NULL) == 0)
        m->claiming = true;
}

int tg_media_new(uv_loop_t *loop, net_client_t *net, pg_pool_t *rw, const tg_media_config_t *cfg,
                 tg_media_t **out)
{
    tg_media_t *m = calloc(1, sizeof *m);
    if (m == NULL)
        return UV_ENOMEM;
    m->loop = loop;
    m->net = net;
    m->rw = rw;
    snprintf(m->api_url, sizeof m->api_url, "%s", cfg->api_url);
    snprintf(m->token, sizeof m->token, "%s", cfg->token);
    snprintf(m->media_root, sizeof m->media_root, "%s", cfg->media_root);
    snprintf(m->owner, sizeof m->owner, "%s", cfg->owner ? cfg->owner : "");
    m->max_bytes = cfg->max_bytes ? cfg->max_bytes : TG_MEDIA_DEFAULT_LIMIT;
    m->stall_ms = cfg->stall_ms ? cfg->stall_ms : TG_MEDIA_STALL_MS;
    m->retry_max_ms = cfg->retry_max_ms ? cfg->retry_max_ms : TG_MEDIA_RETRY_MAX_MS;
    char err[512];
    int swept = 0;
    if (media_store_prepare(m->media_root, err, sizeof err) != 0)
        log_warn(MEDIA_TAG, "%s; downloads will fail until it can be created", err);
    else if (media_store_sweep(m->media_root, &swept, err, sizeof err) != 0)
        log_warn(MEDIA_TAG, "%s", err);
    else if (swept > 0)
        log_info(MEDIA_TAG, "removed %d partial download(s) of earlier runs", swept);
    uv_timer_init(loop, &m->idle);
    m->idle.data = m;
    m->idle_open = true;
    queue_init(&m->items);
    queue_init(&m->claims);
    uv_timer_init(loop, &m->tick);
    m->tick.data = m;
    m->tick_open = true;
    *out = m;
    return 0;
}

void tg_media_set_account(tg_media_t *m, int64_t account)
{
    m->account = account;
    /* Also look now and then: files left by another daemon or a retry. */
    uv_timer_start(&m->idle, idle_cb, TG_MEDIA_IDLE_MS, TG_MEDIA_IDLE_MS);
    claim(m);
}

void tg_media_kick(tg_media_t *m)
{
    claim(m);
}

uint64_t tg_media_stored(const tg_media_t *m)
{
    return m->stored;
}

int tg_media_active(const tg_media_t *m)
{
    return m->active;
}

uint64_t tg_media_failures(const tg_media_t *m, bool store)
{
    return m->failures[store ? FAIL_STORE : FAIL_UPSTREAM];
}

static void progress_tick(uv_timer_t *t)
{
    tg_media_t *m = t->data;
    for (queue_node_t *n = m->items.next; n != &m->items; n = n->next) {
        item_t *it = queue_entry(n, item_t, node);
        if (!it->in_request || it->req.to_file == NULL)
            continue;
        uint64_t total = (uint64_t)json_integer_value(json_object_get(it->row, "file_size"));
        for (queue_node_t *k = it->waiters.next; k != &it->waiters; k = k->next) {
            tg_media_wait_t *w = queue_entry(k, tg_media_wait_t, node);
            w->progress(w->data, it->req.bytes, total);
        }
    }
    if (m->waiters == 0)
        uv_timer_stop(&m->tick);
}

static void fetch_claimed(void *data, int status, const char *value, const char *sqlstate,
                          const char *error)
{
    tg_media_wait_t *w = data;
    tg_media_t *m = w->m;
    json_t *row = NULL;
    char why[600] = "";
    (void)sqlstate;
    if (status == 0 && value) {
        json_error_t je;
        row = json_loads(value, 0, &je);
    } else {
        snprintf(why, sizeof why, "claiming the file failed: %s", error ? error : "no answer");
    }
    queue_remove(&w->node);
    m->claiming_one--;
    if (row && json_is_true(json_object_get(row, "claimed")) && !m->closing) {
        /* Ours now: download it, even if the caller stopped waiting. */
        if (w->cancelled) {
            m->waiters--;
            free(w);
            w = NULL;
        }
        start_item(m, row, w);
    } else if (!w->cancelled) {
        char *json = row ? json_dumps(row, JSON_COMPACT) : NULL;
        m->waiters--;
        if (json)
            w->done(w->data, 0, json, NULL); /* not claimable: its state says why */
        else
            w->done(w->data, m->closing ? UV_ECANCELED : UV_EIO, NULL,
                    why[0] ? why : "the daemon is stopping");
        free(json);
        free(w);
    } else {
        m->waiters--;
        free(w);
    }
    json_decref(row);
    maybe_closed(m);
}

int tg_media_fetch(tg_media_t *m, int64_t chat, int64_t message, tg_media_progress_cb progress,
                   tg_media_fetch_cb done, void *data, tg_media_wait_t **out)
{
    if (m->closing)
        return UV_ECANCELED;
    if (m->waiters >= TG_MEDIA_MAX_WAITERS)
        return UV_EBUSY;
    /* Its download is running here already: wait for that one. */
    for (queue_node_t *n = m->items.next; n != &m->items; n = n->next) {
        item_t *it = queue_entry(n, item_t, node);
        if (json_integer_value(json_object_get(it->row, "chat_id")) == chat &&
            json_integer_value(json_object_get(it->row, "message_id")) == message &&
            json_integer_value(json_object_get(it->row, "ordinal")) == 0) {
            tg_media_wait_t *w = calloc(1, sizeof *w);
            if (w == NULL)
                return UV_ENOMEM;
            *w = (tg_media_wait_t){.m = m,
                                   .item = it,
                                   .chat = chat,
                                   .message = message,
                                   .progress = progress,
                                   .done = done,
                                   .data = data};
            queue_push_tail(&it->waiters, &w->node);
            m->waiters++;
            uv_timer_start(&m->tick, progress_tick, TG_MEDIA_PROGRESS_MS, TG_MEDIA_PROGRESS_MS);
            *out = w;
            return 0;
        }
    }
    if (m->active + m->claiming_one >= TG_MEDIA_MAX_ACTIVE + TG_MEDIA_MAX_URGENT)
        return UV_EBUSY;
    tg_media_wait_t *w = calloc(1, sizeof *w);
    if (w == NULL)
        return UV_ENOMEM;
    *w = (tg_media_wait_t){
        .m = m, .chat = chat, .message = message, .progress = progress, .done = done, .data = data};
    char chat_s[24], message_s[24];
    snprintf(chat_s, sizeof chat_s, "%lld", (long long)chat);
    snprintf(message_s, sizeof message_s, "%lld", (long long)message);
    const char *params[3] = {chat_s, message_s, m->owner[0] ? m->owner : NULL};
    int rc =
        pg_pool_call(m->rw, "parley_bot_media_claim_one",
                     "SELECT parley_bot_media_claim_one($1::bigint, $2::bigint, $3::text)::text", 3,
                     params, fetch_claimed, w, NULL);
    if (rc != 0) {
        free(w);
        return rc;
    }
    queue_push_tail(&m->claims, &w->node);
    m->claiming_one++;
    m->waiters++;
    uv_timer_start(&m->tick, progress_tick, TG_MEDIA_PROGRESS_MS, TG_MEDIA_PROGRESS_MS);
    *out = w;
    return 0;
}

void tg_media_fetch_cancel(tg_media_wait_t *w)
{
    if (w->item == NULL) {
        w->cancelled = true; /* freed when its claim returns */
        return;
    }
    queue_remove(&w->node);
    w->m->waiters--;
    free(w);
}

static void tick_closed(uv_handle_t *h)
{
    tg_media_t *m = h->data;
    m->tick_open = false;
    maybe_closed(m);
}

static void idle_closed(uv_handle_t *h)
{
    tg_media_t *m = h->data;
    m->idle_open = false;
    maybe_closed(m);
}

static void maybe_closed(tg_media_t *m)
{
    if (!m->closing || m->active > 0 || m->claiming || m->claiming_one > 0)
        return;
    if (m->tick_open) {
        if (!uv_is_closing((uv_handle_t *)&m->tick))
            uv_close((uv_handle_t *)&m->tick, tick_closed);
        return;
    }
    if (m->idle_open) {
        if (!uv_is_closing((uv_handle_t *)&m->idle))
            uv_close((uv_handle_t *)&m->idle, idle_closed);
        return;
    }
    void (*cb)(void *) = m->close_cb;
    void *data = m->close_data;
    free(m);
    if (cb)
        cb(data);
}

void tg_media_close(tg_media_t *m, void (*cb)(void *data), void *data)
{
    m->closing = true;
    m->close_cb = cb;
    m->close_data = data;
    uv_timer_stop(&m->idle);
    uv_timer_stop(&m->tick);
    for (queue_node_t *n = m->items.next; n != &m->items;) {
        item_t *it = queue_entry(n, item_t, node);
        n = n->next;
        if (it->in_request)
            net_request_cancel(&it->req); /* calls back at once */
    }
    maybe_closed(m);
}
