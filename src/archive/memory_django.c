/* memory_django: the memory-lane Django database (see memory_django.h). */
#include "archive/memory_django.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define MEM_TAG "memory"

struct memory_django_s {
    memory_source_t source;
    pg_pool_t *pool;
    void (*close_cb)(void *data);
    void *close_data;
};

/* ---- SQL pieces (cm: a conversations_message row) --------------------------- */

/* When a message was said, in milliseconds (created_at only when the
 * source lacks the time). */
#define TS(a) "coalesce(" a ".\"timestamp\", (extract(epoch FROM " a ".created_at) * 1000)::bigint)"
#define ISO(ms)                                                                                    \
    "to_char(to_timestamp((" ms                                                                    \
    ") / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
/* The content blocks as text, in full. */
#define RENDER(a)                                                                                  \
    "(SELECT string_agg(CASE b ->> 'type'"                                                         \
    " WHEN 'text' THEN b ->> 'text'"                                                               \
    " WHEN 'thinking' THEN '[thinking] ' || coalesce(b ->> 'thinking', b ->> 'text', '')"          \
    " WHEN 'tool_use' THEN '[tool_use ' || coalesce(b ->> 'name', '') || '] ' ||"                  \
    "   coalesce((b -> 'input')::text, '')"                                                        \
    " WHEN 'tool_result' THEN '[tool_result] ' || CASE jsonb_typeof(b -> 'content')"               \
    "   WHEN 'string' THEN b ->> 'content'"                                                        \
    "   WHEN 'array' THEN (SELECT string_agg(coalesce(x ->> 'text', x::text), E'\\n')"             \
    "                      FROM jsonb_array_elements(b -> 'content') x)"                           \
    "   ELSE coalesce((b -> 'content')::text, '') END"                                             \
    " ELSE CASE WHEN jsonb_typeof(b) = 'string' THEN b #>> '{}'"                                   \
    "      ELSE '[' || coalesce(b ->> 'type', 'block') || '] ' || b::text END END, E'\\n')"        \
    " FROM jsonb_array_elements(CASE jsonb_typeof(" a ".content) WHEN 'array' THEN " a             \
    ".content ELSE jsonb_build_array(" a ".content) END) b)"
#define MTYPE(a)                                                                                   \
    "CASE WHEN EXISTS (SELECT 1 FROM conversations_thought t WHERE t.message_ptr_id = " a          \
    ".id) THEN 'thought' WHEN EXISTS (SELECT 1 FROM conversations_tooluse t WHERE "                \
    "t.message_ptr_id = " a ".id) THEN 'tool_use' WHEN EXISTS (SELECT 1 FROM "                     \
    "conversations_toolresult t WHERE t.message_ptr_id = " a ".id) THEN 'tool_result' ELSE "       \
    "'text' END"
/* A message as the list tools answer it; era name from e (may be NULL). */
#define MSG(a, e)                                                                                  \
    "json_build_object('id', " a ".id, 'sender_id', " a ".sender_id, 'content', " RENDER(          \
        a) ", 'message_number', " a ".message_number, 'context_heap_id', " a ".context_heap_id,"   \
           " 'era_name', " e ".name, 'created_at', " ISO(TS(a)) ", 'message_type', " MTYPE(        \
               a) ","                                                                              \
                  " 'is_continuation_message', CASE WHEN " a                                       \
                  ".is_continuation_message THEN true END,"                                        \
                  " 'eth_blockheight', " a ".eth_blockheight)"
#define FROM_MSG(a, h, e)                                                                          \
    " FROM conversations_message " a " LEFT JOIN context_heaps " h " ON " h ".id = " a             \
    ".context_heap_id LEFT JOIN eras " e " ON " e ".id = " h ".era_id"
/* limit from $1::jsonb with its default, capped. */
#define LIM(d)    "least(greatest(coalesce(($1::jsonb ->> 'limit')::numeric, " #d "), 1), 1000)::int"
#define CAPPED(d) "coalesce(($1::jsonb ->> 'limit')::numeric, " #d ") > 1000"
/* A page's members after its items: count, total (the SQL of the count
 * of every item), limit (d by default), limit_capped and next_offset. */
#define PAGE_MEMBERS(total, d)                                                                     \
    " 'count', (SELECT count(*) FROM page), 'total', (" total                                      \
    "), 'limit', " LIM(d) ", 'limit_capped', " CAPPED(                                             \
        d) ", 'next_offset', CASE WHEN (SELECT count(*) FROM "                                     \
           "page) = " LIM(                                                                         \
               d) " THEN greatest(coalesce(($1::jsonb ->> 'offset')::int, 0), 0) + " LIM(d) " END"

/* The statements, one per tool. */
static const struct {
    const char *what, *sql;
} statements[] =
    {
        {"latest_continuation",
         "SELECT json_build_object('message_id', cm.id, 'content', " RENDER(
             "cm") ","
                   " 'timestamp', " ISO(TS(
                       "cm")) ", 'context_heap_id', cm.context_heap_id,"
                              " 'era_name', e.name, 'message_number', cm.message_number, "
                              "'sender_id', cm.sender_id)::text" FROM_MSG(
                                  "cm", "ch",
                                  "e") " WHERE cm.is_continuation_message AND $1::jsonb IS NOT NULL"
                                       " ORDER BY " TS("cm") " DESC, cm.id DESC LIMIT 1"},
        {"messages_before",
         "WITH ref AS (SELECT CASE WHEN $1::jsonb ? 'reference_id' THEN"
         "   (SELECT " TS(
             "r") " FROM conversations_message r"
                  "    WHERE r.id::text = $1::jsonb ->> 'reference_id')"
                  "   ELSE (extract(epoch FROM ($1::jsonb ->> 'reference_timestamp')::timestamptz) "
                  "* "
                  "1000)::bigint"
                  "   END AS ts),"
                  " page AS (SELECT cm.id, " TS(
                      "cm") " AS ts FROM conversations_message cm, ref"
                            "   WHERE " TS("cm") " < ref.ts OR ($1::jsonb ? 'reference_id' AND " TS(
                                "cm") " = ref.ts"
                                      "     AND cm.id::text < $1::jsonb ->> 'reference_id')"
                                      "   ORDER BY " TS("cm") " DESC, cm.id DESC LIMIT " LIM(
                                          300) ")"
                                               " SELECT CASE WHEN (SELECT ts FROM ref) IS NULL "
                                               "THEN json_build_object('error',"
                                               "   'reference_id: no message ' || ($1::jsonb ->> "
                                               "'reference_id') || '; take ids from"
                                               " get_latest_continuation or "
                                               "get_recent_work')::text ELSE"
                                               " json_build_object('messages', coalesce((SELECT "
                                               "json_agg(" MSG("cm",
                                                               "e") "   ORDER BY p.ts DESC, p.id "
                                                                    "DESC) FROM page p JOIN "
                                                                    "conversations_message cm ON "
                                                                    "cm.id = p.id"
                                                                    "   LEFT JOIN context_heaps ch "
                                                                    "ON ch.id = cm.context_heap_id "
                                                                    "LEFT JOIN eras e ON e.id ="
                                                                    "   ch.era_id), '[]'),"
                                                                    " 'count', (SELECT count(*) "
                                                                    "FROM page), 'limit', " LIM(300) ", 'limit_capped', " CAPPED(
                                                                        300) ", "
                                                                             "'next_reference_id', "
                                                                             "CASE WHEN (SELECT "
                                                                             "count(*) FROM page) "
                                                                             "= " LIM(300) "   "
                                                                                           "THEN "
                                                                                           "(SELECT"
                                                                                           " p.id "
                                                                                           "FROM "
                                                                                           "page p "
                                                                                           "ORDER "
                                                                                           "BY "
                                                                                           "p.ts, "
                                                                                           "p.id "
                                                                                           "LIMIT "
                                                                                           "1) "
                                                                                           "END)::"
                                                                                           "text "
                                                                                           "END"},
        {"era_summary",
         "WITH era AS (SELECT * FROM eras WHERE id::text = $1::jsonb ->> 'era_id' OR name = "
         "$1::jsonb ->> "
         "'era_name'"
         "   ORDER BY (id::text = $1::jsonb ->> 'era_id') DESC LIMIT 1),"
         " page AS (SELECT cm.id, cm.message_number, " TS(
             "cm") " AS ts FROM conversations_message cm"
                   "   JOIN context_heaps ch ON ch.id = cm.context_heap_id JOIN era ON era.id = "
                   "ch.era_id"
                   "   ORDER BY cm.message_number NULLS LAST, " TS(
                       "cm") ", cm.id"
                             "   OFFSET greatest(coalesce(($1::jsonb ->> 'offset')::int, 0), 0) "
                             "LIMIT " LIM(
                                 500) ")"
                                      " SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM era) THEN "
                                      "json_build_object('error',"
                                      "   'no era ' || coalesce($1::jsonb ->> 'era_name', "
                                      "$1::jsonb ->> "
                                      "'era_id', '(give era_id or era_name)')"
                                      "   || '; eras: ' || (SELECT string_agg(name, ', ' ORDER BY "
                                      "created_at) FROM eras))::text"
                                      " ELSE json_build_object('era', (SELECT "
                                      "json_build_object('id', id, 'name', name,"
                                      "   'is_current', is_current) FROM era),"
                                      " 'messages', coalesce((SELECT json_agg(" MSG(
                                          "cm",
                                          "era") "   ORDER BY p.message_number NULLS LAST, p.ts, "
                                                 "p.id) FROM page p"
                                                 "   JOIN conversations_message cm ON cm.id = "
                                                 "p.id, era), '[]')," PAGE_MEMBERS(
                                                     "SELECT count(*) FROM conversations_message "
                                                     "cm JOIN context_heaps ch ON ch.id = "
                                                     "cm.context_heap_id JOIN era ON era.id = "
                                                     "ch.era_id",
                                                     500) ")::text END"},
        {"context_heap",
         "WITH heap AS (SELECT ch.*, e.name AS era_name FROM context_heaps ch"
         "   LEFT JOIN eras e ON e.id = ch.era_id WHERE ch.id::text = $1::jsonb ->> 'heap_id'),"
         " page AS (SELECT cm.id, cm.message_number, " TS(
             "cm") " AS ts FROM conversations_message cm"
                   "   JOIN heap ON heap.id = cm.context_heap_id"
                   "   ORDER BY cm.message_number NULLS LAST, " TS(
                       "cm") ", cm.id"
                             "   OFFSET greatest(coalesce(($1::jsonb ->> 'offset')::int, 0), 0) "
                             "LIMIT " LIM(
                                 500) ")"
                                      " SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM heap) THEN "
                                      "json_build_object('error',"
                                      "   'heap_id: no context heap ' || coalesce($1::jsonb ->> "
                                      "'heap_id', '') || '; messages carry"
                                      " their context_heap_id')::text"
                                      " ELSE json_build_object('heap', (SELECT "
                                      "json_build_object('id', id, 'era_name', era_name,"
                                      "   'type', upper(type), 'created_at', created_at) FROM "
                                      "heap),"
                                      " 'messages', coalesce((SELECT json_agg(" MSG(
                                          "cm",
                                          "e") "   ORDER BY p.message_number NULLS LAST, p.ts, "
                                               "p.id) FROM page p"
                                               "   JOIN conversations_message cm ON cm.id = p.id "
                                               "LEFT JOIN context_heaps ch ON ch.id ="
                                               "   cm.context_heap_id LEFT JOIN eras e ON e.id = "
                                               "ch.era_id), '[]')," PAGE_MEMBERS(
                                                   "SELECT count(*) FROM conversations_message cm "
                                                   "JOIN heap ON heap.id = cm.context_heap_id",
                                                   500) ")::text END"},
        {"search_messages",
         "WITH q AS (SELECT plainto_tsquery('english', $1::jsonb ->> 'query') AS tsq),"
         " hits AS (SELECT cm.id, ts_rank(to_tsvector('english', cm.content::text), q.tsq) AS rank,"
         "   " TS(
             "cm") " AS ts FROM conversations_message cm, q"
                   "   WHERE to_tsvector('english', cm.content::text) @@ q.tsq"
                   "   ORDER BY rank DESC, " TS("cm") " DESC LIMIT " LIM(
                       50) ")"
                           " SELECT json_build_object('messages', coalesce((SELECT json_agg((" MSG(
                               "cm",
                               "e") "::jsonb || jsonb_build_object('relevance_score', "
                                    "round(h.rank::numeric, 4), 'snippet',"
                                    "   ts_headline('english', " RENDER(
                                        "cm") ", q.tsq, 'StartSel=**, StopSel=**,"
                                              " MaxWords=30, MinWords=10'))) ORDER BY h.rank DESC, "
                                              "h.ts DESC)"
                                              "   FROM hits h JOIN conversations_message cm ON "
                                              "cm.id = h.id LEFT JOIN context_heaps ch"
                                              "   ON ch.id = cm.context_heap_id LEFT JOIN eras e "
                                              "ON e.id = ch.era_id, q), '[]'),"
                                              " 'count', (SELECT count(*) FROM hits), "
                                              "'limit', " LIM(50) ", 'limit_capped', " CAPPED(
                                                  50) ", 'scan', CASE WHEN EXISTS (SELECT 1 FROM "
                                                      "pg_indexes WHERE tablename ="
                                                      " 'conversations_message' AND indexdef ILIKE "
                                                      "'%to_tsvector(''english''%content%')"
                                                      " THEN 'index' ELSE 'sequential (no "
                                                      "full-text index on conversations_message; an"
                                                      " expression index on "
                                                      "to_tsvector(''english'', content::text) "
                                                      "would serve it)' END)::text"},
        {"recent_work",
         "WITH page AS (SELECT cm.id, " TS(
             "cm") " AS ts FROM conversations_message cm"
                   "   ORDER BY " TS("cm") " DESC, cm.id DESC LIMIT " LIM(
                       50) ")"
                           " SELECT json_build_object('messages', coalesce((SELECT json_agg(" MSG(
                               "cm",
                               "e") "   ORDER BY p.ts DESC, p.id DESC) FROM page p JOIN "
                                    "conversations_message cm ON cm.id = p.id"
                                    "   LEFT JOIN context_heaps ch ON ch.id = cm.context_heap_id "
                                    "LEFT JOIN eras e ON e.id ="
                                    "   ch.era_id), '[]'),"
                                    " 'count', (SELECT count(*) FROM page), 'limit', " LIM(
                                        50) ", 'limit_capped', " CAPPED(50) ", "
                                                                            "'next_reference_id', "
                                                                            "CASE WHEN (SELECT "
                                                                            "count(*) FROM page) "
                                                                            "= " LIM(50) "   THEN "
                                                                                         "(SELECT "
                                                                                         "p.id "
                                                                                         "FROM "
                                                                                         "page p "
                                                                                         "ORDER BY "
                                                                                         "p.ts, "
                                                                                         "p.id "
                                                                                         "LIMIT 1) "
                                                                                         "END)::"
                                                                                         "text"},
        {"compacting_actions",
         "WITH page AS (SELECT ca.*, cm.id AS mid, " TS(
             "cm") " AS ts FROM compacting_actions ca"
                   "   LEFT JOIN conversations_message cm ON cm.id = ca.continuation_message_id"
                   "   ORDER BY " TS("cm") " DESC NULLS LAST, ca.created_at DESC LIMIT " LIM(
                       50) ")"
                           " SELECT json_build_object('compacting_actions', coalesce((SELECT "
                           "json_agg(json_build_object("
                           "   'id', p.id, 'trigger', p.compact_trigger, 'pre_compact_tokens', "
                           "p.pre_compact_tokens,"
                           "   'context_heap_id', p.context_heap_id, 'continuation_message_id', "
                           "p.mid,"
                           "   'timestamp', CASE WHEN p.mid IS NOT NULL THEN " ISO(
                               "p.ts") " END,"
                                       "   'summary', (SELECT " RENDER(
                                           "cm") " FROM conversations_message cm WHERE cm.id = "
                                                 "p.mid))"
                                                 "   ORDER BY p.ts DESC NULLS LAST) FROM page p), "
                                                 "'[]'),"
                                                 " 'count', (SELECT count(*) FROM page), "
                                                 "'limit', " LIM(50) ")::text"},
        {"timeline",
         "WITH b AS (SELECT CASE WHEN $1::jsonb ? 'from' THEN (extract(epoch FROM ($1::jsonb ->> "
         "'from')::timestamptz)"
         "   * 1000)::bigint END AS t0, CASE WHEN $1::jsonb ? 'to' THEN (extract(epoch FROM "
         "($1::jsonb ->> 'to')"
         "   ::timestamptz) * 1000)::bigint END AS t1, ($1::jsonb ->> 'from_block')::bigint AS b0,"
         "   ($1::jsonb ->> 'to_block')::bigint AS b1),"
         " page AS (SELECT cm.id, " TS(
             "cm") " AS ts FROM conversations_message cm, b"
                   "   WHERE (b.t0 IS NULL OR " TS("cm") " >= b.t0) AND (b.t1 IS NULL OR " TS(
                       "cm") " < b.t1)"
                             "     AND (b.b0 IS NULL OR cm.eth_blockheight >= b.b0)"
                             "     AND (b.b1 IS NULL OR cm.eth_blockheight <= b.b1)"
                             "     AND (NOT $1::jsonb ? 'after_id' OR (" TS(
                                 "cm") ", cm.id::text) > ((SELECT " TS("r") "          FROM "
                                                                            "conversations_message "
                                                                            "r WHERE r.id::text = "
                                                                            "$1::jsonb ->> "
                                                                            "'after_id'),"
                                                                            "          $1::jsonb "
                                                                            "->> "
                                                                            "'after_id'))"
                                                                            "   ORDER BY " TS("cm") ", cm.id LIMIT " LIM(
                                                                                300) ")"
                                                                                     " SELECT "
                                                                                     "json_build_"
                                                                                     "object('"
                                                                                     "messages', "
                                                                                     "coalesce(("
                                                                                     "SELECT "
                                                                                     "json_"
                                                                                     "agg(" MSG(
                                                                                         "cm",
                                                                                         "e") "   "
                                                                                              "ORDE"
                                                                                              "R "
                                                                                              "BY "
                                                                                              "p."
                                                                                              "ts, "
                                                                                              "p."
                                                                                              "id) "
                                                                                              "FROM"
                                                                                              " pag"
                                                                                              "e p "
                                                                                              "JOIN"
                                                                                              " con"
                                                                                              "vers"
                                                                                              "atio"
                                                                                              "ns_"
                                                                                              "mess"
                                                                                              "age "
                                                                                              "cm "
                                                                                              "ON "
                                                                                              "cm."
                                                                                              "id "
                                                                                              "= "
                                                                                              "p.id"
                                                                                              "   "
                                                                                              "LEFT"
                                                                                              " JOI"
                                                                                              "N "
                                                                                              "cont"
                                                                                              "ext_"
                                                                                              "heap"
                                                                                              "s "
                                                                                              "ch "
                                                                                              "ON "
                                                                                              "ch."
                                                                                              "id "
                                                                                              "= "
                                                                                              "cm."
                                                                                              "cont"
                                                                                              "ext_"
                                                                                              "heap"
                                                                                              "_id "
                                                                                              "LEFT"
                                                                                              " JOI"
                                                                                              "N "
                                                                                              "eras"
                                                                                              " e "
                                                                                              "ON "
                                                                                              "e."
                                                                                              "id ="
                                                                                              "   "
                                                                                              "ch."
                                                                                              "era_"
                                                                                              "id),"
                                                                                              " '[]"
                                                                                              "'),"
                                                                                              " '"
                                                                                              "coun"
                                                                                              "t', "
                                                                                              "(SEL"
                                                                                              "ECT "
                                                                                              "coun"
                                                                                              "t(*)"
                                                                                              " FRO"
                                                                                              "M "
                                                                                              "page"
                                                                                              "), "
                                                                                              "'lim"
                                                                                              "it',"
                                                                                              " " LIM(300) ", 'limit_capped', " CAPPED(300) ", 'next_after_id', CASE WHEN (SELECT count(*) FROM page) = " LIM(
                                                                                                  300) "   THEN (SELECT p.id FROM page p ORDER BY p.ts DESC, p.id DESC LIMIT 1) END)::text"},
        {"message_by_id",
         "SELECT coalesce((SELECT " MSG(
             "cm",
             "e") "::jsonb || jsonb_build_object('imported_at',"
                  "   cm.created_at, 'model_backend', cm.model_backend, 'is_sidechain', "
                  "cm.is_sidechain)" FROM_MSG(
                      "cm",
                      "ch",
                      "e") " WHERE cm.id::text = $1::jsonb ->> 'message_id'),"
                           " jsonb_build_object('error', 'message_id: no message ' || "
                           "coalesce($1::jsonb "
                           "->> 'message_id', '')"
                           "   || '; take ids from get_recent_work or search_messages'))::text"},
};

/* ---- calls --------------------------------------------------------------------- */

typedef struct mcall_s {
    pg_call_t *pc;
    memory_cb cb;
    void *data;
} mcall_t;

static void call_done(void *data, int status, const char *value, const char *sqlstate,
                      const char *error)
{
    mcall_t *mc = data;
    if (status == 0) {
        mc->cb(mc->data, 0, value ? value : "null", ARCHIVE_ERR_NONE, NULL);
    } else {
        char msg[600];
        archive_err_t err = ARCHIVE_ERR_INTERNAL;
        if (strcmp(sqlstate, "42P01") == 0 || strcmp(sqlstate, "42703") == 0) {
            snprintf(msg, sizeof msg,
                     "the memory database lacks what the memory-lane schema has (%s); check "
                     "--memory-db",
                     error);
        } else if (strncmp(sqlstate, "22", 2) == 0) {
            err = ARCHIVE_ERR_ARGUMENT;
            snprintf(msg, sizeof msg, "bad argument: %s", error);
        } else if (status == UV_ECONNRESET || status == UV_ETIMEDOUT || status == UV_EBUSY ||
                   strncmp(sqlstate, "08", 2) == 0 || sqlstate[0] == '\0') {
            err = ARCHIVE_ERR_BUSY;
            snprintf(msg, sizeof msg, "the memory database is unreachable or busy: %s",
                     error && error[0] ? error : uv_strerror(status));
        } else {
            snprintf(msg, sizeof msg, "%s", error && error[0] ? error : uv_strerror(status));
        }
        mc->cb(mc->data, status, NULL, err, msg);
    }
    free(mc);
}

static int md_call(void *impl, const char *what, const char *args_json, memory_cb cb, void *data,
                   void **handle)
{
    memory_django_t *m = impl;
    for (size_t i = 0; i < sizeof statements / sizeof statements[0]; i++) {
        if (strcmp(statements[i].what, what) != 0)
            continue;
        mcall_t *mc = calloc(1, sizeof *mc);
        if (mc == NULL)
            return UV_ENOMEM;
        mc->cb = cb;
        mc->data = data;
        const char *params[1] = {args_json ? args_json : "{}"};
        char name[64];
        snprintf(name, sizeof name, "memory_%s", what);
        int rc = pg_pool_call(m->pool, name, statements[i].sql, 1, params, call_done, mc, &mc->pc);
        if (rc != 0) {
            free(mc);
            return rc;
        }
        if (handle)
            *handle = mc;
        return 0;
    }
    return UV_EINVAL;
}

static void md_cancel(void *impl, void *handle)
{
    (void)impl;
    pg_call_cancel(((mcall_t *)handle)->pc);
}

/* ---- the schema check at start -------------------------------------------------- */

static void checked(void *data, int status, const char *value, const char *sqlstate,
                    const char *error)
{
    (void)data;
    (void)sqlstate;
    if (status != 0)
        log_error(MEM_TAG, "memory database: %s (the memory tools answer so until it is back)",
                  error && error[0] ? error : uv_strerror(status));
    else if (value && value[0])
        log_error(MEM_TAG, "memory database lacks table(s) %s of the memory-lane schema", value);
    else
        log_info(MEM_TAG, "memory database ready (read-only)");
}

void memory_django_check(memory_django_t *m)
{
    static const char sql[] =
        "SELECT string_agg(t, ', ') FROM unnest(ARRAY['eras', 'context_heaps',"
        " 'conversations_message', 'conversations_thought', 'conversations_tooluse',"
        " 'conversations_toolresult', 'compacting_actions']) t WHERE to_regclass(t) IS NULL";
    if (pg_pool_call(m->pool, NULL, sql, 0, NULL, checked, m, NULL) != 0)
        log_warn(MEM_TAG, "memory database: cannot queue the schema check");
}

int memory_django_new(uv_loop_t *loop, const pg_conninfo_t *ci, uint32_t query_timeout_ms,
                      uint32_t connect_timeout_ms, memory_django_t **out, char *err, size_t errcap)
{
    memory_django_t *m = calloc(1, sizeof *m);
    if (m == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    pg_pool_config_t pc = {.name = "memory-db",
                           .size = MEMORY_DJANGO_POOL_SIZE,
                           .queue_max = 256,
                           .query_timeout_ms = query_timeout_ms,
                           .connect_timeout_ms = connect_timeout_ms,
                           .read_only = true};
    int rc = pg_pool_new(loop, &pc, ci, &m->pool, err, errcap);
    if (rc != 0) {
        free(m);
        return rc;
    }
    pg_pool_set_data(m->pool, m);
    m->source =
        (memory_source_t){.name = "django", .call = md_call, .cancel = md_cancel, .impl = m};
    *out = m;
    return 0;
}

memory_source_t *memory_django_source(memory_django_t *m)
{
    return &m->source;
}

static void pool_closed(pg_pool_t *p)
{
    memory_django_t *m = pg_pool_get_data(p);
    void (*cb)(void *) = m->close_cb;
    void *data = m->close_data;
    free(m);
    if (cb)
        cb(data);
}

void memory_django_close(memory_django_t *m, void (*cb)(void *data), void *data)
{
    m->close_cb = cb;
    m->close_data = data;
    pg_pool_close(m->pool, pool_closed);
}
