/* Tests for archive/tg_map: export messages to COPY rows of messages and
 * import_media, with PostgreSQL's readings of JSON text, integers and
 * times (the whole-store comparison against the SQL mapping is
 * tests/integration/import_telegram_map.sh; the text formats themselves are
 * tests/unit/test_pgtext.c). */
#include "testutil.h"

#include <string.h>

#include "import/tg_map.h"

typedef struct {
    buf_t rows, media;
    tg_map_kind_t kind;
    int64_t id;
    char err[256];
    int rc;
} mapped_t;

static void map(const char *json, int64_t chat_id, int tz, mapped_t *out)
{
    json_error_t je;
    json_t *m = json_loads(json, JSON_DECODE_ANY, &je);
    assert_non_null(m);
    tg_map_opts_t o = {.chat_known = chat_id != 0, .chat_id = chat_id, .tz_seconds = tz};
    buf_init(&out->rows, 1 << 20);
    buf_init(&out->media, 1 << 20);
    out->err[0] = '\0';
    out->rc = tg_map_message(m, &o, &out->rows, &out->media, &out->kind, &out->id, out->err,
                             sizeof out->err);
    assert_int_equal(buf_append(&out->rows, "", 1), 0);
    assert_int_equal(buf_append(&out->media, "", 1), 0);
    json_decref(m);
}

static void done(mapped_t *m)
{
    buf_free(&m->rows);
    buf_free(&m->media);
}

/* The nth (from 0) tab-separated field of the row. */
static const char *field(const mapped_t *m, int n, char *buf, size_t cap)
{
    const char *s = m->rows.data;
    for (int i = 0; i < n && s; i++) {
        s = strchr(s, '\t');
        if (s)
            s++;
    }
    assert_non_null(s);
    size_t len = strcspn(s, "\t\n");
    assert_true(len < cap);
    memcpy(buf, s, len);
    buf[len] = '\0';
    return buf;
}

static void test_plain_message(void **state)
{
    (void)state;
    mapped_t m;
    map("{\"id\": 7, \"type\": \"message\", \"date\": \"2024-01-01T10:00:00\", "
        "\"date_unixtime\": \"1704103200\", \"from\": \"Ann\", \"from_id\": \"user5\", "
        "\"text\": \"a\\tb https://x.example\", \"reply_to_message_id\": 3, "
        "\"reply_to_peer_id\": \"channel9\", \"forwarded_from\": \"F\", \"via_bot\": \"@b\"}",
        -1000000000001, 0, &m);
    assert_int_equal(m.rc, 0);
    assert_int_equal(m.kind, TG_MAP_ROW);
    assert_int_equal(m.id, 7);
    assert_string_equal(m.rows.data,
                        "-1000000000001\t7\t5\tAnn\t2024-01-01 10:00:00+00\t\\N\ta\\tb "
                        "https://x.example\t\\N\t3\t-1000000000009\tF\t\\N\tt\tmessage\t\\N\t"
                        "{\"via_bot\": \"@b\"}\n");
    assert_string_equal(m.media.data, "");
    done(&m);
}

static void test_text_array(void **state)
{
    (void)state;
    mapped_t m;
    char f[512];
    map("{\"id\": 1, \"text\": [\"see \", {\"type\": \"text_link\", \"text\": \"here\", \"href\": "
        "\"h\"}, 5, {\"type\": \"bold\", \"text\": 7}]}",
        42, 0, &m);
    assert_int_equal(m.rc, 0);
    assert_string_equal(field(&m, 4, f, sizeof f), "1970-01-01 00:00:00+00"); /* 'epoch' */
    assert_string_equal(field(&m, 6, f, sizeof f), "see here7");
    assert_string_equal(
        field(&m, 7, f, sizeof f),
        "[{\"text\": \"see \", \"type\": \"plain\"}, {\"href\": \"h\", \"text\": "
        "\"here\", \"type\": \"text_link\"}, 5, {\"text\": 7, \"type\": \"bold\"}]");
    assert_string_equal(field(&m, 12, f, sizeof f), "t"); /* a text_link entity */
    done(&m);
}

/* Runs of plain text only say no more than the text: no entities stored;
 * one run of anything else (or a plain run with more than its text) keeps
 * them all. */
static void test_plain_entities(void **state)
{
    (void)state;
    mapped_t m;
    char f[512];
    map("{\"id\": 1, \"text\": \"a b\", \"text_entities\": [{\"type\": \"plain\", \"text\": \"a "
        "\"}, "
        "{\"type\": \"plain\", \"text\": \"b\"}]}",
        42, 0, &m);
    assert_int_equal(m.rc, 0);
    assert_string_equal(field(&m, 6, f, sizeof f), "a b");
    assert_string_equal(field(&m, 7, f, sizeof f), "\\N");
    done(&m);
    map("{\"id\": 1, \"text\": [\"a \", \"b\"]}", 42, 0, &m);
    assert_string_equal(field(&m, 6, f, sizeof f), "a b");
    assert_string_equal(field(&m, 7, f, sizeof f), "\\N");
    done(&m);
    map("{\"id\": 1, \"text\": \"a b\", \"text_entities\": [{\"type\": \"plain\", \"text\": \"a "
        "\"}, "
        "{\"type\": \"bold\", \"text\": \"b\"}]}",
        42, 0, &m);
    assert_string_equal(field(&m, 7, f, sizeof f),
                        "[{\"text\": \"a \", \"type\": \"plain\"}, {\"text\": \"b\", "
                        "\"type\": \"bold\"}]");
    done(&m);
    map("{\"id\": 1, \"text\": \"a\", \"text_entities\": [{\"type\": \"plain\", \"text\": \"a\", "
        "\"x\": 1}]}",
        42, 0, &m);
    assert_string_equal(field(&m, 7, f, sizeof f),
                        "[{\"x\": 1, \"text\": \"a\", \"type\": \"plain\"}]");
    done(&m);
}

static void test_times(void **state)
{
    (void)state;
    mapped_t m;
    char f[128];
    /* A local date at +03:00; a leap second rolls over; 24:00 is midnight. */
    map("{\"id\": 1, \"date\": \"2020-02-29T23:59:60\", \"edited\": \"2021-01-01T24:00:00\"}", 42,
        3 * 3600, &m);
    assert_int_equal(m.rc, 0);
    assert_string_equal(field(&m, 4, f, sizeof f), "2020-02-29 21:00:00+00");
    assert_string_equal(field(&m, 5, f, sizeof f), "2021-01-01 21:00:00+00");
    done(&m);
    /* Before year 1 at a positive offset; past year 9999 from unixtime. */
    map("{\"id\": 1, \"date\": \"0001-01-01T00:00:00\", \"edited_unixtime\": \"253402300800\"}", 42,
        3 * 3600, &m);
    assert_string_equal(field(&m, 4, f, sizeof f), "0001-12-31 21:00:00+00 BC");
    assert_string_equal(field(&m, 5, f, sizeof f), "10000-01-01 00:00:00+00");
    done(&m);
    map("{\"id\": 1, \"date\": \"2020-02-30T00:00:00\"}", 42, 0, &m);
    assert_int_equal(m.rc, UV_EINVAL);
    assert_non_null(strstr(m.err, "message 1: \"date\" is not a valid date"));
    done(&m);
    map("{\"id\": 1, \"date_unixtime\": \"99999999999999\"}", 42, 0, &m);
    assert_int_equal(m.rc, UV_EINVAL);
    done(&m);
}

static void test_service_and_peers(void **state)
{
    (void)state;
    mapped_t m;
    char f[512];
    map("{\"id\": 4, \"type\": \"service\", \"actor\": \"A\", \"actor_id\": \"chat77\", "
        "\"action\": \"invite_members\", \"members\": [\"B\", null], \"text\": \"\", "
        "\"text_entities\": [], \"x\": null}",
        -77, 0, &m);
    assert_int_equal(m.rc, 0);
    assert_string_equal(field(&m, 2, f, sizeof f), "-77");
    assert_string_equal(field(&m, 6, f, sizeof f), "\\N");
    assert_string_equal(field(&m, 13, f, sizeof f), "service");
    assert_string_equal(
        field(&m, 14, f, sizeof f),
        "{\"x\": null, \"action\": \"invite_members\", \"members\": [\"B\", null]}");
    done(&m);
    /* A from_id that is present but null hides actor_id (coalesce of jsonb). */
    map("{\"id\": 5, \"from_id\": null, \"actor_id\": \"user1\", \"from\": null, \"actor\": \"N\"}",
        42, 0, &m);
    assert_string_equal(field(&m, 2, f, sizeof f), "\\N");
    assert_string_equal(field(&m, 3, f, sizeof f), "N");
    done(&m);
    /* A reply to this very chat keeps no reply_to_chat_id. */
    map("{\"id\": 6, \"reply_to_peer_id\": \"chat77\", \"reply_to_message_id\": \" 2 \"}", -77, 0,
        &m);
    assert_string_equal(field(&m, 8, f, sizeof f), "2");
    assert_string_equal(field(&m, 9, f, sizeof f), "\\N");
    done(&m);
}

static void test_media(void **state)
{
    (void)state;
    mapped_t m;
    map("{\"id\": 9, \"type\": \"message\", \"file\": \"(File not included. x)\", \"media_type\": "
        "\"voice_message\", \"file_size\": \"99\", \"duration_seconds\": 3, \"thumbnail\": null, "
        "\"mime_type\": \"audio/ogg\"}",
        42, 0, &m);
    assert_int_equal(m.rc, 0);
    assert_string_equal(m.media.data,
                        "9\tvoice\t(File not included. x)\taudio/ogg\t99\t\\N\t\\N\t3\t"
                        "\\N\tunavailable\t{\"media_type\": \"voice_message\"}\n");
    char f[64];
    assert_string_equal(field(&m, 11, f, sizeof f), "voice");
    done(&m);
    map("{\"id\": 9, \"type\": \"message\", \"photo\": \"p.jpg\", \"width\": \"640x\"}", 42, 0, &m);
    assert_int_equal(m.rc, UV_EINVAL);
    assert_non_null(strstr(m.err, "\"width\" is not an integer"));
    assert_int_equal(m.rows.len, 1); /* nothing but the test's terminator */
    done(&m);
}

static void test_ids(void **state)
{
    (void)state;
    mapped_t m;
    map("{\"from_id\": \"user3\", \"from\": \"No Id\", \"text\": \"x\"}", 42, 0, &m);
    assert_int_equal(m.rc, 0);
    assert_int_equal(m.kind, TG_MAP_NO_ID);
    char f[64];
    assert_string_equal(field(&m, 1, f, sizeof f), "\\N");
    assert_string_equal(field(&m, 2, f, sizeof f), "3");
    assert_string_equal(field(&m, 3, f, sizeof f), "No Id");
    done(&m);
    map("{\"id\": 5.0, \"text\": \"x\"}", 42, 0, &m);
    assert_int_equal(m.kind, TG_MAP_SKIPPED);
    assert_int_equal(m.rows.len, 1);
    done(&m);
    map("{\"id\": \"12\"}", 0, 0, &m);
    assert_int_equal(m.kind, TG_MAP_ROW);
    assert_int_equal(m.id, 12);
    assert_string_equal(field(&m, 0, f, sizeof f), "\\N"); /* the chat is not known yet */
    done(&m);
}

/* One bad message is left out or repaired, always named: an unreadable
 * date, an id not above 0 (left out); a size below 0, no date at all
 * (stored as NULL, as the epoch). On the mapping before, all four were
 * stored without a word. */
static void test_bad_values_named(void **state)
{
    (void)state;
    mapped_t m;
    char f[128];
    map("{\"id\": 3, \"date\": \"x\", \"text\": \"t\"}", 42, 0, &m);
    assert_int_equal(m.rc, UV_EINVAL);
    assert_string_equal(m.err, "message 3: \"date\" is not a date (x)");
    assert_int_equal(m.rows.len, 1);
    done(&m);
    map("{\"id\": 3, \"date_unixtime\": \"soon\"}", 42, 0, &m);
    assert_int_equal(m.rc, UV_EINVAL);
    assert_string_equal(m.err, "message 3: \"date_unixtime\" is not a date (soon)");
    done(&m);
    map("{\"id\": 0, \"date_unixtime\": \"1\"}", 42, 0, &m);
    assert_int_equal(m.rc, UV_EINVAL);
    assert_string_equal(m.err, "message 0: \"id\" is not a message id (ids are above 0)");
    done(&m);
    map("{\"id\": -5, \"date_unixtime\": \"1\"}", 42, 0, &m);
    assert_int_equal(m.rc, UV_EINVAL);
    assert_string_equal(m.err, "message -5: \"id\" is not a message id (ids are above 0)");
    done(&m);
    map("{\"id\": 8, \"date_unixtime\": \"1\", \"photo\": \"p.jpg\", \"photo_file_size\": -1, "
        "\"width\": -2, \"height\": 5}",
        42, 0, &m);
    assert_int_equal(m.rc, 0);
    assert_string_equal(m.media.data, "8\tphoto\tp.jpg\t\\N\t\\N\t\\N\t5\t\\N\t\\N\tremote\t\\N\n");
    assert_string_equal(m.err,
                        "message 8: \"photo_file_size\" -1 is not a size; stored without it");
    done(&m);
    map("{\"id\": 9, \"text\": \"undated\"}", 42, 0, &m);
    assert_int_equal(m.rc, 0);
    assert_string_equal(field(&m, 4, f, sizeof f), "1970-01-01 00:00:00+00");
    assert_string_equal(m.err, "message 9: \"date\" is missing; stored as 1970-01-01 (the epoch)");
    done(&m);
    map("{\"id\": 10, \"date_unixtime\": \"1\"}", 42, 0, &m);
    assert_int_equal(m.rc, 0);
    assert_string_equal(m.err, "");
    done(&m);
}

static void test_chat_id(void **state)
{
    (void)state;
    json_error_t je;
    int64_t id;
    json_t *h = json_loads("{\"type\": \"private_supergroup\", \"id\": 5}", 0, &je);
    assert_true(tg_map_chat_id(h, &id));
    assert_int_equal(id, -1000000000005);
    json_decref(h);
    h = json_loads("{\"type\": \"private_group\", \"id\": \"7\"}", 0, &je);
    assert_true(tg_map_chat_id(h, &id));
    assert_int_equal(id, -7);
    json_decref(h);
    h = json_loads("{\"id\": 8}", 0, &je);
    assert_true(tg_map_chat_id(h, &id));
    assert_int_equal(id, 8);
    json_decref(h);
    h = json_loads("{\"name\": \"no id yet\"}", 0, &je);
    assert_false(tg_map_chat_id(h, &id));
    json_decref(h);
    assert_int_equal(tg_map_tz_seconds("-05:30"), -(5 * 3600 + 30 * 60));
    assert_int_equal(tg_map_tz_seconds("+03:00"), 3 * 3600);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_message),
        cmocka_unit_test(test_text_array),
        cmocka_unit_test(test_plain_entities),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_service_and_peers),
        cmocka_unit_test(test_media),
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_bad_values_named),
        cmocka_unit_test(test_chat_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
