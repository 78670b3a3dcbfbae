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
 *      LOGIN_ROUNDS_WAIT_MS, then the round is asked again); declined or
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
 * The rounds, the logins the toolset holds, their outcomes and the calls
 * of round 3 that wait are login_rounds.h's, with the words and the
 * sign-in of this file.
 *
 * Lifetime: a tg_login_t lives until its connector sign-in ended (its
 * last step), its page is gone, no call waits on it and it is unlisted
 * from the toolset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/login_rounds.h"
#include "toolsets/telegram/tg_toolset.h"
#include "transport/secret_page.h"
#include "util/strutil.h"

#define TG_NO_ELICITATION                                                                          \
    "This client cannot ask for the login code safely: signing a Telegram account in here "        \
    "needs MCP elicitation with URL mode (the code and the password are typed on a local page "    \
    "parley opens, never in the chat)%s. Nothing was asked. Sign the account in on the server "    \
    "instead: run `parleyd login telegram --phone +NNN` there (it asks for the code and the "      \
    "password on the terminal); the running parleyd serves it after a restart."

typedef struct tg_login_s {
    login_rounds_login_t lr; /* first: its id, outcome and round 3 waiting */
    tg_toolset_t *ts;        /* its toolset (while lr is listed) */
    connector_t *conn;
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
} tg_login_t;

/* ---- answers -------------------------------------------------------------------------- */

static void finish_outcome(mcp_call_t *c, const char *status, const char *text)
{
    json_t *o = json_pack("{s:s, s:s}", "status", status, "message", text);
    tg_ts_finish_obj(c, o);
}

/* The user's no to the login page. */
static void said_no(mcp_call_t *c, bool declined)
{
    finish_outcome(c, declined ? "declined" : "cancelled",
                   declined ? "The user declined to open the login page; no account was "
                              "signed in. Ask before calling authLogin again."
                            : "The user dismissed the login page; no account was signed in.");
}

/* Finishes c with l's outcome. */
static void finish_login(mcp_call_t *c, const login_rounds_login_t *l)
{
    if (l->said_no != NULL) {
        said_no(c, strcmp(l->said_no, "declined") == 0);
        return;
    }
    if (l->status != 0) {
        mcp_call_finish_error(c, "%s", l->error ? l->error : uv_strerror(l->status));
        return;
    }
    json_t *acct = l->account ? json_loads(l->account, 0, NULL) : NULL;
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

/* ---- the outcome ----------------------------------------------------------------------------- */

/* The outcome is known: the waiting call (if any) gets it, and p is
 * unlisted unless a round 3 may still ask for it. p may be freed. */
static void login_settle(tg_login_t *p)
{
    if (p->call != NULL) { /* 2025-11-25, or a 2026-07-28 round 2 ended before its page */
        mcp_call_t *c = p->call;
        p->call = NULL;
        c->on_cancel = NULL;
        c->data = NULL;
        if (!p->rounds && p->lr.status == 0 && p->lr.said_no == NULL)
            mcp_call_notify(c, "notifications/elicitation/complete",
                            json_pack("{s:s}", "elicitationId", p->elicitation_id));
        finish_login(c, &p->lr);
        login_rounds_unlist(&p->lr); /* nobody asks for it again */
        return;
    }
    login_rounds_settle(&p->lr, p->rounds && p->lr.said_no == NULL);
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
    if (p->lr.status == 0)
        snprintf(msg, sizeof msg,
                 "Signed in to Telegram \xe2\x80\x94 you can close this tab and return to your "
                 "assistant.");
    else
        snprintf(msg, sizeof msg,
                 "The sign-in failed: %.600s. Return to your assistant: it can start a new "
                 "sign-in, for which Telegram sends a new code.",
                 p->lr.error ? p->lr.error : uv_strerror(p->lr.status));
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
        if (p->page == NULL && !p->lr.done && p->call != NULL) {
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
    p->lr.done = true;
    p->lr.status = status;
    if (status == 0) {
        p->lr.account = json ? strdup(json) : NULL;
    } else if (p->lr.error == NULL) {
        if (status == UV_EACCES)
            login_rounds_set_error(&p->lr,
                                   "Telegram refused the sign-in: %.400s. Nothing else changed; "
                                   "call authLogin again to start over (Telegram sends a new "
                                   "code).",
                                   error ? error : "refused");
        else if (status == UV_ECANCELED)
            login_rounds_set_error(&p->lr, "The sign-in was withdrawn%s%.400s.", error ? ": " : "",
                                   error ? error : "");
        else
            login_rounds_set_error(&p->lr, "The sign-in failed: %.500s",
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
        if (p->signin != NULL && !p->lr.done) {
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
        login_rounds_release(&p->lr);
        return;
    }
    p->page = NULL;
    p->checking = false;
    if (p->lr.error == NULL && !p->lr.done)
        login_rounds_set_error(&p->lr, "%s",
                               status == UV_ETIMEDOUT
                                   ? "The login page expired before the code was typed; call "
                                     "authLogin again."
                                   : "The login page was closed (parleyd is stopping?); call "
                                     "authLogin again.");
    if (p->signin != NULL)
        connector_signin_cancel(p->conn, p->signin);
    login_rounds_release(&p->lr);
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
        p->lr.said_no = action && strcmp(action, "decline") == 0 ? "declined" : "cancelled";
    } else if (p->lr.error == NULL) {
        login_rounds_set_error(
            &p->lr, "%s",
            status == UV_ETIMEDOUT
                ? "The client did not answer the login page request in time; call authLogin "
                  "again."
                : "The client refused the login page request (URL elicitation); sign the "
                  "account in with `parleyd login telegram --phone +NNN` on the server.");
    }
    login_withdraw(p);
    login_rounds_release(&p->lr);
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
    int rc = login_rounds_listed(&p->lr) && p->ts->pages
                 ? secret_page_open(p->ts->pages, &o, page_done, p, p->url, sizeof p->url, &p->page)
                 : UV_ECANCELED;
    if (rc != 0) {
        login_rounds_set_error(&p->lr,
                               "The login page could not be opened (%s); sign the account in "
                               "with `parleyd login telegram --phone +NNN` on the server.",
                               uv_strerror(rc));
        login_withdraw(p);
        return;
    }
    mcp_call_t *c = p->call;
    if (p->rounds) { /* round 2 ends: the client opens the page */
        p->call = NULL;
        c->on_cancel = NULL;
        c->data = NULL;
        login_rounds_ask_page(c, &p->lr, p->url, json_pack("{s:s}", "phone", p->phone));
        return;
    }
    char message[900];
    page_message(p->phone, message, sizeof message);
    rc = mcp_call_request(c, "elicitation", "elicitation/create",
                          json_pack("{s:s, s:s, s:s, s:s}", "mode", "url", "message", message,
                                    "url", p->url, "elicitationId", p->elicitation_id),
                          url_answered);
    if (rc != 0) {
        login_rounds_set_error(&p->lr, TG_NO_ELICITATION, "");
        login_withdraw(p);
    }
}

/* ---- the rounds' part of a login (login_rounds.h) ------------------------------------------ */

static void ops_page_message(const json_t *state, char *out, size_t cap)
{
    page_message(json_string_value(json_object_get(state, "phone")), out, cap);
}

static void ops_withdraw(login_rounds_login_t *l)
{
    login_withdraw((tg_login_t *)l);
}

static void ops_stop(login_rounds_login_t *l)
{
    tg_login_t *p = (tg_login_t *)l;
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
}

static bool ops_held(const login_rounds_login_t *l)
{
    const tg_login_t *p = (const tg_login_t *)l;
    return p->signin != NULL || p->page != NULL || p->call != NULL;
}

static void ops_free(login_rounds_login_t *l)
{
    free(l);
}

const login_rounds_ops_t tg_ts_login_ops = {
    .tool = "authLogin",
    .state_key = "login",
    .page_key = "login_page",
    .busy = "Another call of authLogin already waits for this sign-in: wait for it (at most a "
            "minute), or call authLogin again without requestState to start over.",
    .max = TG_LOGINS_MAX,
    .page_message = ops_page_message,
    .finish = finish_login,
    .said_no = said_no,
    .withdraw = ops_withdraw,
    .stop = ops_stop,
    .held = ops_held,
    .free = ops_free,
};

/* ---- starting ---------------------------------------------------------------------------- */

static void call_cancelled(mcp_call_t *c)
{
    tg_login_t *p = c->data;
    p->call = NULL;
    c->data = NULL;
    c->on_cancel = NULL;
    mcp_call_finish_error(c, "cancelled");
    login_withdraw(p);
    login_rounds_release(&p->lr);
}

static void login_start(mcp_call_t *c, connector_t *conn, const char *phone, bool rounds)
{
    tg_toolset_t *ts = tg_ts(c);
    tg_login_t *p = calloc(1, sizeof *p);
    uint8_t rnd[16];
    if (p == NULL || uv_random(NULL, NULL, rnd, sizeof rnd, 0, NULL) != 0 ||
        login_rounds_add(&ts->logins, &p->lr, uv_now(mcp_call_loop(c))) != 0) {
        free(p);
        mcp_call_finish_error(c, "Too many sign-ins are in progress; try again in a minute.");
        return;
    }
    str_hex(rnd, sizeof rnd, p->elicitation_id);
    p->ts = ts;
    p->conn = conn;
    p->rounds = rounds;
    snprintf(p->phone, sizeof p->phone, "%s%s", phone[0] == '+' ? "" : "+", phone);
    const char *account = json_string_value(json_object_get(c->args, "account"));
    char why[300] = "";
    int rc = connector_signin(conn, phone, account && account[0] ? account : NULL, login_step, p,
                              &p->signin, why, sizeof why);
    if (rc != 0) {
        p->signin = NULL;
        login_rounds_unlist(&p->lr); /* frees p */
        if (rc == UV_EEXIST)
            mcp_call_finish_error(c, "%s: authStatus reports it; nothing to do.", why);
        else if (rc == UV_EINVAL)
            mcp_call_finish_error(c, "%s; call authLogin again.", why);
        else
            mcp_call_finish_error(c, "The sign-in did not start: %s.",
                                  why[0] ? why : uv_strerror(rc));
        return;
    }
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

#define PHONE_INVALID                                                                              \
    "phone: not a phone number; give it with its country code (+15551234567) and call "            \
    "authLogin again."

/* The phone number the user gave in the form (answer, an ElicitResult);
 * NULL when c is finished: the user said no, or it is no phone number. */
static const char *phone_answer(mcp_call_t *c, const json_t *answer)
{
    login_rounds_answer_t a = login_rounds_answer(answer);
    if (a != LOGIN_ROUNDS_ACCEPT) {
        bool declined = a == LOGIN_ROUNDS_DECLINE;
        finish_outcome(c, declined ? "declined" : "cancelled",
                       declined ? "The user declined to give a phone number; nothing was asked."
                                : "The user dismissed the sign-in; nothing was asked.");
        return NULL;
    }
    const char *ph =
        json_string_value(json_object_get(json_object_get(answer, "content"), "phone"));
    while (ph && *ph == ' ')
        ph++;
    if (ph == NULL || !phone_valid(ph)) {
        mcp_call_finish_error(c, PHONE_INVALID);
        return NULL;
    }
    return ph;
}

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
    const char *ph = phone_answer(c, result);
    if (ph != NULL)
        login_start(c, conn, ph, false);
}

/* ---- 2026-07-28: rounds 1 and 3 ---------------------------------------------------------- */

static void by_rounds(mcp_call_t *c, connector_t *conn, const char *phone)
{
    const json_t *state = mcp_call_request_state(c);
    if (json_object_get(state, "login") != NULL) {
        if (!login_rounds_outcome(&tg_ts(c)->logins, c, state))
            mcp_call_finish_error(c, "This sign-in is not running in this parleyd any more (its "
                                     "page expired, or parleyd restarted, or another parleyd "
                                     "holds it); call authLogin again without requestState to "
                                     "start over.");
        return;
    }
    const json_t *answer = mcp_call_input_response(c, "phone");
    if (phone == NULL && answer != NULL && (phone = phone_answer(c, answer)) == NULL)
        return;
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
        by_rounds(c, conn, phone);
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
