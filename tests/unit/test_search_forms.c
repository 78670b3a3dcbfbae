/* Tests for archive/search_forms against a fresh database with the real
 * schema: a store with rows is filled in batches, indexed and switched
 * over; a stop in the middle of the fill leaves it to go on at the next
 * start; a new list fills again; '' switches the forms off at once; an
 * unknown configuration is an error naming it; the vocabulary of the
 * fuzzy search is filled from the stored rows and new words are merged
 * while it runs; the loop closes cleanly. */
#include <stdlib.h>
#include <string.h>

#include "archive/search_forms.h"
#include "testutil.h"

static uv_loop_t loop;
static pg_pool_t *pool;
static pg_conninfo_t ci;

typedef struct {
    bool done;
    int status;
    char value[512];
} sql_answer_t;

static void on_value(void *data, int status, const char *value, const char *sqlstate,
                     const char *error)
{
    (void)sqlstate;
    sql_answer_t *a = data;
    if (status != 0)
        fail_msg("SQL failed: %s", error);
    snprintf(a->value, sizeof a->value, "%s", value ? value : "");
    a->done = true;
}

/* The first column of the first row of sql, as text. */
static const char *value_of(const char *sql)
{
    static sql_answer_t a;
    memset(&a, 0, sizeof a);
    assert_int_equal(pg_pool_call(pool, NULL, sql, 0, NULL, on_value, &a, NULL), 0);
    test_run_until(&loop, &a.done, 20000);
    return a.value;
}

typedef struct {
    bool called;
    int status;
} forms_answer_t;

static void on_forms(search_forms_t *s, int status)
{
    forms_answer_t *a = search_forms_data(s);
    a->called = true;
    a->status = status;
}

/* Stops s (past the forms it goes on keeping the vocabulary), runs the
 * loop until it is idle, then frees it. */
static void finish(search_forms_t *s)
{
    search_forms_stop(s);
    uint64_t deadline = uv_now(&loop) + 20000;
    while (!search_forms_idle(s)) {
        assert_true(uv_now(&loop) < deadline);
        test_run_for(&loop, 10);
    }
    search_forms_free(s);
}

static search_forms_t *start(const char *langs, int batch, forms_answer_t *a)
{
    char err[256];
    search_forms_t *s = NULL;
    memset(a, 0, sizeof *a);
    assert_int_equal(
        search_forms_start(&loop, &ci, pool, langs, batch, 5000, on_forms, a, &s, err, sizeof err),
        0);
    return s;
}

static int setup(void **state)
{
    (void)state;
    uv_loop_init(&loop);
    char db[64];
    test_pg_migrated_db(&loop, 2, &pool, db, sizeof db);
    test_pg_conninfo(&ci, db);
    value_of("INSERT INTO chats (id, kind, title) VALUES (-1, 'group', 'Crew')");
    value_of("INSERT INTO messages (chat_id, id, date, text) SELECT -1, i, now(), "
             "CASE WHEN i % 2 = 0 THEN 'we deployed the servers ' || i "
             "ELSE 'встреча в Москве ' || i END FROM generate_series(1, 3000) i");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    pg_conninfo_free(&ci);
    test_pg_pool_close(&loop, pool);
    test_loop_close(&loop);
    return 0;
}

static void test_fill_index_switch(void **state)
{
    (void)state;
    assert_string_equal(value_of("SELECT parley_search_languages()"), "");
    forms_answer_t a;
    search_forms_t *s = start("english,russian", 500, &a);
    test_run_until(&loop, &a.called, 60000);
    assert_int_equal(a.status, 0);
    finish(s);
    assert_string_equal(value_of("SELECT parley_search_languages()"), "english,russian");
    assert_string_equal(value_of("SELECT count(*) FROM messages WHERE forms IS NULL"), "0");
    assert_string_equal(value_of("SELECT rows_filled FROM search_forms WHERE active"), "3000");
    assert_string_equal(value_of("SELECT indisvalid FROM pg_index "
                                 "WHERE indexrelid = 'messages_forms_idx'::regclass"),
                        "t");
    assert_string_equal(
        value_of("SELECT parley_search('москва', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, "
                 "'time', 1, 0) ->> 'count'"),
        "1000");
    /* Started again: in use at once. */
    s = start("english,russian", 500, &a);
    test_run_until(&loop, &a.called, 20000);
    assert_int_equal(a.status, 0);
    finish(s);
}

static void test_stop_and_go_on(void **state)
{
    (void)state;
    forms_answer_t a;
    /* A new list: the rows are filled again, 100 a batch; stopped early. */
    search_forms_t *s = start("english", 100, &a);
    uint64_t deadline = uv_now(&loop) + 20000;
    const char *filled = "SELECT coalesce((SELECT rows_filled FROM search_forms "
                         "WHERE target AND languages = 'english'), 0)";
    while (atoi(value_of(filled)) == 0) {
        assert_true(uv_now(&loop) < deadline);
        test_run_for(&loop, 5);
    }
    search_forms_stop(s);
    finish(s);
    assert_false(a.called);
    /* Until it is filled, the search goes on with the list in use. */
    assert_string_equal(value_of("SELECT parley_search_languages()"), "english,russian");
    int done = atoi(value_of(filled));
    assert_true(done > 0);
    if (done < 3000)
        assert_string_equal(value_of("SELECT filled FROM search_forms WHERE languages = 'english'"),
                            "f");
    /* The next start goes on from the cursor and finishes. */
    s = start("english", 1000, &a);
    test_run_until(&loop, &a.called, 60000);
    assert_int_equal(a.status, 0);
    finish(s);
    assert_string_equal(value_of("SELECT parley_search_languages()"), "english");
    assert_string_equal(value_of("SELECT rows_filled FROM search_forms WHERE active"), "3000");
    assert_string_equal(value_of("SELECT count(*) FROM search_forms"), "1");
}

static void test_off_and_unknown(void **state)
{
    (void)state;
    forms_answer_t a;
    search_forms_t *s = start("", 500, &a);
    test_run_until(&loop, &a.called, 20000);
    assert_int_equal(a.status, 0);
    finish(s);
    assert_string_equal(value_of("SELECT parley_search_languages()"), "");
    s = start("english, klingon", 500, &a);
    test_run_until(&loop, &a.called, 20000);
    assert_int_equal(a.status, UV_EINVAL);
    assert_non_null(
        strstr(search_forms_error(s), "\"klingon\" is not a text search configuration"));
    finish(s);
    /* Nothing changed. */
    assert_string_equal(value_of("SELECT parley_search_languages()"), "");
}

/* Runs the loop until sql answers want (20 s at most). */
static void wait_for(const char *sql, const char *want)
{
    uint64_t deadline = uv_now(&loop) + 20000;
    while (strcmp(value_of(sql), want) != 0) {
        assert_true(uv_now(&loop) < deadline);
        test_run_for(&loop, 20);
    }
}

static void test_vocabulary(void **state)
{
    (void)state;
    /* As after migration 024 on a store with rows: the fill starts over. */
    value_of("DELETE FROM search_words");
    value_of("DELETE FROM search_words_new");
    value_of("UPDATE search_words_fill SET filled = false, fill_chat_id = NULL, fill_id = NULL, "
             "rows_filled = 0, ready_at = NULL");
    forms_answer_t a;
    search_forms_t *s = start("", 700, &a);
    wait_for("SELECT parley_search_words_ready()", "t");
    assert_string_equal(value_of("SELECT rows_filled FROM search_words_fill"), "3000");
    assert_string_equal(
        value_of("SELECT count(*) FROM search_words WHERE word IN ('deployed', 'москве', '2999')"),
        "3");
    /* A word written while it runs is merged within seconds. */
    value_of("INSERT INTO messages (chat_id, id, date, text) "
             "VALUES (-1, 5000, now(), 'zanzibarquux arrived')");
    wait_for("SELECT count(*) FROM search_words WHERE word = 'zanzibarquux'", "1");
    wait_for("SELECT count(*) FROM search_words_new", "0");
    assert_string_equal(
        value_of("SELECT parley_search('zanzibarqux', NULL, true, NULL, NULL, NULL, NULL, NULL, "
                 "NULL, 'time', 1, 0) #>> '{results,0,id}'"),
        "5000");
    finish(s);
    assert_true(a.called);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_index_switch),
        cmocka_unit_test(test_stop_and_go_on),
        cmocka_unit_test(test_off_and_unknown),
        cmocka_unit_test(test_vocabulary),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
