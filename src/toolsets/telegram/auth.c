/* auth: the telegram toolset's authLogin tool: signing a Telegram user
 * account in while parleyd serves, through the connector's sign-in in
 * steps (connector_signin, connector.h), for clients that can elicit.
 *
 * The phone number comes from the argument or a form; the login code and
 * then the two-step verification password (when the account has one) are
 * typed on a one-time page on loopback (transport/secret_page.h) that the
 * client is asked to open by URL-mode elicitation: secrets never go
 * through a form, the client or the model. The page is a verify page: it
 * says "Checking" while the connector tries what was typed, then asks for
 * the password on the same page, then says how it ended. Under 2025-11-25
 * the call asks the client by requests and ends with the outcome; under
 * 2026-07-28 each call is a round (multi round-trip requests):
 *
 *   1. no phone: input_required {phone: a form};
 *   2. a phone: the sign-in starts, and once Telegram sent its code the
 *      page opens on this daemon and the answer is input_required
 *      {login_page: URL mode} with the state {login, url, phone,
 *      expiresAt};
 *   3. the client's consent: the call waits for the outcome (at most
 *      TG_LOGIN_WAIT_MS, then the round is asked again); declined or
 *      dismissed ends the sign-in. A round 3 on another daemon (or after
 *      a restart) is told to start again: the sign-in lives in the daemon
 *      that runs its TDLib client.
 *
 * A refusal (a wrong code or password) ends the sign-in with isError and
 * Telegram's reason; calling again starts a new one (Telegram sends a new
 * code). A client without URL-mode elicitation (or form mode, when the
 * phone is not given) is told to sign in with `parleyd login telegram` on
 * the server, and nothing is asked.
 *
 * Lifetime: a tg_login_t lives until its connector sign-in ended (its
 * last step), its page is gone, no call waits on it and it is unlisted
 * from the toolset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/telegram/tg_toolset.h"
#include "transport/secret_page.h"
#include "util/strutil.h"

/* How long a round 3 waits for the outcome before asking again. */
#define TG_LOGIN_WAIT_MS 60000
/* How long a finished sign-in's outcome is kept for its round 3. */
#define TG_LOGIN_TTL_MS (15u * 60 * 1000)

#define TG_NO_ELICITATION                                                                          \
    "This client cannot ask for the login code safely: signing a Telegram account in here "        \
    "needs MCP elicitation with URL mode (the code and the password are typed on a local page "    \
    "parley opens, never in the chat)%s. Nothing was asked. Sign the account in on the server "    \
    "instead: run `parleyd login telegram --phone +NNN` there (it asks for the code and the "      \
    "password on the terminal); the running parleyd serves it after a restart."

typedef struct tg_wait_s tg_wait_t;

typedef struct tg_login_s {
    tg_toolset_t *ts; /* NULL once unlisted */
    connector_t *conn;
    char id[33]; /* names it in requestState */
    char phone[32];
    void *signin; /* the connector's sign-in until its last step */
    secret_page_t *page;
    bool checking; /* what was typed on the page is with the connector */
    bool rounds;   /* 2026-07-28 */
    char url[SECRET_PAGE_URL_MAX];
    char elicitation_id[40];
    /* The call waiting: 2025-11-25 the call itself; 2026-07-28 round 2
     * until the page opens. */
    mcp_call_t *call;
    tg_wait_t *waiter; /* 2026-07-28: a round 3 waiting */
    bool done;         /* the outcome is known */
    int status;
    char *account; /* the connector's account JSON on success */
    char error[600];
    const char *said_no; /* "declined" or "cancelled": the user's answer */
    uint64_t opened_at;
} tg_login_t;

struct tg_wait_s {
    uv_timer_t timer;
    tg_login_t *p; /* NULL once the wait ended */
    mcp_call_t *c;
};

/* ---- the list, and freeing ---------------------------------------------------------- */

static void login_maybe_free(tg_login_t *p)
{
    if (p->ts != NULL || p->signin != NULL || p->page != NULL || p->call != NULL ||
        p->waiter != NULL)
        return;
    free(p->account);
    free(p);
}

static void login_unlist(tg_login_t *p)
{
    tg_toolset_t *ts = p->ts;
    for (int i = 0; ts != NULL && i < ts->nlogins; i++)
        if (ts->logins[i] == p) {
            ts->logins[i] = ts->logins[--ts->nlogins];
            break;
        }
    p->ts = NULL;
    login_maybe_free(p);
}

static tg_login_t *login_find(tg_toolset_t *ts, const char *id)
{
    for (int i = 0; id != NULL && i < ts->nlogins; i++)
        if (strcmp(ts->logins[i]->id, id) == 0)
            return ts->logins[i];
    return NULL;
}

/* ---- answers -------------------------------------------------------------------------- */

static void finish_outcome(mcp_call_t *c, const char *status, const char *text)
{
    json_t *o = json_pack("{s:s, s:s}", "status", status, "message", text);
    tg_ts_finish_obj(c, o);
}

/* Finishes c with p's outcome. */
static void finish_login(mcp_call_t *c, const tg_login_t *p)
{
    if (p->said_no != NULL) {
        bool declined = strcmp(p->said_no, "declined") == 0;
        finish_outcome(c, p->said_no,
                       declined ? "The user declined to open the login page; no account was "
                                  "signed in. Ask before calling authLogin again."
                                : "The user dismissed the login page; no account was signed in.");
        return;
    }
    if (p->status != 0) {
        mcp_call_finish_error(c, "%s", p->error);
        return;
    }
    json_t *acct = p->account ? json_loads(p->account, 0, NULL) : NULL;
    const char *name = json_string_value(json_object_get(acct, "name"));
    const char *un = json_string_value(json_object_get(acct, "username"));
    const char *uid = json_string_value(json_object_get(acct, "userId"));
    const char *handle = json_string_value(json_object_get(acct, "account"));
    char text[900];
    snprintf(text, sizeof text,
             "Signed in to Telegram as %s%s%s (user id %s) as account '%s'. It serves from now "
             "on: its chats are loading into the archive (channelsList lists them), authStatus "
             "reports it, and parleyd starts it signed in after a restart.",
             name && name[0] ? name : "?", un ? ", @" : "", un ? un : "", uid ? uid : "?",
             handle ? handle : "?");
    json_t *o = json_pack("{s:s, s:s, s:o}", "status", "signed_in", "message", text, "account",
                          acct ? acct : json_object());
    tg_ts_finish_obj(c, o);
}

/* ---- 2026-07-28: a round 3 waiting -------------------------------------------------------- */

static void wait_closed(uv_handle_t *h)
{
    free(h->data);
}

/* Ends w (once) and gives back its call, for the caller to answer. */
static mcp_call_t *wait_end(tg_wait_t *w)
{
    mcp_call_t *c = w->c;
    tg_login_t *p = w->p;
    w->p = NULL;
    if (p != NULL)
        p->waiter = NULL;
    c->on_cancel = NULL;
    c->data = NULL;
    uv_close((uv_handle_t *)&w->timer, wait_closed);
    return c;
}

static json_t *page_request(const char *phone, const char *url);

static void ask_again(mcp_call_t *c, const json_t *state)
{
    mcp_call_finish_input_required(
        c,
        json_pack("{s:o}", "login_page",
                  page_request(json_string_value(json_object_get(state, "phone")),
                               json_string_value(json_object_get(state, "url")))),
        json_deep_copy(state));
}

static void wait_timeout(uv_timer_t *t)
{
    tg_wait_t *w = t->data;
    tg_login_t *p = w->p;
    mcp_call_t *c = wait_end(w);
    ask_again(c, mcp_call_request_state(c));
    if (p != NULL)
        login_maybe_free(p);
}

static void wait_cancelled(mcp_call_t *c)
{
    tg_wait_t *w = c->data;
    tg_login_t *p = w->p;
    wait_end(w);
    mcp_call_finish_error(c, "cancelled");
    if (p != NULL)
        login_maybe_free(p);
}

/* ---- the outcome ----------------------------------------------------------------------------- */

/* The outcome is known: the waiting call (if any) gets it, and p is
 * unlisted unless a round 3 may still ask for it. p may be freed. */
static void login_settle(tg_login_t *p)
{
    mcp_call_t *c = NULL;
    if (p->call != NULL) { /* 2025-11-25, or a 2026-07-28 round 2 ended before its page */
        c = p->call;
        p->call = NULL;
        c->on_cancel = NULL;
        c->data = NULL;
        if (!p->rounds && p->status == 0 && p->said_no == NULL)
            mcp_call_notify(c, "notifications/elicitation/complete",
                            json_pack("{s:s}", "elicitationId", p->elicitation_id));
    } else if (p->waiter != NULL) {
        c = wait_end(p->waiter);
    }
    if (c != NULL)
        finish_login(c, p);
    if (c != NULL || !p->rounds || p->said_no != NULL)
        login_unlist(p); /* nobody asks for it again */
    else
        login_maybe_free(p);
}

/* What the page says at the end. */
static void page_final(tg_login_t *p)
{
    if (p->page == NULL)
        return;
    secret_page_t *page = p->page;
    if (!p->checking) {
        secret_page_cancel(page); /* its callback clears p->page */
        return;
    }
    char msg[900];
    if (p->status == 0)
        snprintf(msg, sizeof msg,
                 "Signed in to Telegram \xe2\x80\x94 you can close this tab and return to your "
                 "assistant.");
    else
        snprintf(msg, sizeof msg,
                 "The sign-in failed: %.600s. Return to your assistant: it can start a new "
                 "sign-in, for which Telegram sends a new code.",
                 p->error);
    p->page = NULL;
    p->checking = false;
    secret_page_result(page, true, msg);
}

static void login_open_page(tg_login_t *p, const char *ask, const char *hint);

/* The connector's sign-in: an ask, or its end. */
static void login_step(void *data, bool done, int status, const char *json, const char *error)
{
    tg_login_t *p = data;
    if (!done) {
        json_t *q = json ? json_loads(json, 0, NULL) : NULL;
        const char *ask = json_string_value(json_object_get(q, "ask"));
        const char *hint = json_string_value(json_object_get(q, "hint"));
        if (p->page == NULL && !p->done && p->call != NULL) {
            login_open_page(p, ask ? ask : "code", hint);
        } else if (p->page != NULL && p->checking) {
            char msg[600];
            bool pw = ask && strcmp(ask, "password") == 0;
            snprintf(msg, sizeof msg,
                     "%s Now type the account's two-step verification password%s%.200s%s.",
                     pw ? "The code was accepted." : "Telegram asks again.",
                     pw && hint ? " (hint: " : "", pw && hint ? hint : "", pw && hint ? ")" : "");
            p->checking = false;
            secret_page_result(p->page, false, pw ? msg : "Type the login code again.");
        }
        json_decref(q);
        return;
    }
    p->signin = NULL;
    p->done = true;
    p->status = status;
    if (status == 0) {
        p->account = json ? strdup(json) : NULL;
    } else if (p->error[0] == '\0') {
        if (status == UV_EACCES)
            snprintf(p->error, sizeof p->error,
                     "Telegram refused the sign-in: %.400s. Nothing else changed; call authLogin "
                     "again to start over (Telegram sends a new code).",
                     error ? error : "refused");
        else if (status == UV_ECANCELED)
            snprintf(p->error, sizeof p->error, "The sign-in was withdrawn%s%.400s.",
                     error ? ": " : "", error ? error : "");
        else
            snprintf(p->error, sizeof p->error, "The sign-in failed: %.500s",
                     error ? error : uv_strerror(status));
    }
    page_final(p);
    login_settle(p);
}

/* Ends the sign-in: its last step settles p. */
static void login_withdraw(tg_login_t *p)
{
    if (p->page != NULL && !p->checking)
        secret_page_cancel(p->page);
    if (p->signin != NULL)
        connector_signin_cancel(p->conn, p->signin);
}

/* ---- the page ------------------------------------------------------------------------------ */

static void page_done(secret_page_t *page, int status, const char *secret, void *data)
{
    tg_login_t *p = data;
    if (status == 0) {
        if (p->signin != NULL && !p->done) {
            p->checking = true;
            int rc = connector_signin_answer(p->conn, p->signin, secret);
            if (rc == 0)
                return; /* the next step tells the page */
            p->checking = false;
            secret_page_result(page, false, "That was not taken; try again.");
            return;
        }
        p->page = NULL;
        secret_page_result(page, true, "This sign-in has ended; return to your assistant.");
        login_maybe_free(p);
        return;
    }
    p->page = NULL;
    p->checking = false;
    if (p->error[0] == '\0' && !p->done)
        snprintf(p->error, sizeof p->error, "%s",
                 status == UV_ETIMEDOUT ? "The login page expired before the code was typed; "
                                          "call authLogin again."
                                        : "The login page was closed (parleyd is stopping?); "
                                          "call authLogin again.");
    if (p->signin != NULL)
        connector_signin_cancel(p->conn, p->signin);
    login_maybe_free(p);
}

static void page_message(const char *phone, char *out, size_t cap)
{
    snprintf(out, cap,
             "Open this page to type the login code Telegram sent to %s (in the Telegram app or "
             "by SMS), and then the account's two-step verification password if it has one. The "
             "page is served by parley on this computer and expires in 10 minutes; neither "
             "passes through this chat.",
             phone && phone[0] ? phone : "the account's phone");
}

static json_t *page_request(const char *phone, const char *url)
{
    char message[900];
    page_message(phone, message, sizeof message);
    return json_pack("{s:s, s:{s:s, s:s, s:s}}", "method", "elicitation/create", "params", "mode",
                     "url", "message", message, "url", url ? url : "");
}

static void url_answered(mcp_call_t *c, int status, const json_t *result, const json_t *error)
{
    tg_login_t *p = c->data;
    (void)error;
    const char *action = json_string_value(json_object_get(result, "action"));
    if (status == 0 && action && strcmp(action, "accept") == 0)
        return;                   /* the page goes on; the last step ends the call */
    if (status == UV_ECANCELED) { /* the call was cancelled */
        p->call = NULL;
        c->data = NULL;
        mcp_call_finish_error(c, "cancelled");
    } else if (status == 0) {
        p->said_no = action && strcmp(action, "decline") == 0 ? "declined" : "cancelled";
    } else if (p->error[0] == '\0') {
        snprintf(p->error, sizeof p->error, "%s",
                 status == UV_ETIMEDOUT
                     ? "The client did not answer the login page request in time; call authLogin "
                       "again."
                     : "The client refused the login page request (URL elicitation); sign the "
                       "account in with `parleyd login telegram --phone +NNN` on the server.");
    }
    login_withdraw(p);
    login_maybe_free(p);
}

static void login_open_page(tg_login_t *p, const char *ask, const char *hint)
{
    char title[200], text[900];
    snprintf(title, sizeof title, "Telegram login for %s", p->phone);
    snprintf(text, sizeof text,
             "Type the %s Telegram sent to %s (in the Telegram app, or by SMS). If the account "
             "has a two-step verification password, this page asks for it next. Both go from "
             "this page to parley on this computer only; they never pass through the chat.",
             strcmp(ask, "password") == 0 ? "password of the account (it was asked first)"
                                          : "login code",
             hint && hint[0] && strcmp(ask, "code") == 0 ? hint : p->phone);
    secret_page_options_t o = {.title = title, .text = text, .verify = true};
    int rc = p->ts && p->ts->pages
                 ? secret_page_open(p->ts->pages, &o, page_done, p, p->url, sizeof p->url, &p->page)
                 : UV_ECANCELED;
    if (rc != 0) {
        snprintf(p->error, sizeof p->error,
                 "The login page could not be opened (%s); sign the account in with `parleyd "
                 "login telegram --phone +NNN` on the server.",
                 uv_strerror(rc));
        login_withdraw(p);
        return;
    }
    mcp_call_t *c = p->call;
    if (p->rounds) { /* round 2 ends: the client opens the page */
        p->call = NULL;
        c->on_cancel = NULL;
        c->data = NULL;
        uv_timeval64_t tv;
        uv_gettimeofday(&tv);
        json_int_t expires = (json_int_t)tv.tv_sec * 1000 + tv.tv_usec / 1000 + SECRET_PAGE_TTL_MS;
        json_t *state = json_pack("{s:s, s:s, s:s, s:I}", "login", p->id, "url", p->url, "phone",
                                  p->phone, "expiresAt", expires);
        mcp_call_finish_input_required(
            c, json_pack("{s:o}", "login_page", page_request(p->phone, p->url)), state);
        return;
    }
    char message[900];
    page_message(p->phone, message, sizeof message);
    rc = mcp_call_request(c, "elicitation", "elicitation/create",
                          json_pack("{s:s, s:s, s:s, s:s}", "mode", "url", "message", message,
                                    "url", p->url, "elicitationId", p->elicitation_id),
                          url_answered);
    if (rc != 0) {
        snprintf(p->error, sizeof p->error, TG_NO_ELICITATION, "");
        login_withdraw(p);
    }
}

/* ---- starting ---------------------------------------------------------------------------- */

static void call_cancelled(mcp_call_t *c)
{
    tg_login_t *p = c->data;
    p->call = NULL;
    c->data = NULL;
    c->on_cancel = NULL;
    mcp_call_finish_error(c, "cancelled");
    login_withdraw(p);
    login_maybe_free(p);
}

static void login_start(mcp_call_t *c, connector_t *conn, const char *phone, bool rounds)
{
    tg_toolset_t *ts = tg_ts(c);
    uint64_t now = uv_now(mcp_call_loop(c));
    /* Room: outcomes past their time, then finished ones nobody waits for. */
    for (int k = ts->nlogins - 1; k >= 0; k--) {
        tg_login_t *q = ts->logins[k];
        if (q->done && q->waiter == NULL &&
            (now - q->opened_at > TG_LOGIN_TTL_MS || ts->nlogins == TG_LOGINS_MAX))
            login_unlist(q);
    }
    tg_login_t *p = ts->nlogins < TG_LOGINS_MAX ? calloc(1, sizeof *p) : NULL;
    uint8_t rnd[32];
    if (p == NULL || uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL) != 0) {
        free(p);
        mcp_call_finish_error(c, "Too many sign-ins are in progress; try again in a minute.");
        return;
    }
    str_hex(rnd, 16, p->id);
    str_hex(rnd + 16, 16, p->elicitation_id);
    p->ts = ts;
    p->conn = conn;
    p->rounds = rounds;
    p->opened_at = now;
    snprintf(p->phone, sizeof p->phone, "%s%s", phone[0] == '+' ? "" : "+", phone);
    const char *account = json_string_value(json_object_get(c->args, "account"));
    char why[300] = "";
    int rc = connector_signin(conn, phone, account && account[0] ? account : NULL, login_step, p,
                              &p->signin, why, sizeof why);
    if (rc != 0) {
        free(p);
        if (rc == UV_EEXIST)
            mcp_call_finish_error(c, "%s: authStatus reports it; nothing to do.", why);
        else if (rc == UV_EINVAL)
            mcp_call_finish_error(c, "%s; call authLogin again.", why);
        else
            mcp_call_finish_error(c, "The sign-in did not start: %s.",
                                  why[0] ? why : uv_strerror(rc));
        return;
    }
    ts->logins[ts->nlogins++] = p;
    p->call = c;
    c->data = p;
    c->on_cancel = call_cancelled;
}

/* A phone number as the model or the user typed it: digits with an
 * optional +, spaces, dashes, dots and parentheses. */
static bool phone_valid(const char *s)
{
    int digits = 0;
    for (const char *q = s; *q; q++) {
        if (*q >= '0' && *q <= '9')
            digits++;
        else if (!strchr("+ -.()", *q) || (*q == '+' && q != s))
            return false;
    }
    return digits >= 5 && digits <= 15 && strlen(s) < 32;
}

static const char *phone_from_form(const json_t *answer)
{
    const char *ph =
        json_string_value(json_object_get(json_object_get(answer, "content"), "phone"));
    while (ph && *ph == ' ')
        ph++;
    return ph;
}

#define PHONE_INVALID                                                                              \
    "phone: not a phone number; give it with its country code (+15551234567) and call "            \
    "authLogin again."

static json_t *phone_form(void)
{
    json_t *schema =
        json_pack("{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}", "type", "object", "properties", "phone",
                  "type", "string", "title", "Phone number", "description",
                  "The Telegram account's phone number with its country code, "
                  "e.g. +15551234567",
                  "required", "phone");
    return json_pack("{s:s, s:s, s:o}", "mode", "form", "message",
                     "Which Telegram account should parley sign in? (The login code Telegram "
                     "sends is asked next, on a local page.)",
                     "requestedSchema", schema);
}

static void phone_answered(mcp_call_t *c, int status, const json_t *result, const json_t *error)
{
    (void)error;
    connector_t *conn = c->data;
    c->data = NULL;
    const char *action = json_string_value(json_object_get(result, "action"));
    if (status == UV_ECANCELED) {
        mcp_call_finish_error(c, "cancelled");
        return;
    }
    if (status != 0) {
        mcp_call_finish_error(c, "%s",
                              status == UV_ETIMEDOUT
                                  ? "The client did not answer the phone number request in time."
                                  : "The client refused the phone number request; call authLogin "
                                    "with phone instead.");
        return;
    }
    if (action == NULL || strcmp(action, "accept") != 0) {
        bool declined = action && strcmp(action, "decline") == 0;
        finish_outcome(c, declined ? "declined" : "cancelled",
                       declined ? "The user declined to give a phone number; nothing was asked."
                                : "The user dismissed the sign-in; nothing was asked.");
        return;
    }
    const char *ph = phone_from_form(result);
    if (ph == NULL || !phone_valid(ph)) {
        mcp_call_finish_error(c, PHONE_INVALID);
        return;
    }
    login_start(c, conn, ph, false);
}

/* ---- 2026-07-28: round 3 -------------------------------------------------------------------- */

static void round_outcome(mcp_call_t *c, const json_t *state)
{
    tg_toolset_t *ts = tg_ts(c);
    tg_login_t *p = login_find(ts, json_string_value(json_object_get(state, "login")));
    const json_t *answer = mcp_call_input_response(c, "login_page");
    const char *action = json_string_value(json_object_get(answer, "action"));
    if (action != NULL && strcmp(action, "accept") != 0) {
        bool declined = strcmp(action, "decline") == 0;
        if (p != NULL) {
            p->said_no = declined ? "declined" : "cancelled";
            if (p->waiter != NULL)
                finish_login(wait_end(p->waiter), p);
            login_withdraw(p);
            login_unlist(p);
        }
        finish_outcome(c, declined ? "declined" : "cancelled",
                       declined ? "The user declined to open the login page; no account was "
                                  "signed in. Ask before calling authLogin again."
                                : "The user dismissed the login page; no account was signed in.");
        return;
    }
    if (p == NULL) {
        mcp_call_finish_error(c, "This sign-in is not running in this parleyd any more (its page "
                                 "expired, or parleyd restarted, or another parleyd holds it); "
                                 "call authLogin again without requestState to start over.");
        return;
    }
    if (p->done) {
        finish_login(c, p);
        login_unlist(p);
        return;
    }
    if (p->waiter != NULL) {
        mcp_call_finish_error(c, "Another call of authLogin already waits for this sign-in: wait "
                                 "for it (at most a minute), or call authLogin again without "
                                 "requestState to start over.");
        return;
    }
    tg_wait_t *w = calloc(1, sizeof *w);
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
    c->on_cancel = wait_cancelled;
    uv_timer_start(&w->timer, wait_timeout, TG_LOGIN_WAIT_MS, 0);
}

static void login_rounds(mcp_call_t *c, connector_t *conn, const char *phone)
{
    const json_t *state = mcp_call_request_state(c);
    if (json_object_get(state, "login") != NULL) {
        round_outcome(c, state);
        return;
    }
    const json_t *answer = mcp_call_input_response(c, "phone");
    if (phone == NULL && answer != NULL) {
        const char *action = json_string_value(json_object_get(answer, "action"));
        if (action == NULL || strcmp(action, "accept") != 0) {
            bool declined = action && strcmp(action, "decline") == 0;
            finish_outcome(c, declined ? "declined" : "cancelled",
                           declined ? "The user declined to give a phone number; nothing was "
                                      "asked."
                                    : "The user dismissed the sign-in; nothing was asked.");
            return;
        }
        phone = phone_from_form(answer);
        if (phone == NULL || !phone_valid(phone)) {
            mcp_call_finish_error(c, PHONE_INVALID);
            return;
        }
    }
    if (phone == NULL) {
        json_t *form = phone_form();
        mcp_call_finish_input_required(
            c, json_pack("{s:{s:s, s:o}}", "phone", "method", "elicitation/create", "params", form),
            NULL);
        return;
    }
    login_start(c, conn, phone, true);
}

/* ---- the tool ------------------------------------------------------------------------------- */

void tg_ts_auth_login(mcp_call_t *c)
{
    tg_toolset_t *ts = tg_ts(c);
    connector_t *conn = tg_ts_conn(ts, CONNECTOR_CAN_LOGIN);
    const char *phone = json_string_value(json_object_get(c->args, "phone"));
    if (phone != NULL && phone[0] == '\0')
        phone = NULL;
    if (phone != NULL && !phone_valid(phone)) {
        mcp_call_finish_error(c, PHONE_INVALID);
        return;
    }
    if (!connector_can(conn, CONNECTOR_CAN_LOGIN)) {
        const char *why = connector_why_not(conn, CONNECTOR_CAN_LOGIN);
        mcp_call_finish_error(
            c,
            "No Telegram user account can be signed in by this parleyd: %s Signing in needs the "
            "settings telegram_api_id and telegram_api_hash (your application's, from "
            "my.telegram.org) and TDLib; or run `parleyd login telegram --phone +NNN` on the "
            "server.",
            why && conn && conn->ops->accounts ? why
                                               : "the user-account connector is not running.");
        return;
    }
    bool url = ts->pages != NULL && mcp_call_client_has(c, "elicitation", "url");
    bool form = phone != NULL || mcp_call_client_has(c, "elicitation", "form");
    if (!url || !form) {
        mcp_call_finish_error(c, TG_NO_ELICITATION,
                              url ? " and form mode for the phone number (or give phone)" : "");
        return;
    }
    if (mcp_call_can_ask(c)) {
        login_rounds(c, conn, phone);
        return;
    }
    if (phone != NULL) {
        login_start(c, conn, phone, false);
        return;
    }
    c->data = conn;
    int rc = mcp_call_request(c, "elicitation", "elicitation/create", phone_form(), phone_answered);
    if (rc != 0) {
        c->data = NULL;
        mcp_call_finish_error(c, TG_NO_ELICITATION, "");
    }
}

void tg_ts_logins_close(tg_toolset_t *ts)
{
    while (ts->nlogins > 0) {
        tg_login_t *p = ts->logins[0];
        if (p->waiter != NULL)
            mcp_call_finish_error(wait_end(p->waiter), "parleyd is stopping; call authLogin again");
        if (p->page != NULL) {
            secret_page_t *page = p->page;
            p->page = NULL;
            if (p->checking)
                secret_page_result(page, true, "parleyd is stopping.");
            else
                secret_page_cancel(page);
        }
        p->call = NULL;
        p->signin = NULL; /* the connector closed before: its last step ran */
        login_unlist(p);
    }
}
