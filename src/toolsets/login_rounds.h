/* login_rounds: what the logins of several rounds share (the bluesky
 * toolset's login, bluesky/login_rounds.c; the telegram toolset's
 * authLogin, telegram/auth.c): under MCP 2026-07-28 (multi round-trip
 * requests) the server asks the client nothing by a request of its own;
 * each call of the tool is a round, and what a round needs of the last
 * one is in the sealed requestState:
 *
 *   1. who logs in (a handle, a phone): the connector's own form;
 *   2. the login starts and its one-time loopback page opens on this
 *      daemon (transport/secret_page.h); the round ends with
 *      login_rounds_ask_page: input_required {page_key: URL mode} and the
 *      state {state_key: the login's id, url, expiresAt, and the
 *      connector's fields};
 *   3. the client's answer: login_rounds_outcome. Declined or dismissed
 *      is an outcome and withdraws the login; a login this daemon holds
 *      answers with its outcome, or the call waits for it (at most
 *      ops->wait_ms, then round 3 is asked again); a login it does not
 *      hold is the connector's to answer (it expired, login_rounds_expired;
 *      another daemon's: it may poll, login_rounds_poll).
 *
 * This module owns the logins in progress a toolset holds
 * (login_rounds_t: bounded, each named by a random id, kept a while
 * after its outcome for its round 3), a login's outcome (what came of its
 * page: the account, why it failed, or the user's no), when its page
 * expires, and the calls of round 3 that wait. A connector's login is a
 * struct of its own whose first member is a login_rounds_login_t, with
 * its ops. It is freed (ops->free) once it is unlisted, no round 3 waits
 * on it and ops->held says the connector holds nothing of it (a page, a
 * login running, a call). */
#ifndef PARLEY_TOOLSETS_LOGIN_ROUNDS_H
#define PARLEY_TOOLSETS_LOGIN_ROUNDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcp/call.h"

/* Logins a table holds at most (ops->max is its own bound, no larger). */
#define LOGIN_ROUNDS_MAX 32
/* How long a round 3 waits for the outcome before asking again. */
#define LOGIN_ROUNDS_WAIT_MS 60000
/* How long a login's outcome is kept for its round 3 (the page's own
 * life, SECRET_PAGE_TTL_MS, and then some). */
#define LOGIN_ROUNDS_TTL_MS (15u * 60 * 1000)

typedef struct login_rounds_login_s login_rounds_login_t;
typedef struct login_rounds_wait_s login_rounds_wait_t;

/* What a connector's login adds: its words and its part of a login. */
typedef struct login_rounds_ops_s {
    const char *tool;      /* the tool, in messages: "login" */
    const char *state_key; /* the state's member that names the login: "page" */
    const char *page_key;  /* the input request of the page: "password_page" */
    const char *busy;      /* the error of a second round 3 on one login */
    int max;               /* logins held at once, at most LOGIN_ROUNDS_MAX */
    uint64_t wait_ms;      /* how long a round 3 waits; 0: LOGIN_ROUNDS_WAIT_MS */
    /* The page request's message, from the round's state. */
    void (*page_message)(const json_t *state, char *out, size_t cap);
    /* Finishes c with l's outcome (l->done). */
    void (*finish)(mcp_call_t *c, const login_rounds_login_t *l);
    /* Finishes c with the user's no to the page (declined, or dismissed). */
    void (*said_no)(mcp_call_t *c, bool declined);
    /* After the user's no: ends l's login (its page, its sign-in). l is
     * still listed: the callbacks this runs do not free it. */
    void (*withdraw)(login_rounds_login_t *l);
    /* The toolset closes: lets go of l's page (and whatever else). */
    void (*stop)(login_rounds_login_t *l);
    /* True while the connector holds l (a page open, a login running). */
    bool (*held)(const login_rounds_login_t *l);
    /* Frees the connector's login l begins (login_rounds frees the
     * outcome's strings). */
    void (*free)(login_rounds_login_t *l);
} login_rounds_ops_t;

/* A login in progress: the first member of the connector's. */
struct login_rounds_login_s {
    struct login_rounds_s *table; /* NULL once unlisted */
    const login_rounds_ops_t *ops;
    char id[33];                 /* names it in requestState (hex) */
    uint64_t opened_at;          /* loop time of login_rounds_add */
    login_rounds_wait_t *waiter; /* the round 3 waiting for it, or NULL */
    /* Its outcome, the connector's to set. */
    bool done;           /* known */
    int status;          /* 0: logged in */
    char *account;       /* the connector's account JSON on success */
    char *error;         /* why not, for the model (login_rounds_set_error) */
    const char *said_no; /* "declined" or "cancelled": the user's answer */
};

/* The logins a toolset holds (zeroed, then login_rounds_init). */
typedef struct login_rounds_s {
    const login_rounds_ops_t *ops;
    login_rounds_login_t *logins[LOGIN_ROUNDS_MAX];
    int n;
} login_rounds_t;

void login_rounds_init(login_rounds_t *t, const login_rounds_ops_t *ops);

/* Lists l (zeroed but for the connector's fields) under a new random id,
 * at now (loop time). To make room it first drops finished logins no
 * round waits for: those past LOGIN_ROUNDS_TTL_MS, then, when full, one
 * more. Returns 0; UV_EBUSY when every place holds a login in progress
 * or waited for, or uv_random's error (l is not listed then: the caller
 * frees it). */
__attribute__((warn_unused_result)) int login_rounds_add(login_rounds_t *t, login_rounds_login_t *l,
                                                         uint64_t now);

/* The login listed under id, or NULL. */
login_rounds_login_t *login_rounds_find(const login_rounds_t *t, const char *id);

/* True while l is listed (its toolset is open and a round may name it). */
static inline bool login_rounds_listed(const login_rounds_login_t *l)
{
    return l->table != NULL;
}

/* Unlists l (once: nothing asks for it again) and frees it when nothing
 * holds it. */
void login_rounds_unlist(login_rounds_login_t *l);

/* Frees l when it is unlisted and nothing holds it: where the connector
 * let go of it (its page's or its login's callback). */
void login_rounds_release(login_rounds_login_t *l);

/* l's outcome is known (l->done): a round 3 waiting gets it (ops->finish)
 * and l is unlisted. Else l stays listed for a later round 3 when keep,
 * or is unlisted. l may be freed. */
void login_rounds_settle(login_rounds_login_t *l, bool keep);

/* Sets l->error (printf-style; NULL when out of memory). */
__attribute__((format(printf, 2, 3))) void login_rounds_set_error(login_rounds_login_t *l,
                                                                  const char *fmt, ...);

/* Round 2 ends: input_required asking the client to open the page at url
 * (ops->page_message's words, URL mode), with the state fields (stolen,
 * the connector's: who logs in; NULL: none) and the login's id, url and
 * expiresAt. */
void login_rounds_ask_page(mcp_call_t *c, const login_rounds_login_t *l, const char *url,
                           json_t *fields);

/* When a page opened now expires, in ms since the epoch (expiresAt). */
int64_t login_rounds_expires_at(void);

/* True when the state's expiresAt has passed: nothing can come of its
 * page any more, on any daemon. */
__attribute__((warn_unused_result)) bool login_rounds_expired(const json_t *state);

/* The user's answer to an input request (an ElicitResult, or NULL). */
typedef enum {
    LOGIN_ROUNDS_NONE = 0, /* none, or no action */
    LOGIN_ROUNDS_ACCEPT,
    LOGIN_ROUNDS_DECLINE,
    LOGIN_ROUNDS_CANCEL, /* dismissed: any other action */
} login_rounds_answer_t;

login_rounds_answer_t login_rounds_answer(const json_t *answer);

/* Round 3 (the state names a login): answers c, or has it wait, and
 * returns true; returns false, c untouched, when this daemon does not
 * hold the login named and the user did not say no (the connector
 * answers: see the top of this file). */
bool login_rounds_outcome(login_rounds_t *t, mcp_call_t *c, const json_t *state);

/* Round 3 for a login this daemon does not hold: tick runs at once and
 * then every every_ms after login_rounds_poll_again, until ops->wait_ms
 * passed (round 3 is asked again). tick starts its question (e.g. to the
 * store) with w; its answer calls login_rounds_poll_call first. */
typedef void (*login_rounds_tick_fn)(login_rounds_wait_t *w, mcp_call_t *c);
void login_rounds_poll(mcp_call_t *c, const login_rounds_ops_t *ops, uint64_t every_ms,
                       login_rounds_tick_fn tick);

/* The poll's call; NULL when it was cancelled meanwhile (it is finished
 * and w is gone). */
mcp_call_t *login_rounds_poll_call(login_rounds_wait_t *w);

/* The poll is over (w is gone): the caller answers its call. */
void login_rounds_poll_end(login_rounds_wait_t *w);

/* Nothing yet: ticks again after every_ms, or asks round 3 again past
 * the poll's time. */
void login_rounds_poll_again(login_rounds_wait_t *w);

/* The toolset closes: a round 3 waiting is told parleyd is stopping,
 * ops->stop lets go of each login, and each is unlisted. */
void login_rounds_close(login_rounds_t *t);

#endif
