/* login_rounds: the bluesky login tool under MCP 2026-07-28, by multi
 * round-trip requests (see bluesky_internal.h). The server asks the
 * client nothing by a request of its own; each call of login is one round
 * and what it needs from the last one is in the sealed requestState:
 *
 *   1. no handle: input_required {handle: a form for the handle};
 *   2. a handle: the password page opens on this daemon (loopback, one
 *      time, as in login.c), and the answer is input_required
 *      {password_page: URL mode} with the state {handle, service, page,
 *      before: the account's last login as the store had it};
 *   3. the client's consent comes back: the daemon that holds the page
 *      waits for it (the password typed there logs in at once, whether or
 *      not a call waits; a password Bluesky refuses is reported on the
 *      page, which takes another try until it expires, and the outcome
 *      waits on); any other daemon behind the same balancer asks
 *      the store whether the account logged in since round 2. Declined or
 *      dismissed is an outcome; still waiting after BS_LOGIN_WAIT_MS, the
 *      round is asked again.
 *
 * The password goes from the page to this daemon and the connector only,
 * never through the client, the model or the state. Pending logins are
 * bounded (BS_PENDING_MAX; the oldest finished one makes room). The
 * outcomes both revisions share are here too: the answer of a login
 * (bs_finish_logged_in) and what the password page says of it
 * (bs_page_report). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/bluesky/bluesky_internal.h"
#include "util/strutil.h"

/* A password page this daemon opened, and what came of it. */
typedef struct bs_pending_s {
    bs_ctx_t *ctx;
    char id[33]; /* names it in requestState */
    char *handle, *service;
    secret_page_t *page;
    bool login_running;
    bool done;                /* the outcome is known */
    int status;               /* 0: logged in */
    char *account;            /* the account's JSON on success */
    char *error;              /* the connector's message on failure (or the last refusal) */
    uint64_t opened_at;       /* loop time: a pending is dropped past BS_PENDING_TTL_MS */
    struct bs_wait_s *waiter; /* the round-3 call waiting for it, or NULL */
} bs_pending_t;

/* A round-3 call waiting on this daemon's page, with its limit. */
typedef struct bs_wait_s {
    uv_timer_t timer;
    bs_pending_t *p; /* NULL once the wait ended */
    mcp_call_t *c;
} bs_wait_t;

static void pending_free(bs_pending_t *p)
{
    free(p->handle);
    free(p->service);
    free(p->account);
    free(p->error);
    free(p);
}

static void wait_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Ends w (once): its call is answered by the caller. */
static mcp_call_t *wait_end(bs_wait_t *w)
{
    mcp_call_t *c = w->c;
    if (w->p != NULL)
        w->p->waiter = NULL;
    w->p = NULL;
    c->on_cancel = NULL;
    c->data = NULL;
    uv_close((uv_handle_t *)&w->timer, wait_closed);
    return c;
}

/* Drops p from the table and frees it once nothing refers to it. */
static void pending_release(bs_pending_t *p)
{
    bs_ctx_t *ctx = p->ctx;
    for (int i = 0; ctx != NULL && i < ctx->npending; i++)
        if (ctx->pending[i] == p) {
            ctx->pending[i] = ctx->pending[--ctx->npending];
            break;
        }
    p->ctx = NULL; /* unlisted: a late callback finds no toolset */
    if (p->page != NULL || p->login_running || p->waiter != NULL)
        return; /* their callbacks come back here */
    pending_free(p);
}

/* Listed in its toolset's table (ctx is set only while it is). */
static bool pending_listed(const bs_pending_t *p)
{
    return p->ctx != NULL;
}

static bs_pending_t *pending_find(bs_ctx_t *ctx, const char *id)
{
    for (int i = 0; id && i < ctx->npending; i++)
        if (strcmp(ctx->pending[i]->id, id) == 0)
            return ctx->pending[i];
    return NULL;
}

/* ---- outcomes ---------------------------------------------------------- */

bool bs_page_report(secret_page_t *page, const char *handle, int status, const char *account_json,
                    const char *error, bool retry)
{
    char msg[1200];
    if (status == UV_EACCES && retry) {
        snprintf(msg, sizeof msg,
                 "%.600s. Check that it is an app password of @%.300s (" BSKY_APP_PASSWORDS_URL
                 "), not the main account password, and try again.",
                 error ? error : "Bluesky refused the password", handle);
        secret_page_result(page, false, msg);
        return true;
    }
    if (status == 0) {
        json_t *acct = account_json ? json_loads(account_json, 0, NULL) : NULL;
        const char *h = json_string_value(json_object_get(acct, "handle"));
        snprintf(msg, sizeof msg,
                 "Signed in to Bluesky as @%.300s \xe2\x80\x94 you can close this tab and return "
                 "to your assistant.",
                 h ? h : handle);
        json_decref(acct);
    } else {
        snprintf(msg, sizeof msg,
                 "The login failed: %.600s. Nothing was stored; return to your assistant.",
                 error ? error : uv_strerror(status));
    }
    secret_page_result(page, true, msg);
    return false;
}

void bs_finish_logged_in(mcp_call_t *c, const char *account_json)
{
    json_t *acct = account_json ? json_loads(account_json, 0, NULL) : NULL;
    const char *h = json_string_value(json_object_get(acct, "handle"));
    const char *did = json_string_value(json_object_get(acct, "did"));
    const char *svc = json_string_value(json_object_get(acct, "service"));
    char md[1200];
    snprintf(md, sizeof md,
             "Logged in to Bluesky as @%s (%s) at %s%s. The session is kept and refreshed by "
             "parley: later calls (profile, search) need no login, also after a restart.",
             h ? h : "?", did ? did : "?", svc ? svc : "?",
             json_is_true(json_object_get(acct, "default")) ? "; it is the default account" : "");
    bs_finish(
        c, md,
        json_pack("{s:s, s:o}", "status", "logged_in", "account", acct ? acct : json_object()));
}

static void finish_pending(mcp_call_t *c, const bs_pending_t *p)
{
    if (p->status == 0) {
        bs_finish_logged_in(c, p->account);
        return;
    }
    mcp_call_finish_error(c,
                          "%s. Check the handle, and use an app password (" BSKY_APP_PASSWORDS_URL
                          "), never the main account password; call login again.",
                          p->error ? p->error : "Bluesky refused the login");
}

/* The waiting call of p gets the outcome (once). */
static void pending_settle(bs_pending_t *p)
{
    if (p->waiter == NULL)
        return;
    mcp_call_t *c = wait_end(p->waiter);
    finish_pending(c, p);
    pending_release(p); /* told: the outcome is used */
}

static void pending_logged_in(void *data, int status, const char *json, const char *error)
{
    bs_pending_t *p = data;
    p->login_running = false;
    if (p->page != NULL) {
        if (bs_page_report(p->page, p->handle, status, json, error, pending_listed(p))) {
            /* Refused: the page takes another try, a round three waits on. */
            free(p->error);
            p->error = strdup(error ? error : "Bluesky refused the login");
            return;
        }
        p->page = NULL;
    }
    p->done = true;
    p->status = status;
    free(p->error);
    p->error = NULL;
    if (status == 0)
        p->account = json ? strdup(json) : NULL;
    else
        p->error = strdup(error ? error : uv_strerror(status));
    if (!pending_listed(p)) {
        pending_release(p);
        return;
    }
    pending_settle(p);
}

static void pending_page_done(secret_page_t *page, int status, const char *secret, void *data)
{
    bs_pending_t *p = data;
    if (status == 0) { /* a password typed on the page (verify: it stays open) */
        if (pending_listed(p)) {
            p->login_running = true;
            int rc =
                connector_login(p->ctx->conn, p->handle, secret, p->service, pending_logged_in, p);
            if (rc == 0)
                return;
            p->login_running = false;
            status = rc;
        } else {
            status = UV_ECANCELED;
        }
        p->page = NULL;
        bs_page_report(page, p->handle, status, NULL,
                       status == UV_ECANCELED ? "this login was withdrawn" : uv_strerror(status),
                       false);
    } else {
        p->page = NULL;
        if (p->login_running)
            return; /* the login's answer settles p */
    }
    p->done = true;
    p->status = status;
    char msg[900];
    if (status == UV_ETIMEDOUT && p->error != NULL) { /* Bluesky refused what was typed */
        snprintf(msg, sizeof msg,
                 "%.600s; the password page expired before a password Bluesky accepted was "
                 "typed; nothing was stored",
                 p->error);
        p->status = UV_EACCES;
    } else {
        snprintf(msg, sizeof msg, "%s",
                 status == UV_ETIMEDOUT ? "The password page expired before a password was "
                                          "typed; nothing was stored"
                                        : "The password page was closed; nothing was stored");
    }
    free(p->error);
    p->error = strdup(msg);
    if (!pending_listed(p)) {
        pending_release(p);
        return;
    }
    pending_settle(p);
}

/* ---- round 3: the outcome ------------------------------------------------ */

static json_t *page_request(const char *handle, const char *service, const char *url);

/* Asks round 3 again: the page is still open and nothing came yet. */
static void ask_again(mcp_call_t *c, const json_t *state)
{
    const char *url = json_string_value(json_object_get(state, "url"));
    mcp_call_finish_input_required(
        c,
        json_pack("{s:o}", "password_page",
                  page_request(json_string_value(json_object_get(state, "handle")),
                               json_string_value(json_object_get(state, "service")), url)),
        json_deep_copy(state));
}

static void waiter_timeout(uv_timer_t *t)
{
    bs_wait_t *w = t->data;
    bs_pending_t *p = w->p;
    mcp_call_t *c = wait_end(w);
    ask_again(c, mcp_call_request_state(c));
    if (p != NULL && !pending_listed(p))
        pending_release(p);
}

static void waiter_cancelled(mcp_call_t *c)
{
    bs_wait_t *w = c->data;
    bs_pending_t *p = w->p;
    wait_end(w);
    mcp_call_finish_error(c, "cancelled");
    if (p != NULL && !pending_listed(p))
        pending_release(p);
}

/* On another daemon: the store says whether the account logged in since
 * round 2 (its last login changed). */
typedef struct poll_s {
    mcp_call_t *c;
    uv_timer_t timer;
    uint64_t deadline;
    bool cancelled;
} poll_t;

static void poll_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Detaches pl from its call and closes it; the caller then answers the
 * call (which frees it). */
static void poll_end(poll_t *pl)
{
    pl->c->on_cancel = NULL;
    pl->c->data = NULL;
    uv_close((uv_handle_t *)&pl->timer, poll_closed);
}

static void poll_tick(uv_timer_t *t);

static void poll_listed(void *data, int status, const char *json, const char *error)
{
    poll_t *pl = data;
    mcp_call_t *c = pl->c;
    (void)error;
    if (pl->cancelled) {
        poll_end(pl);
        mcp_call_finish_error(c, "cancelled");
        return;
    }
    const json_t *st = mcp_call_request_state(c);
    const char *handle = json_string_value(json_object_get(st, "handle"));
    const char *before = json_string_value(json_object_get(st, "before"));
    json_t *list = status == 0 ? json_loads(json, 0, NULL) : NULL;
    size_t i;
    json_t *a;
    json_array_foreach(list, i, a)
    {
        const char *h = json_string_value(json_object_get(a, "handle"));
        const char *last = json_string_value(json_object_get(a, "lastLoginAt"));
        if (h && handle && strcmp(h, handle) == 0 && last &&
            (before == NULL || strcmp(last, before) != 0)) {
            char *text = json_dumps(a, JSON_COMPACT);
            poll_end(pl);
            bs_finish_logged_in(c, text);
            free(text);
            json_decref(list);
            return;
        }
    }
    json_decref(list);
    if (uv_now(pl->timer.loop) >= pl->deadline) {
        poll_end(pl);
        ask_again(c, st);
        return;
    }
    uv_timer_start(&pl->timer, poll_tick, BS_LOGIN_POLL_MS, 0);
}

static void poll_tick(uv_timer_t *t)
{
    poll_t *pl = t->data;
    bs_ctx_t *ctx = mcp_call_context(pl->c);
    if (pl->cancelled || connector_accounts(ctx->conn, "list", NULL, poll_listed, pl) != 0)
        poll_listed(pl, UV_EIO, NULL, NULL);
}

static void poll_cancelled(mcp_call_t *c)
{
    poll_t *pl = c->data;
    pl->cancelled = true; /* the timer or the query comes back and ends it */
}

static void round_outcome(mcp_call_t *c, bs_ctx_t *ctx, const json_t *state)
{
    const json_t *answer = mcp_call_input_response(c, "password_page");
    const char *action = json_string_value(json_object_get(answer, "action"));
    bs_pending_t *p = pending_find(ctx, json_string_value(json_object_get(state, "page")));
    if (action != NULL && strcmp(action, "accept") != 0) {
        bool declined = strcmp(action, "decline") == 0;
        const char *text = declined
                               ? "The user declined to open the password page; nothing was "
                                 "stored. Ask before calling login again."
                               : "The user dismissed the password request; nothing was stored.";
        if (p != NULL) {
            /* An earlier round that waits for this page gets the same
             * answer; then the page is withdrawn. p stays allocated while
             * its page is open; the page's callback (it runs inside the
             * cancel) frees it: p is not touched after. */
            if (p->waiter != NULL)
                bs_finish(wait_end(p->waiter), text,
                          json_pack("{s:s}", "status", declined ? "declined" : "cancelled"));
            secret_page_t *page = p->page;
            pending_release(p);
            if (page != NULL)
                secret_page_cancel(page);
        }
        bs_finish(c, text, json_pack("{s:s}", "status", declined ? "declined" : "cancelled"));
        return;
    }
    /* The page lives SECRET_PAGE_TTL_MS from round two: past that, nothing
     * can come any more, on any daemon. */
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    json_int_t now_ms = (json_int_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    const json_t *expires = json_object_get(state, "expiresAt");
    if (p == NULL && json_is_integer(expires) && json_integer_value(expires) < now_ms) {
        mcp_call_finish_error(c, "The password page expired before a password was typed; nothing "
                                 "was stored. Call login again for a new page.");
        return;
    }
    if (p != NULL && p->done) {
        finish_pending(c, p);
        pending_release(p);
        return;
    }
    if (p != NULL) { /* this daemon's page: wait for it */
        if (p->waiter != NULL) {
            mcp_call_finish_error(c, "Another call of login already waits for this password page: "
                                     "wait for it to return (at most a minute), or call login "
                                     "again without requestState to start over.");
            return;
        }
        bs_wait_t *w = calloc(1, sizeof *w);
        if (w == NULL) {
            mcp_call_finish_error(c, "out of memory");
            return;
        }
        w->p = p;
        w->c = c;
        uv_timer_init(mcp_call_loop(c), &w->timer);
        w->timer.data = w;
        p->waiter = w;
        c->data = w;
        c->on_cancel = waiter_cancelled;
        uv_timer_start(&w->timer, waiter_timeout, BS_LOGIN_WAIT_MS, 0);
        return;
    }
    /* Another daemon's page (or a restarted one): ask the store. */
    poll_t *pl = calloc(1, sizeof *pl);
    if (pl == NULL) {
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    pl->c = c;
    uv_timer_init(mcp_call_loop(c), &pl->timer);
    pl->timer.data = pl;
    pl->deadline = uv_now(mcp_call_loop(c)) + BS_LOGIN_WAIT_MS;
    c->data = pl;
    c->on_cancel = poll_cancelled;
    poll_tick(&pl->timer);
}

/* ---- round 2: the page ---------------------------------------------------- */

static json_t *page_request(const char *handle, const char *service, const char *url)
{
    char message[1800], where[500] = "";
    if (service)
        snprintf(where, sizeof where,
                 " WARNING: it will be sent to %.300s, a service the assistant named, not the "
                 "Bluesky service this parley is set up for.",
                 service);
    snprintf(message, sizeof message,
             "Open this page to type the Bluesky app password for @%s. It is served by parley "
             "on this computer, takes tries until Bluesky accepts one and expires in 10 "
             "minutes; the password never "
             "passes through this chat. Create an app password at " BSKY_APP_PASSWORDS_URL
             " (never use the main password).%s",
             handle ? handle : "?", where);
    return json_pack("{s:s, s:{s:s, s:s, s:s}}", "method", "elicitation/create", "params", "mode",
                     "url", "message", message, "url", url ? url : "");
}

typedef struct page_round_s {
    mcp_call_t *c;
    char *handle;
} page_round_t;

static void open_page(void *data, int status, const char *json, const char *error)
{
    page_round_t *pr = data;
    mcp_call_t *c = pr->c;
    bs_ctx_t *ctx = mcp_call_context(c);
    char *handle = pr->handle;
    free(pr);
    (void)error;
    const char *svc = bs_arg(c, "service");
    /* The account's last login as the store has it now. */
    const char *before = NULL;
    json_t *list = status == 0 ? json_loads(json, 0, NULL) : NULL;
    size_t i;
    json_t *a;
    json_array_foreach(list, i, a)
    {
        const char *h = json_string_value(json_object_get(a, "handle"));
        if (h != NULL && strcmp(h, handle) == 0)
            before = json_string_value(json_object_get(a, "lastLoginAt"));
    }
    /* Make room: pendings past their time (their page expired; a round
     * three elsewhere read the store), then one whose outcome is known. */
    uint64_t now = uv_now(mcp_call_loop(c));
    for (int k = ctx->npending - 1; k >= 0; k--)
        if (ctx->pending[k]->waiter == NULL && now - ctx->pending[k]->opened_at > BS_PENDING_TTL_MS)
            pending_release(ctx->pending[k]);
    for (int k = 0; ctx->npending == BS_PENDING_MAX && k < ctx->npending; k++)
        if (ctx->pending[k]->done && ctx->pending[k]->waiter == NULL)
            pending_release(ctx->pending[k]);
    bs_pending_t *p = ctx->npending < BS_PENDING_MAX ? calloc(1, sizeof *p) : NULL;
    uint8_t rnd[16];
    if (p == NULL || uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL) != 0) {
        free(p);
        json_decref(list);
        free(handle);
        mcp_call_finish_error(c, "too many logins in progress; try again in a minute");
        return;
    }
    str_hex(rnd, sizeof rnd, p->id);
    p->ctx = ctx;
    p->handle = handle;
    p->service = svc ? strdup(svc) : NULL;
    p->opened_at = now;
    ctx->pending[ctx->npending++] = p;
    char title[400], text[900], url[256];
    snprintf(title, sizeof title, "Bluesky app password for @%s%s%.200s", handle, svc ? " at " : "",
             svc ? svc : "");
    snprintf(text, sizeof text,
             "Type an app password of @%s for parley. It goes from this page to parley on this "
             "computer only; it never passes through the chat. Use an app password, never "
             "the main account password.",
             handle);
    json_t *port = json_object_get(c->args, "port");
    secret_page_options_t o = {.port = json_is_integer(port) ? (int)json_integer_value(port) : 0,
                               .title = title,
                               .text = text,
                               .link_url = BSKY_APP_PASSWORDS_URL,
                               .link_text = "Create an app password",
                               .verify = true};
    int rc = secret_page_open(ctx->pages, &o, pending_page_done, p, url, sizeof url, &p->page);
    if (rc != 0) {
        json_decref(list);
        pending_release(p);
        mcp_call_finish_error(c,
                              "The password page could not be opened (%s); call login with handle "
                              "and an app password instead.",
                              uv_strerror(rc));
        return;
    }
    uv_timeval64_t tv;
    uv_gettimeofday(&tv);
    json_int_t expires = (json_int_t)tv.tv_sec * 1000 + tv.tv_usec / 1000 + SECRET_PAGE_TTL_MS;
    json_t *state = json_pack("{s:s, s:s, s:s, s:I, s:s?, s:s?}", "page", p->id, "handle", handle,
                              "url", url, "expiresAt", expires, "service", svc, "before", before);
    json_decref(list);
    mcp_call_finish_input_required(
        c, json_pack("{s:o}", "password_page", page_request(handle, svc, url)), state);
}

void bs_login_rounds(mcp_call_t *c, const char *handle)
{
    bs_ctx_t *ctx = mcp_call_context(c);
    const json_t *state = mcp_call_request_state(c);
    if (json_object_get(state, "page") != NULL) {
        round_outcome(c, ctx, state);
        return;
    }
    const json_t *hr = mcp_call_input_response(c, "handle");
    if (handle == NULL && hr != NULL) {
        const char *action = json_string_value(json_object_get(hr, "action"));
        if (action == NULL || strcmp(action, "accept") != 0) {
            bool declined = action && strcmp(action, "decline") == 0;
            bs_finish(c,
                      declined ? "The user declined to give a handle; nothing was stored."
                               : "The user dismissed the login; nothing was stored.",
                      json_pack("{s:s}", "status", declined ? "declined" : "cancelled"));
            return;
        }
        handle = json_string_value(json_object_get(json_object_get(hr, "content"), "handle"));
        while (handle && (*handle == ' ' || *handle == '@'))
            handle++;
        if (handle == NULL || !bs_handle_valid(handle)) {
            mcp_call_finish_error(c, "The handle given is not a handle (e.g. alice.bsky.social); "
                                     "call login again.");
            return;
        }
    }
    if (handle == NULL) {
        json_t *schema =
            json_pack("{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}", "type", "object", "properties",
                      "handle", "type", "string", "title", "Bluesky handle", "description",
                      "e.g. alice.bsky.social", "required", "handle");
        mcp_call_finish_input_required(
            c,
            json_pack("{s:{s:s, s:{s:s, s:s, s:o}}}", "handle", "method", "elicitation/create",
                      "params", "mode", "form", "message",
                      "Which Bluesky account should parley log in as? (The app password is "
                      "asked next, on a local page.)",
                      "requestedSchema", schema),
            NULL);
        return;
    }
    page_round_t *pr = calloc(1, sizeof *pr);
    if (pr == NULL || (pr->handle = strdup(handle)) == NULL) {
        free(pr);
        mcp_call_finish_error(c, "out of memory");
        return;
    }
    pr->c = c;
    if (connector_accounts(ctx->conn, "list", NULL, open_page, pr) != 0)
        open_page(pr, UV_EIO, NULL, NULL);
}

void bs_login_rounds_close(bs_ctx_t *ctx)
{
    while (ctx->npending > 0) {
        bs_pending_t *p = ctx->pending[0];
        if (p->waiter != NULL)
            mcp_call_finish_error(wait_end(p->waiter), "parleyd is stopping; call login again");
        if (p->page != NULL)
            secret_page_cancel(p->page);
        pending_release(p);
    }
}
