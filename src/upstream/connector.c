/* connector: the wrappers every caller goes through (see connector.h):
 * each verb checks that the connector is there, serves the table the verb
 * belongs to, has the function and declares the capability, and answers
 * UV_ENOTSUP otherwise. */
#include "upstream/connector.h"

#include <unistd.h>
#include <uv.h>

/* The chat table of conn when it can do cap, else NULL. */
static const connector_chat_ops_t *chat_ops(const connector_t *conn, connector_cap_t cap)
{
    return connector_can(conn, cap) ? conn->ops->chat : NULL;
}

static const connector_accounts_ops_t *account_ops(const connector_t *conn, connector_cap_t cap)
{
    return connector_can(conn, cap) ? conn->ops->accounts : NULL;
}

const char *connector_state(const connector_t *conn)
{
    return conn && conn->ops->state ? conn->ops->state(conn->impl) : "none";
}

int connector_job_classes(const connector_t *conn, const sync_class_t **classes)
{
    return conn && conn->ops->job_classes ? conn->ops->job_classes(conn->impl, classes) : 0;
}

bool connector_serves_account(const connector_t *conn, int64_t account_id)
{
    return conn && account_id != 0 && conn->ops->serves_account &&
           conn->ops->serves_account(conn->impl, account_id);
}

const char *connector_account_json(const connector_t *conn)
{
    return conn && conn->ops->account_json ? conn->ops->account_json(conn->impl) : NULL;
}

void connector_metrics(const connector_t *conn, struct buf_s *out)
{
    if (conn && conn->ops->metrics)
        conn->ops->metrics(conn->impl, out);
}

bool connector_realtime(const connector_t *conn)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_REALTIME);
    return o && o->realtime && o->realtime(conn->impl);
}

int connector_set_realtime(const connector_t *conn, bool on)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_REALTIME);
    if (o == NULL || o->set_realtime == NULL)
        return UV_ENOTSUP;
    o->set_realtime(conn->impl, on);
    return 0;
}

int connector_send_text(const connector_t *conn, int64_t chat, const char *text, int64_t topic,
                        int64_t reply_to, connector_cb cb, void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_SEND);
    return o && o->send_text ? o->send_text(conn->impl, chat, text, topic, reply_to, cb, data)
                             : UV_ENOTSUP;
}

int connector_send_file(const connector_t *conn, int64_t chat, int fd, const char *caption,
                        const char *filename, int64_t topic, int64_t reply_to, connector_cb cb,
                        void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_SEND);
    if (o == NULL || o->send_file == NULL) {
        close(fd);
        return UV_ENOTSUP;
    }
    return o->send_file(conn->impl, chat, fd, caption, filename, topic, reply_to, cb, data);
}

int connector_chat_info(const connector_t *conn, int64_t chat, unsigned parts, connector_cb cb,
                        void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_CHAT_INFO);
    return o && o->chat_info ? o->chat_info(conn->impl, chat, parts, cb, data) : UV_ENOTSUP;
}

int connector_rename(const connector_t *conn, int64_t chat, const char *title, connector_cb cb,
                     void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_ADMINISTER);
    return o && o->rename ? o->rename(conn->impl, chat, title, cb, data) : UV_ENOTSUP;
}

int connector_invite_link(const connector_t *conn, int64_t chat, bool revoke, connector_cb cb,
                          void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_ADMINISTER);
    return o && o->invite_link ? o->invite_link(conn->impl, chat, revoke, cb, data) : UV_ENOTSUP;
}

int connector_remove_member(const connector_t *conn, int64_t chat, int64_t user, connector_cb cb,
                            void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_ADMINISTER);
    return o && o->remove_member ? o->remove_member(conn->impl, chat, user, cb, data) : UV_ENOTSUP;
}

int connector_leave(const connector_t *conn, int64_t chat, connector_cb cb, void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_ADMINISTER);
    return o && o->leave ? o->leave(conn->impl, chat, cb, data) : UV_ENOTSUP;
}

int connector_join(const connector_t *conn, const char *invite, connector_cb cb, void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_JOIN_CHATS);
    return o && o->join ? o->join(conn->impl, invite, cb, data) : UV_ENOTSUP;
}

int connector_add_members(const connector_t *conn, int64_t chat, const int64_t *users, size_t n,
                          connector_cb cb, void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_ADD_MEMBERS);
    return o && o->add_members ? o->add_members(conn->impl, chat, users, n, cb, data) : UV_ENOTSUP;
}

int connector_fetch_media(const connector_t *conn, int64_t chat, int64_t message,
                          connector_progress_cb progress, connector_cb done, void *data,
                          void **handle)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_DOWNLOAD);
    return o && o->fetch_media
               ? o->fetch_media(conn->impl, chat, message, progress, done, data, handle)
               : UV_ENOTSUP;
}

void connector_fetch_cancel(const connector_t *conn, void *handle)
{
    if (conn && conn->ops->chat && conn->ops->chat->fetch_cancel)
        conn->ops->chat->fetch_cancel(conn->impl, handle);
}

int connector_search_dialogs(const connector_t *conn, const char *query, int limit, connector_cb cb,
                             void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_SEARCH_DIALOGS);
    return o && o->search_dialogs ? o->search_dialogs(conn->impl, query, limit, cb, data)
                                  : UV_ENOTSUP;
}

int connector_search_messages(const connector_t *conn, int64_t chat, const char *query,
                              int64_t min_date, int64_t max_date, int limit, connector_cb cb,
                              void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_READ_HISTORY);
    return o && o->search_messages
               ? o->search_messages(conn->impl, chat, query, min_date, max_date, limit, cb, data)
               : UV_ENOTSUP;
}

int connector_history(const connector_t *conn, int64_t chat, int64_t from, int newer, int limit,
                      connector_cb cb, void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_READ_HISTORY);
    return o && o->history ? o->history(conn->impl, chat, from, newer, limit, cb, data)
                           : UV_ENOTSUP;
}

int connector_get_message(const connector_t *conn, int64_t chat, int64_t message, connector_cb cb,
                          void *data)
{
    const connector_chat_ops_t *o = chat_ops(conn, CONNECTOR_CAN_READ_HISTORY);
    return o && o->get_message ? o->get_message(conn->impl, chat, message, cb, data) : UV_ENOTSUP;
}

int connector_login(const connector_t *conn, const char *identifier, const char *secret,
                    const char *service, connector_cb cb, void *data)
{
    const connector_accounts_ops_t *o = account_ops(conn, CONNECTOR_CAN_LOGIN);
    return o && o->login ? o->login(conn->impl, identifier, secret, service, cb, data) : UV_ENOTSUP;
}

int connector_accounts(const connector_t *conn, const char *command, const char *account,
                       connector_cb cb, void *data)
{
    const connector_accounts_ops_t *o = account_ops(conn, CONNECTOR_CAN_LOGIN);
    return o && o->accounts ? o->accounts(conn->impl, command, account, cb, data) : UV_ENOTSUP;
}

int connector_query(const connector_t *conn, const char *account, const char *method,
                    const char *params_json, connector_cb cb, void *data)
{
    const connector_accounts_ops_t *o = account_ops(conn, CONNECTOR_CAN_QUERY);
    return o && o->query ? o->query(conn->impl, account, method, params_json, cb, data)
                         : UV_ENOTSUP;
}

int connector_signin(const connector_t *conn, const char *identifier, const char *account,
                     connector_signin_cb step, void *data, void **handle, char *error,
                     size_t errcap)
{
    char scratch[8];
    const connector_accounts_ops_t *o = account_ops(conn, CONNECTOR_CAN_LOGIN);
    if (error == NULL) {
        error = scratch;
        errcap = sizeof scratch;
    }
    if (errcap > 0)
        error[0] = '\0';
    return o && o->signin
               ? o->signin(conn->impl, identifier, account, step, data, handle, error, errcap)
               : UV_ENOTSUP;
}

int connector_signin_answer(const connector_t *conn, void *handle, const char *secret)
{
    const connector_accounts_ops_t *o = conn ? conn->ops->accounts : NULL;
    return o && o->signin_answer ? o->signin_answer(conn->impl, handle, secret) : UV_ENOTSUP;
}

void connector_signin_cancel(const connector_t *conn, void *handle)
{
    const connector_accounts_ops_t *o = conn ? conn->ops->accounts : NULL;
    if (o && o->signin_cancel)
        o->signin_cancel(conn->impl, handle);
}
