/* tg_user_auth: signing a TDLib client in (see tg_user_internal.h). The
 * sign-in follows updateAuthorizationState, never the "ok" answers (TDLib
 * says so: the state is the truth, an ok only acknowledges a request):
 *
 *   WaitTdlibParameters -> setTdlibParameters (flat, TDLib >= 1.8.6)
 *   WaitPhoneNumber     -> ask PHONE -> setAuthenticationPhoneNumber
 *   WaitCode            -> ask CODE  -> checkAuthenticationCode
 *   WaitPassword        -> ask PASSWORD -> checkAuthenticationPassword
 *   Ready               -> ready
 *   Closed, or a state we cannot serve (sign-up, e-mail) -> failed
 *
 * An error answer to any of these requests fails the sign-in with TDLib's
 * reason in words: a wrong code or password is not retried here (the
 * caller asks again). */
#include <stdio.h>
#include <string.h>

#include "upstream/telegram/user/tg_user_internal.h"

#define PARLEY_DEVICE "parley"

static void auth_fail(tgu_auth_t *a, int status, const char *why)
{
    if (a->ended)
        return;
    a->ended = true;
    a->failed(a, status, why);
}

/* TDLib's error names, in words for the user. */
static const char *auth_words(const char *msg)
{
    static const struct {
        const char *name, *words;
    } w[] = {
        {"PHONE_CODE_INVALID", "the code is wrong (PHONE_CODE_INVALID)"},
        {"PHONE_CODE_EXPIRED", "the code expired (PHONE_CODE_EXPIRED); sign in again"},
        {"PASSWORD_HASH_INVALID", "the password is wrong (PASSWORD_HASH_INVALID)"},
        {"PHONE_NUMBER_INVALID", "the phone number is not valid (PHONE_NUMBER_INVALID)"},
        {"PHONE_NUMBER_BANNED", "the phone number is banned by Telegram (PHONE_NUMBER_BANNED)"},
        {"Wrong database encryption key",
         "the account's TDLib database does not open with its key (db.key); remove the account's "
         "directory and sign in again"},
    };
    for (size_t i = 0; msg && i < sizeof w / sizeof w[0]; i++)
        if (strstr(msg, w[i].name))
            return w[i].words;
    return msg ? msg : "TDLib refused the request";
}

static void auth_answered(void *data, int status, json_t *reply)
{
    tgu_auth_t *a = data;
    if (status == 0)
        return; /* the next state comes as an update */
    if (status == UV_ECANCELED)
        return;
    char why[512];
    if (status == UV_ETIMEDOUT)
        snprintf(why, sizeof why, "TDLib did not answer the sign-in request in time");
    else
        snprintf(why, sizeof why, "%s", auth_words(tdjson_error_message(reply, NULL)));
    auth_fail(a, status == UV_EINVAL || status == UV_EACCES ? UV_EACCES : status, why);
}

static int auth_send(tgu_auth_t *a, json_t *rq)
{
    if (rq == NULL)
        return UV_ENOMEM;
    return tdjson_send(a->client, rq, auth_answered, a);
}

static void auth_parameters(tgu_auth_t *a)
{
    json_t *rq = json_pack(
        "{s:s, s:b, s:s, s:s, s:s, s:b, s:b, s:b, s:b, s:I, s:s, s:s, s:s, s:s, s:s}", "@type",
        "setTdlibParameters", "use_test_dc", 0, "database_directory", a->session->td_dir,
        "files_directory", "", "database_encryption_key", a->session->key_b64, "use_file_database",
        1, "use_chat_info_database", 1, "use_message_database", 1, "use_secret_chats", 0, "api_id",
        (json_int_t)a->api_id, "api_hash", a->api_hash ? a->api_hash : "", "system_language_code",
        "en", "device_model", PARLEY_DEVICE, "system_version", "", "application_version",
        PARLEY_VERSION);
    int rc = auth_send(a, rq);
    if (rc != 0)
        auth_fail(a, rc, "cannot send TDLib its parameters");
}

bool tgu__auth_update(tgu_auth_t *a, json_t *update)
{
    const char *type = json_string_value(json_object_get(update, "@type"));
    if (type == NULL || strcmp(type, "updateAuthorizationState") != 0)
        return false;
    json_t *st = json_object_get(update, "authorization_state");
    const char *s = json_string_value(json_object_get(st, "@type"));
    if (s == NULL || a->ended)
        return true;
    if (strcmp(s, "authorizationStateWaitTdlibParameters") == 0) {
        auth_parameters(a);
    } else if (strcmp(s, "authorizationStateWaitPhoneNumber") == 0) {
        if (a->ask)
            a->ask(a, TGU_ASK_PHONE, NULL);
        else
            auth_fail(a, UV_EACCES, "the account is signed out");
    } else if (strcmp(s, "authorizationStateWaitCode") == 0) {
        const char *phone =
            json_string_value(json_object_get(json_object_get(st, "code_info"), "phone_number"));
        if (a->ask)
            a->ask(a, TGU_ASK_CODE, phone);
        else
            auth_fail(a, UV_EACCES, "the account asks for a login code: it is signed out");
    } else if (strcmp(s, "authorizationStateWaitPassword") == 0) {
        if (a->ask)
            a->ask(a, TGU_ASK_PASSWORD, json_string_value(json_object_get(st, "password_hint")));
        else
            auth_fail(a, UV_EACCES, "the account asks for its password: it is signed out");
    } else if (strcmp(s, "authorizationStateReady") == 0) {
        a->ended = true;
        a->ready(a);
    } else if (strcmp(s, "authorizationStateClosed") == 0 ||
               strcmp(s, "authorizationStateLoggingOut") == 0) {
        auth_fail(a, UV_EACCES, "TDLib closed the session");
    } else if (strcmp(s, "authorizationStateClosing") != 0) {
        char why[256];
        snprintf(why, sizeof why,
                 "TDLib asks for a step parley does not do (%s): sign the account up or confirm "
                 "it in an official Telegram app first",
                 s);
        auth_fail(a, UV_EACCES, why);
    }
    return true;
}

int tgu__auth_answer(tgu_auth_t *a, tgu_ask_t what, const char *text)
{
    json_t *rq;
    switch (what) {
    case TGU_ASK_PHONE:
        rq = json_pack("{s:s, s:s}", "@type", "setAuthenticationPhoneNumber", "phone_number", text);
        break;
    case TGU_ASK_CODE:
        rq = json_pack("{s:s, s:s}", "@type", "checkAuthenticationCode", "code", text);
        break;
    default:
        rq = json_pack("{s:s, s:s}", "@type", "checkAuthenticationPassword", "password", text);
        break;
    }
    return auth_send(a, rq);
}
