/* login_rounds: the bluesky login tool under MCP 2026-07-28, by multi
 * round-trip requests (see bluesky_internal.h), on toolsets/login_rounds.h
 * (the logins held, their outcomes, the waiting rounds): what is
 * Bluesky's is here.
 *
 *   1. no handle: input_required {handle: a form for the handle};
 *   2. a handle: the password page opens on this daemon (loopback, one
 *      time, as in login.c), and the answer is input_required
 *      {password_page: URL mode} with the state {page, url, expiresAt,
 *      handle, service, before: the account's last login as the store had
 *      it};
 *   3. the client's consent comes back: the daemon that holds the page
 *      waits for it (the password typed there logs in at once, whether or
 *      not a call waits; a password Bluesky refuses is reported on the
 *      page, which takes another try until it expires, and the outcome
 *      waits on); any other daemon behind the same balancer asks
 *      the store whether the account logged in since round 2. Declined or
 *      dismissed is an outcome; still waiting after LOGIN_ROUNDS_WAIT_MS,
 *      the round is asked again.
 *
 * The password goes from the page to this daemon and the connector only,
 * never through the client, the model or the state. Pending logins are
 * bounded (BS_PENDING_MAX; the oldest finished one makes room). What both
 * revisions share is here too: the answer of a login
 * (bs_finish_logged_in), the handle's form and its answer, the password
 * page, its request's words and what the page says of the login
 * (bs_page_report). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/bluesky/bluesky_internal.h"

/* A password page this daemon opened, and what came of it (lr). */
typedef struct bs_pending_s {
    login_rounds_login_t lr; /* first */
    bs_ctx_t *ctx;           /* its toolset (while lr is listed) */
    char *handle, *service;
    secret_page_t *page;
    bool login_running;
} bs_pending_t;

/* ---- what both revisions share ------------------------------------------ */

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

json_t *bs_handle_form(void)
{
    json_t *schema = json_pack("{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}", "type", "object",
                               "properties", "handle", "type", "string", "title", "Bluesky handle",
                               "description", "e.g. alice.bsky.social", "required", "handle");
    return json_pack("{s:s, s:s, s:o}", "mode", "form", "message",
                     "Which Bluesky account should parley log in as? (The app password is asked "
                     "next, on a local page.)",
                     "requestedSchema", schema);
}

const char *bs_handle_answer(mcp_call_t *c, const json_t *answer)
{
    login_rounds_answer_t a = login_rounds_answer(answer);
    if (a != LOGIN_ROUNDS_ACCEPT) {
        bool declined = a == LOGIN_ROUNDS_DECLINE;
        bs_finish(c,
                  declined ? "The user declined to give a handle; nothing was stored."
                           : "The user dismissed the login; nothing was stored.",
                  json_pack("{s:s}", "status", declined ? "declined" : "cancelled"));
        return NULL;
    }
    const char *h =
        json_string_value(json_object_get(json_object_get(answer, "content"), "handle"));
    while (h && (*h == ' ' || *h == '@'))
        h++;
    if (h == NULL || !bs_handle_valid(h)) {
        mcp_call_finish_error(c, "The handle given is not a handle (e.g. alice.bsky.social); call "
                                 "login again.");
        return NULL;
    }
    return h;
}

void bs_service_warning(const char *service, bool trust, char *out, size_t cap)
{
    if (service == NULL) {
        out[0] = '\0';
        return;
    }
    snprintf(out, cap,
             " WARNING: it will be sent to %.300s, a service the assistant named, not the "
             "Bluesky service this parley is set up for.%s",
             service, trust ? " Type it only if you trust that service." : "");
}

void bs_page_message(const char *handle, const char *warning, char *out, size_t cap)
{
    snprintf(out, cap,
             "Open this page to type the Bluesky app password for @%s. It is served by parley "
             "on this computer, takes tries until Bluesky accepts one and expires in 10 "
             "minutes; the password never "
             "passes through this chat. Create an app password at " BSKY_APP_PASSWORDS_URL
             " (never use the main password).%s",
             handle ? handle : "?", warning);
}

int bs_page_open(const bs_ctx_t *ctx, const char *handle, const char *service, int port,
                 const char *warning, secret_page_cb cb, void *data, char *url, size_t urlcap,
                 secret_page_t **page)
{
    char title[400], text[1200];
    snprintf(title, sizeof title, "Bluesky app password for @%s%s%.200s", handle,
             service ? " at " : "", service ? service : "");
    snprintf(text, sizeof text,
             "Type an app password of @%s for parley. It goes from this page to parley on this "
             "computer only; it never passes through the chat. Use an app password, never "
             "the main account password.%s",
             handle, warning);
    secret_page_options_t o = {.port = port,
                               .title = title,
                               .text = text,
                               .link_url = BSKY_APP_PASSWORDS_URL,
                               .link_text = "Create an app password",
                               .verify = true};
    return secret_page_open(ctx->pages, &o, cb, data, url, urlcap, page);
}

/* ---- the rounds' part of a login (login_rounds.h) ------------------------ */

static void pending_page_message(const json_t *state, char *out, size_t cap)
{
    char warning[500];
    bs_service_warning(json_string_value(json_object_get(state, "service")), false, warning,
                       sizeof warning);
    bs_page_message(json_string_value(json_object_get(state, "handle")), warning, out, cap);
}

static void pending_finish(mcp_call_t *c, const login_rounds_login_t *l)
{
    if (l->status == 0) {
        bs_finish_logged_in(c, l->account);
        return;
    }
    mcp_call_finish_error(c,
                          "%s. Check the handle, and use an app password (" BSKY_APP_PASSWORDS_URL
                          "), never the main account password; call login again.",
                          l->error ? l->error : "Bluesky refused the login");
}

static void pending_said_no(mcp_call_t *c, bool declined)
{
    bs_finish(c,
              declined ? "The user declined to open the password page; nothing was stored. Ask "
                         "before calling login again."
                       : "The user dismissed the password request; nothing was stored.",
              json_pack("{s:s}", "status", declined ? "declined" : "cancelled"));
}

/* Withdraws the page (its callback, from inside, settles the login). */
static void pending_withdraw(login_rounds_login_t *l)
{
    bs_pending_t *p = (bs_pending_t *)l;
    if (p->page != NULL)
        secret_page_cancel(p->page);
}

static bool pending_held(const login_rounds_login_t *l)
{
    const bs_pending_t *p = (const bs_pending_t *)l;
    return p->page != NULL || p->login_running;
}

static void pending_free(login_rounds_login_t *l)
{
    bs_pending_t *p = (bs_pending_t *)l;
    free(p->handle);
    free(p->service);
    free(p);
}

const login_rounds_ops_t bs_login_ops = {
    .tool = "login",
    .state_key = "page",
    .page_key = "password_page",
    .busy = "Another call of login already waits for this password page: wait for it to return "
            "(at most a minute), or call login again without requestState to start over.",
    .max = BS_PENDING_MAX,
    .page_message = pending_page_message,
    .finish = pending_finish,
    .said_no = pending_said_no,
    .withdraw = pending_withdraw,
    .stop = pending_withdraw,
    .held = pending_held,
    .free = pending_free,
};

/* ---- the page's outcome ---------------------------------------------------- */

static void pending_logged_in(void *data, int status, const char *json, const char *error)
{
    bs_pending_t *p = data;
    p->login_running = false;
    if (p->page != NULL) {
        if (bs_page_report(p->page, p->handle, status, json, error, login_rounds_listed(&p->lr))) {
            /* Refused: the page takes another try, a round three waits on. */
            login_rounds_set_error(&p->lr, "%s", error ? error : "Bluesky refused the login");
            return;
        }
        p->page = NULL;
    }
    p->lr.done = true;
    p->lr.status = status;
    free(p->lr.error);
    p->lr.error = NULL;
    if (status == 0)
        p->lr.account = json ? strdup(json) : NULL;
    else
        login_rounds_set_error(&p->lr, "%s", error ? error : uv_strerror(status));
    login_rounds_settle(&p->lr, true);
}

static void pending_page_done(secret_page_t *page, int status, const char *secret, void *data)
{
    bs_pending_t *p = data;
    if (status == 0) { /* a password typed on the page (verify: it stays open) */
        if (login_rounds_listed(&p->lr)) {
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
    p->lr.done = true;
    p->lr.status = status;
    if (status == UV_ETIMEDOUT && p->lr.error != NULL) { /* Bluesky refused what was typed */
        login_rounds_set_error(&p->lr,
                               "%.600s; the password page expired before a password Bluesky "
                               "accepted was typed; nothing was stored",
                               p->lr.error);
        p->lr.status = UV_EACCES;
    } else {
        login_rounds_set_error(&p->lr, "%s",
                               status == UV_ETIMEDOUT
                                   ? "The password page expired before a password was typed; "
                                     "nothing was stored"
                                   : "The password page was closed; nothing was stored");
    }
    login_rounds_settle(&p->lr, true);
}

/* ---- round 3 on another daemon: the store ---------------------------------- */

/* Whether the account logged in since round 2 (its last login changed). */
static void poll_listed(void *data, int status, const char *json, const char *error)
{
    login_rounds_wait_t *w = data;
    mcp_call_t *c = login_rounds_poll_call(w);
    (void)error;
    if (c == NULL)
        return;
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
            login_rounds_poll_end(w);
            bs_finish_logged_in(c, text);
            free(text);
            json_decref(list);
            return;
        }
    }
    json_decref(list);
    login_rounds_poll_again(w);
}

static void poll_tick(login_rounds_wait_t *w, mcp_call_t *c)
{
    bs_ctx_t *ctx = mcp_call_context(c);
    if (connector_accounts(ctx->conn, "list", NULL, poll_listed, w) != 0)
        poll_listed(w, UV_EIO, NULL, NULL);
}

/* ---- round 2: the page ------------------------------------------------------ */

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
    bs_pending_t *p = calloc(1, sizeof *p);
    if (p == NULL || login_rounds_add(&ctx->logins, &p->lr, uv_now(mcp_call_loop(c))) != 0) {
        free(p);
        json_decref(list);
        free(handle);
        mcp_call_finish_error(c, "too many logins in progress; try again in a minute");
        return;
    }
    p->ctx = ctx;
    p->handle = handle;
    p->service = svc ? strdup(svc) : NULL;
    char url[256], warning[700];
    /* A service the model named gets the password: the page says so, as
     * the 2025-11-25 login's does. */
    bs_service_warning(svc, true, warning, sizeof warning);
    json_t *port = json_object_get(c->args, "port");
    int rc =
        bs_page_open(ctx, handle, svc, json_is_integer(port) ? (int)json_integer_value(port) : 0,
                     warning, pending_page_done, p, url, sizeof url, &p->page);
    if (rc != 0) {
        json_decref(list);
        login_rounds_unlist(&p->lr);
        mcp_call_finish_error(c,
                              "The password page could not be opened (%s); call login with handle "
                              "and an app password instead.",
                              uv_strerror(rc));
        return;
    }
    json_t *fields =
        json_pack("{s:s, s:s?, s:s?}", "handle", handle, "service", svc, "before", before);
    json_decref(list);
    login_rounds_ask_page(c, &p->lr, url, fields);
}

/* ---- the rounds ------------------------------------------------------------- */

void bs_login_rounds(mcp_call_t *c, const char *handle)
{
    bs_ctx_t *ctx = mcp_call_context(c);
    const json_t *state = mcp_call_request_state(c);
    if (json_object_get(state, "page") != NULL) { /* round 3 */
        if (login_rounds_outcome(&ctx->logins, c, state))
            return;
        /* The page lives SECRET_PAGE_TTL_MS from round two: past that,
         * nothing can come any more, on any daemon. */
        if (login_rounds_expired(state)) {
            mcp_call_finish_error(c, "The password page expired before a password was typed; "
                                     "nothing was stored. Call login again for a new page.");
            return;
        }
        /* Another daemon's page (or a restarted one): ask the store. */
        login_rounds_poll(c, &bs_login_ops, BS_LOGIN_POLL_MS, poll_tick);
        return;
    }
    const json_t *hr = mcp_call_input_response(c, "handle");
    if (handle == NULL && hr != NULL && (handle = bs_handle_answer(c, hr)) == NULL)
        return;
    if (handle == NULL) {
        mcp_call_finish_input_required(c,
                                       json_pack("{s:{s:s, s:o}}", "handle", "method",
                                                 "elicitation/create", "params", bs_handle_form()),
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
