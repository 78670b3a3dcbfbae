/* tg_user_login: signing a Telegram user account in while serving (see
 * tg_user_internal.h): the accounts verbs signin, signin_answer and
 * signin_cancel (connector.h) of the user connector. One sign-in at a
 * time per daemon:
 *
 *   OPENING   the account's directory and database key are made on the
 *             thread pool (tgu__session_open with create, as `parleyd
 *             login telegram` does: file work stays off the loop)
 *   SIGNING   a TDLib client of its own on that directory, driven by
 *             updateAuthorizationState (tg_user_auth.c): the phone is
 *             answered here, the code and the password are asked through
 *             the caller's step and come back by signin_answer
 *   STORING   Ready: getMe stored as the account (parley_tdu_account)
 *   CLOSING   the sign-in's client closes, which frees TDLib's lock of
 *             the directory (td.binlog); then the account starts like one
 *             found at start (its advisory lock first: on a database
 *             shared by two daemons only one runs it) and serves; a
 *             sign-in that failed or was cancelled removes the directory
 *             it made (db.key.pending, td/) on the thread pool
 *
 * A refusal (a wrong code or password: TDLib's error, in words) ends the
 * sign-in; the caller starts another, which asks TDLib for a new code. The
 * phone, code and password are never logged nor kept: the answers go to
 * TDLib as they come. */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upstream/telegram/user/tg_user_internal.h"
#include "util/log.h"

#define TGU_TAG "telegram"

typedef enum { SI_OPENING = 0, SI_SIGNING, SI_STORING, SI_CLOSING } si_phase_t;

typedef struct tgu_signin_s {
    tgu_t *u;
    si_phase_t phase;
    uv_work_t work;
    char name[TGU_NAME_MAX];
    char phone[32]; /* digits */
    tgu_session_t session;
    int open_rc;
    char open_err[256];
    tdjson_client_t *client;
    tgu_auth_t auth;
    tgu_ask_t asked;
    connector_signin_cb step;
    void *data;
    int status;      /* the outcome, once known */
    char error[512]; /* why it failed */
    char *account;   /* the account's JSON on success */
    bool cancelled;  /* signin_cancel, or the daemon stops */
    bool storing;    /* parley_tdu_account runs */
    bool stored;     /* the account is in the store */
    bool log_out;    /* refused as a second account of one user: end it on Telegram too */
    void (*closed_cb)(void *data);
    void *closed_data;
} tgu_signin_t;

static void si_client_closed(void *data);
static tgu_account_t *si_account_named(tgu_t *u, const char *name);

/* The outcome is known: closes the client (if any), then ends. */
static void si_fail(tgu_signin_t *s, int status, const char *why)
{
    tgu__reach_over(s->u);
    if (s->status == 0 && !s->stored) {
        s->status = status;
        snprintf(s->error, sizeof s->error, "%s", why ? why : uv_strerror(status));
    }
    if (s->phase == SI_CLOSING || s->phase == SI_OPENING || s->storing)
        return; /* the close, the thread-pool work or the store comes back */
    s->phase = SI_CLOSING;
    if (s->client && s->log_out)
        tdjson_client_log_out(s->client, si_client_closed, s);
    else if (s->client)
        tdjson_client_close(s->client, si_client_closed, s);
    else
        si_client_closed(s);
}

/* The last step, then the sign-in is gone. */
static void si_end(tgu_signin_t *s)
{
    tgu_t *u = s->u;
    tgu__reach_over(u);
    if (u->signin == s)
        u->signin = NULL;
    if (s->status == 0 && s->account == NULL)
        s->status = UV_ECANCELED;
    s->step(s->data, true, s->status, s->status == 0 ? s->account : NULL,
            s->status == 0 ? NULL : s->error);
    void (*cb)(void *) = s->closed_cb;
    void *cb_data = s->closed_data;
    tgu__session_wipe(&s->session);
    free(s->account);
    free(s);
    if (cb)
        cb(cb_data);
}

static void si_closed(tgu_signin_t *s);

/* A sign-in that did not succeed leaves no directory: removed off the
 * loop, then the sign-in ends as it would have. */
static void si_discard_work(uv_work_t *w)
{
    tgu_signin_t *s = w->data;
    if (tgu__session_discard(&s->session) != 0)
        log_warn(TGU_TAG, "account %s: cannot remove %s of the failed sign-in", s->name,
                 s->session.dir);
}

static void si_discard_done(uv_work_t *w, int status)
{
    (void)status;
    si_closed(w->data);
}

static void si_client_closed(void *data)
{
    tgu_signin_t *s = data;
    s->client = NULL;
    if (!s->stored && s->session.pending) {
        s->work.data = s;
        if (uv_queue_work(s->u->loop, &s->work, si_discard_work, si_discard_done) == 0)
            return;
    }
    si_closed(s);
}

/* The client is closed (and a failed sign-in's directory removed). */
static void si_closed(tgu_signin_t *s)
{
    if (s->closed_cb != NULL && !s->stored) {
        si_end(s);
        return;
    }
    if (s->stored) {
        /* TDLib's lock on the directory is free: the account serves. */
        tgu_t *u = s->u;
        tgu_account_t *acc = NULL, *again = si_account_named(u, s->name);
        char why[256] = "";
        if (again != NULL && s->closed_cb == NULL) {
            /* Signed out before (a directory of an earlier sign-in): this
             * daemon runs it already, and starts it again. */
            if (!tgu__account_restart(again)) {
                s->status = UV_EBUSY;
                snprintf(s->error, sizeof s->error,
                         "the account is signed in, but this daemon does not run it now (%s); it "
                         "starts with the next start of parleyd",
                         tgu__account_state_word(again));
            }
            si_end(s);
            return;
        }
        int rc = s->closed_cb != NULL ? UV_ECANCELED
                 : u->naccounts >= TGU_ACCOUNTS_MAX
                     ? UV_ENOSPC
                     : tgu__account_run(u, &s->session, &acc, why, sizeof why);
        if (rc == UV_ECANCELED) {
            /* parleyd stops: the next start runs the account. */
        } else if (rc == 0) {
            u->accounts[u->naccounts++] = acc;
            log_info(TGU_TAG, "account %s signed in; it serves from now on", s->name);
        } else {
            if (acc && !acc->timer_started && acc->lock == NULL) {
                json_decref(acc->ops);
                free(acc);
            }
            log_error(TGU_TAG, "account %s: signed in, but it does not start: %s", s->name,
                      why[0] ? why : uv_strerror(rc));
            /* Stored and signed in: the next start runs it. */
            snprintf(s->error, sizeof s->error,
                     "the account is signed in but does not start now (%s); it starts with the "
                     "next start of parleyd",
                     why[0] ? why : uv_strerror(rc));
            s->status = rc;
        }
    }
    si_end(s);
}

/* The account of this daemon named name, or NULL. */
static tgu_account_t *si_account_named(tgu_t *u, const char *name)
{
    for (int i = 0; i < u->naccounts; i++)
        if (strcmp(u->accounts[i]->session.name, name) == 0)
            return u->accounts[i];
    return NULL;
}

/* ---- the account stored ------------------------------------------------------------- */

static void si_stored(void *data, int status, const char *value, const char *sqlstate,
                      const char *error)
{
    (void)value;
    tgu_signin_t *s = data;
    s->storing = false;
    /* The user is another account's already (parley_tdu_account): the
     * session just made is not kept here, so it must not stay signed in on
     * Telegram's side either. */
    if (status != 0 && sqlstate != NULL && strcmp(sqlstate, "23505") == 0)
        s->log_out = true;
    if (status != 0) {
        free(s->account);
        s->account = NULL;
        si_fail(s, status, error ? error : "storing the account failed");
        return;
    }
    char why[512];
    int rc = tgu__session_commit(&s->session, why, sizeof why);
    if (rc != 0) {
        free(s->account);
        s->account = NULL;
        si_fail(s, rc, why);
        return;
    }
    s->stored = true;
    s->status = 0;
    si_fail(s, 0, NULL); /* closes the client; the account starts after */
}

static void si_me(void *data, int status, json_t *me)
{
    tgu_signin_t *s = data;
    tgu__reach_over(s->u);
    if (status != 0) {
        si_fail(s, status, tdjson_error_message(me, "getMe failed"));
        return;
    }
    const char *first = json_string_value(json_object_get(me, "first_name"));
    const char *last = json_string_value(json_object_get(me, "last_name"));
    const char *un = json_string_value(
        json_array_get(json_object_get(json_object_get(me, "usernames"), "active_usernames"), 0));
    const char *phone = json_string_value(json_object_get(me, "phone_number"));
    char name[300];
    snprintf(name, sizeof name, "%s%s%s", first ? first : "", last && last[0] ? " " : "",
             last ? last : "");
    json_t *acct = json_pack("{s:s, s:s, s:s, s:s?, s:s}", "account", s->name, "userId", "", "name",
                             name, "username", un, "phone", phone ? phone : "");
    char uid[24];
    snprintf(uid, sizeof uid, "%lld", (long long)json_integer_value(json_object_get(me, "id")));
    json_object_set_new(acct, "userId", json_string(uid));
    s->account = acct ? json_dumps(acct, JSON_COMPACT) : NULL;
    json_decref(acct);
    char *mej = json_dumps(me, JSON_COMPACT);
    json_t *extra =
        json_pack("{s:s, s:s}", "session_path", s->session.dir, "phone", phone ? phone : "");
    char *extraj = extra ? json_dumps(extra, JSON_COMPACT) : NULL;
    json_decref(extra);
    const char *p[] = {s->name, mej, extraj};
    s->storing = true;
    int rc = s->account && mej && extraj
                 ? pg_pool_call(s->u->rw, NULL,
                                "SELECT parley_tdu_account($1, $2::jsonb, $3::jsonb, NULL)", 3, p,
                                si_stored, s, NULL)
                 : UV_ENOMEM;
    free(mej);
    free(extraj);
    if (rc != 0)
        si_stored(s, rc, NULL, NULL, "the database is busy");
}

/* ---- the sign-in's questions -------------------------------------------------------- */

/* Telegram is out of reach while the sign-in waits on it
 * (tgu__reach_wait): it fails saying so. */
static void si_unreachable(tgu_t *u, const char *why)
{
    if (u->signin != NULL)
        si_fail(u->signin, UV_ETIMEDOUT, why);
}

static void si_ask(tgu_auth_t *a, tgu_ask_t what, const char *hint)
{
    tgu_signin_t *s = a->data;
    tgu__reach_over(s->u);
    if (s->cancelled) {
        si_fail(s, UV_ECANCELED, "the sign-in was withdrawn");
        return;
    }
    s->asked = what;
    if (what == TGU_ASK_PHONE) {
        int rc = tgu__auth_answer(a, TGU_ASK_PHONE, s->phone);
        if (rc != 0)
            si_fail(s, rc, "TDLib did not take the phone number");
        else
            tgu__reach_wait(s->u, "the phone number", si_unreachable);
        return;
    }
    json_t *q = json_pack("{s:s, s:s?}", "ask", what == TGU_ASK_CODE ? "code" : "password", "hint",
                          hint && hint[0] ? hint : NULL);
    char *text = q ? json_dumps(q, JSON_COMPACT) : NULL;
    json_decref(q);
    if (text == NULL) {
        si_fail(s, UV_ENOMEM, "out of memory");
        return;
    }
    s->step(s->data, false, 0, text, NULL);
    free(text);
}

static void si_ready(tgu_auth_t *a)
{
    tgu_signin_t *s = a->data;
    s->phase = SI_STORING;
    if (tdjson_send(s->client, json_pack("{s:s}", "@type", "getMe"), si_me, s) != 0)
        si_fail(s, UV_EIO, "TDLib did not take getMe");
    else
        tgu__reach_wait(s->u, "the account's profile", si_unreachable);
}

static void si_failed(tgu_auth_t *a, int status, const char *why)
{
    si_fail(a->data, status, why);
}

static void si_update(tdjson_client_t *c, json_t *update, void *data)
{
    (void)c;
    tgu_signin_t *s = data;
    if (tgu__reach_update(s->u, update))
        return;
    if (s->phase == SI_SIGNING)
        (void)tgu__auth_update(&s->auth, update);
}

/* ---- the directory, off the loop ------------------------------------------------------ */

static void si_open_work(uv_work_t *w)
{
    tgu_signin_t *s = w->data;
    s->open_rc = tgu__session_open(s->u->data_dir, &s->u->cred, s->name, true, &s->session,
                                   s->open_err, sizeof s->open_err);
    /* The key's random bytes made OpenSSL state of this pool thread, which
     * lives as long as the process: released now. */
    OPENSSL_thread_stop();
}

static void si_open_done(uv_work_t *w, int status)
{
    tgu_signin_t *s = w->data;
    tgu_t *u = s->u;
    s->phase = SI_SIGNING;
    if (status != 0 || s->open_rc != 0) {
        si_fail(s, status ? status : s->open_rc, status ? uv_strerror(status) : s->open_err);
        return;
    }
    if (s->cancelled) {
        si_fail(s, UV_ECANCELED, "the sign-in was withdrawn");
        return;
    }
    tgu__reach_reset(u); /* a new client: no connection reported yet */
    if (tdjson_client_new(u->td, u->td_timeout_ms, si_update, s, &s->client) != 0) {
        si_fail(s, UV_ENOMEM, "out of memory");
        return;
    }
    s->auth = (tgu_auth_t){.client = s->client,
                           .session = &s->session,
                           .api_id = u->api_id,
                           .api_hash = u->api_hash,
                           .ask = si_ask,
                           .ready = si_ready,
                           .failed = si_failed,
                           .data = s};
    /* TDLib makes the client at its first request; the states follow. */
    json_t *rq = json_pack("{s:s, s:s}", "@type", "getOption", "name", "version");
    if (tdjson_send(s->client, rq, NULL, NULL) != 0)
        si_fail(s, UV_EIO, "TDLib did not take a request");
}

/* ---- the verbs -------------------------------------------------------------------------- */

static int tu_signin(void *impl, const char *identifier, const char *account,
                     connector_signin_cb step, void *data, void **handle, char *err, size_t errcap)
{
    tgu_t *u = impl;
    if (u->td == NULL || u->td_closed || u->closed_cb != NULL) {
        snprintf(err, errcap, "TDLib is not loaded");
        return UV_ENOTSUP;
    }
    if (u->signin != NULL) {
        snprintf(err, errcap, "another sign-in is in progress; finish it first");
        return UV_EBUSY;
    }
    char name[TGU_NAME_MAX];
    int rc = tgu__session_name(account, identifier, name, sizeof name, err, errcap);
    if (rc != 0)
        return rc;
    tgu_account_t *again = si_account_named(u, name);
    if (again != NULL && (again->state != TGU_ACC_SIGNED_OUT || again->client != NULL ||
                          !pg_lock_held(again->lock))) {
        snprintf(err, errcap, "the account '%s' is signed in already (%s)", name,
                 tgu__account_state_word(again));
        return UV_EEXIST;
    }
    if (again == NULL && u->naccounts >= TGU_ACCOUNTS_MAX) {
        snprintf(err, errcap, "this daemon runs %d accounts already", TGU_ACCOUNTS_MAX);
        return UV_ENOSPC;
    }
    tgu_signin_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return UV_ENOMEM;
    s->u = u;
    s->step = step;
    s->data = data;
    snprintf(s->name, sizeof s->name, "%s", name);
    size_t k = 0;
    for (const char *p = identifier ? identifier : ""; *p && k + 1 < sizeof s->phone; p++)
        if (*p >= '0' && *p <= '9')
            s->phone[k++] = *p;
    if (k < 5) {
        free(s);
        snprintf(err, errcap,
                 "phone: give the account's phone number with its country code "
                 "(+15551234567)");
        return UV_EINVAL;
    }
    s->work.data = s;
    rc = uv_queue_work(u->loop, &s->work, si_open_work, si_open_done);
    if (rc != 0) {
        free(s);
        return rc;
    }
    u->signin = s;
    *handle = s;
    log_info(TGU_TAG, "account %s: signing in", name);
    return 0;
}

static int tu_signin_answer(void *impl, void *handle, const char *secret)
{
    tgu_t *u = impl;
    tgu_signin_t *s = handle;
    if (s == NULL || u->signin != s || s->phase != SI_SIGNING || s->cancelled)
        return UV_EINVAL;
    if (secret == NULL || secret[0] == '\0')
        return UV_EINVAL;
    int rc = tgu__auth_answer(&s->auth, s->asked, secret);
    if (rc == 0)
        tgu__reach_wait(u, s->asked == TGU_ASK_CODE ? "the login code" : "the password",
                        si_unreachable);
    return rc;
}

static void tu_signin_cancel(void *impl, void *handle)
{
    tgu_t *u = impl;
    tgu_signin_t *s = handle;
    if (s == NULL || u->signin != s || s->cancelled)
        return;
    s->cancelled = true;
    if (s->phase == SI_SIGNING)
        si_fail(s, UV_ECANCELED, "the sign-in was withdrawn");
}

bool tgu__signin_close(tgu_t *u, void (*cb)(void *data), void *data)
{
    tgu_signin_t *s = u->signin;
    if (s == NULL)
        return false;
    s->closed_cb = cb;
    s->closed_data = data;
    s->cancelled = true;
    if (s->phase == SI_SIGNING || s->phase == SI_STORING)
        si_fail(s, UV_ECANCELED, "parleyd is stopping");
    /* OPENING: the work comes back; STORING's query and CLOSING's client
     * come back too; each ends here. */
    return true;
}

const connector_accounts_ops_t tgu__accounts_ops = {
    .signin = tu_signin,
    .signin_answer = tu_signin_answer,
    .signin_cancel = tu_signin_cancel,
};
