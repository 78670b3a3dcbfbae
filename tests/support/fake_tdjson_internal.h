/* fake_tdjson_internal: what fake_tdjson.c (the library's interface, its
 * clients, queues, script and login) and fake_tdjson_chats.c (chats,
 * messages, history, search, sending, live and inbox updates) share: the
 * limits, the client record, the output queue and the answer helpers. Not
 * exported from libfake_tdjson.so (hidden visibility); everything here runs
 * under the library's one mutex. */
#ifndef PARLEY_FAKE_TDJSON_INTERNAL_H
#define PARLEY_FAKE_TDJSON_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKE_VERSION "1.8.99-fake"
/* How often td_receive looks into the inbox directory. */
#define FAKE_INBOX_POLL_MS 100
/* Delay between sendMessage's answer and updateMessageSendSucceeded. */
#define FAKE_SEND_SUCCEEDED_MS 50
/* TDLib's bound on getChatHistory / search limits. */
#define FAKE_LIMIT_MAX 100
/* Defaults of load_chats_per_call and history_page_max. */
#define FAKE_DEFAULT_PER_CALL   100
#define FAKE_DEFAULT_START_DATE 1700000000
#define FAKE_SUPERGROUP_BASE    1000000000000LL
#define FAKE_ID_SHIFT           20

typedef enum {
    ST_WAIT_PARAMS,
    ST_WAIT_PHONE,
    ST_WAIT_CODE,
    ST_WAIT_PASSWORD,
    ST_READY,
    ST_CLOSED,
} fake_state_t;

typedef struct fake_out_s {
    struct fake_out_s *next;
    uint64_t due_ms;
    int client_id;
    bool apply;          /* apply to the client's state at delivery */
    bool drop_if_closed; /* scheduled updates die with the client */
    json_t *obj;
} fake_out_t;

typedef struct fake_req_s {
    struct fake_req_s *next;
    int client_id;
    char *text;
} fake_req_t;

typedef struct {
    int id;
    bool started;
    fake_state_t state;
    int lock_fd;
    char *db_dir;
    char *key;
    /* The user this directory signed in as (fake_td.json), when another
     * script signed it in; 0: the script's user. getMe answers it. */
    json_int_t me_id;
    json_t *chats; /* records: the script's chat plus "msgs" (ascending) */
    size_t chats_sent;
    json_int_t calls; /* calls of the flood_wait method */
    bool flood_fired;
    uint64_t flood_until_ms;
} fake_client_t;

typedef void (*fake_handler_t)(fake_client_t *c, json_t *req, json_t *extra);

typedef struct {
    const char *name;
    fake_handler_t fn;
    bool needs_ready; /* before Ready: 401 "Unauthorized" */
} fake_method_t;

/* The script (NULL: none) and the clients, by id - 1 (fake_tdjson.c). */
extern json_t *fake__script;
extern fake_client_t **fake__clients;
extern size_t fake__nclients;

/* The chat methods (fake_tdjson_chats.c). */
extern const fake_method_t fake__chat_methods[];
extern const size_t fake__chat_methods_len;

/* The administration methods (fake_tdjson_admin.c). */
extern const fake_method_t fake__admin_methods[];
extern const size_t fake__admin_methods_len;
/* The file methods (fake_tdjson_files.c). */
extern const fake_method_t fake__file_methods[];
extern const size_t fake__file_methods_len;

/* ---- fake_tdjson.c ---- */

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t fake__now_ms(void);
/* The script's integer name, or dflt. */
json_int_t fake__script_int(const char *name, json_int_t dflt);
/* o's string name, or "". */
const char *fake__str_of(json_t *o, const char *name);
/* Queues obj (stolen) for client cid after delay_ms. With apply, the
 * update changes the client's state first: now when it is due now, else
 * at delivery. drop_if_closed: not delivered once the client closed. */
void fake__out_push(int cid, json_t *obj, uint64_t delay_ms, bool apply, bool drop_if_closed);
/* An answer (obj stolen) carrying the request's extra. */
void fake__answer(fake_client_t *c, json_t *extra, json_t *obj);
/* An answer {"@type":"ok"}. */
void fake__answer_ok(fake_client_t *c, json_t *extra);
/* An error answer {code, message}. */
__attribute__((format(printf, 4, 5))) void fake__answer_error(fake_client_t *c, json_t *extra,
                                                              int code, const char *fmt, ...);
/* An update (obj stolen) sent now, not applied. */
void fake__update(fake_client_t *c, json_t *obj);
/* TDLib's user object of a script user. */
json_t *fake__user_object(json_t *u);
/* The account's user id. */
json_int_t fake__me_id(void);
/* The client with this id, or NULL. */
fake_client_t *fake__client_find(int id);
/* dir/name, malloc'd. */
char *fake__path_in(const char *dir, const char *name);

/* ---- fake_tdjson_chats.c ---- */

/* A client's chat records from the script: the script's chat plus "msgs"
 * (ascending by id), "reserved" and "newest_served". */
json_t *fake__chats_build(void);
/* Applies update u to c's chats (new, sent, edited, deleted messages, a
 * title). */
void fake__apply_update(fake_client_t *c, json_t *u);
/* Queues the script's `live` updates for c, which just became ready. */
void fake__schedule_live(fake_client_t *c);
/* Applies and sends every update file of the inbox directory to the ready
 * clients. */
void fake__poll_inbox(void);
/* c's chat record with this id, or NULL. */
json_t *fake__chat_find(fake_client_t *c, json_int_t id);
/* TDLib's chat object of c's record rec. */
json_t *fake__chat_object(fake_client_t *c, json_t *rec);
/* getTextEntities: @mentions and http(s) URLs of text, offsets and
 * lengths in UTF-16 units. */
json_t *fake__text_entities(const char *text);

/* ---- fake_tdjson_files.c ---- */

/* The messageDocument content of sendMessage's inputMessageDocument imc
 * (the file read and kept), or NULL with the error answered. */
json_t *fake__document_content(fake_client_t *c, json_t *imc, json_t *extra);

#endif
