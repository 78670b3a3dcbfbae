/* Tests for import/tg_reader: what a hostile export costs and becomes.
 * A message over TG_READER_MESSAGE_MAX (a 24 MiB string, one made of many
 * small values, one whose size is only known past the cap) is decided
 * while it is read, left out and named, and the messages after it are
 * read (in a single-chat and in a whole-account export, with chunk ends
 * anywhere); a message of exactly the cap is kept; a NUL (\u0000) is
 * stored as U+FFFD and the message named; a value outside a message over
 * the cap fails the read. On the reader before, the 24 MiB string took
 * over a minute and failed the whole read. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "import/tg_reader.h"

typedef struct {
    int rc;           /* the last step's: 1 at the end, or an error */
    char ids[256];    /* ids of the rows read, "1,3," */
    char texts[4096]; /* their text fields, "|"-separated */
    uint64_t skipped, repaired, notes;
    char note[4][TG_READER_NOTE_LEN];
    char error[600];
} read_t;

/* Reads the export in data (n bytes) chunk bytes at a time. */
static void read_export(const char *data, size_t n, size_t chunk, read_t *out)
{
    memset(out, 0, sizeof *out);
    int fd = memfd_create("export", MFD_CLOEXEC);
    assert_true(fd >= 0);
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fd, data + off, n - off);
        assert_true(w > 0);
        off += (size_t)w;
    }
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    tg_reader_t *r = tg_reader_new_chunk(fd, 0, chunk);
    assert_non_null(r);
    static tg_event_t events[TG_READER_MAX_EVENTS];
    for (;;) {
        int nev = 0;
        out->rc = tg_reader_step(r, events, &nev);
        for (int i = 0; i < nev; i++) {
            if (events[i].kind != TG_EV_ROWS)
                continue;
            /* COPY rows: chat_id, id, sender_id, sender_name, date,
             * edit_date, text, ... */
            char *rows = strndup(events[i].rows.data, events[i].rows.len);
            char *save = NULL;
            for (char *line = strtok_r(rows, "\n", &save); line;
                 line = strtok_r(NULL, "\n", &save)) {
                char *f[8] = {0};
                char *p = line;
                for (int k = 0; k < 8 && p; k++) {
                    f[k] = p;
                    p = strchr(p, '\t');
                    if (p)
                        *p++ = '\0';
                }
                strncat(out->ids, f[1], sizeof out->ids - strlen(out->ids) - 2);
                strcat(out->ids, ",");
                if (f[6] && strlen(f[6]) < 100) {
                    strncat(out->texts, f[6], sizeof out->texts - strlen(out->texts) - 2);
                    strcat(out->texts, "|");
                }
            }
            free(rows);
        }
        tg_events_free(events, nev);
        if (out->rc != 0)
            break;
    }
    out->skipped = tg_reader_skipped(r);
    out->repaired = tg_reader_repaired(r);
    out->notes = tg_reader_notes(r);
    for (uint64_t i = 0; i < out->notes && i < 4; i++)
        snprintf(out->note[i], sizeof out->note[i], "%s", tg_reader_note(r, i));
    if (out->rc < 0)
        snprintf(out->error, sizeof out->error, "%s", tg_reader_error(r));
    tg_reader_free(r);
    close(fd);
}

static void append(buf_t *b, const char *s)
{
    assert_int_equal(buf_append(b, s, strlen(s)), 0);
}

/* n bytes of c. */
static void fill(buf_t *b, char c, size_t n)
{
    char *p = malloc(n);
    assert_non_null(p);
    memset(p, c, n);
    assert_int_equal(buf_append(b, p, n), 0);
    free(p);
}

static void message(buf_t *b, int id, const char *text)
{
    assert_int_equal(buf_printf(b,
                                "{\"id\":%d,\"type\":\"message\",\"date\":\"2025-01-01T00:00:00\","
                                "\"date_unixtime\":\"%d\",\"from\":\"A\",\"from_id\":\"user1\","
                                "\"text\":\"%s\"}",
                                id, 1735689600 + id, text),
                     0);
}

/* A string of n bytes of c (with "}]" and an escaped quote inside, which
 * the skip must not take for the message's end). */
static void long_string(buf_t *b, size_t n, char c)
{
    append(b, "\"}]\\\"{[");
    fill(b, c, n);
    append(b, "\"");
}

static const size_t chunks[] = {4096, TG_READER_CHUNK};

static void test_long_string_skipped_and_named(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
        buf_t b;
        buf_init(&b, 64u << 20);
        append(&b, "{\"name\":\"Big\",\"type\":\"personal_chat\",\"id\":77,\"messages\":[");
        message(&b, 1, "first");
        append(&b, ",{\"id\":2,\"type\":\"message\",\"date_unixtime\":\"1735689602\",\"text\":");
        long_string(&b, 24u << 20, 'x');
        append(&b, ",\"entities\":[{\"a\":[1,2,\"]}\"]}]},");
        message(&b, 3, "third");
        append(&b, "]}");
        read_t r;
        read_export(b.data, b.len, chunks[c], &r);
        assert_int_equal(r.rc, 1);
        assert_string_equal(r.ids, "1,3,");
        assert_string_equal(r.texts, "first|third|");
        assert_int_equal(r.skipped, 1);
        assert_int_equal(r.notes, 1);
        assert_non_null(strstr(r.note[0], "message 2 at byte "));
        assert_non_null(strstr(r.note[0], "larger than 16 MiB; the message was left out"));
        buf_free(&b);
    }
}

/* Many small values (no long token), the id after them: named by the
 * message before it. */
static void test_many_values_skipped(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 64u << 20);
    append(&b, "{\"name\":\"Many\",\"type\":\"personal_chat\",\"id\":78,\"messages\":[");
    message(&b, 1, "first");
    append(&b, ",{\"text\":[");
    for (int i = 0; i < 1500000; i++)
        append(&b,
               i ? ",{\"type\":\"plain\",\"text\":\"z\"}" : "{\"type\":\"plain\",\"text\":\"z\"}");
    append(&b, "],\"id\":2},");
    message(&b, 3, "third");
    append(&b, "]}");
    assert_true(b.len > (24u << 20));
    read_t r;
    read_export(b.data, b.len, TG_READER_CHUNK, &r);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.ids, "1,3,");
    assert_int_equal(r.skipped, 1);
    assert_non_null(strstr(r.note[0], "a message after id 1 at byte "));
    buf_free(&b);
}

/* A message of exactly the cap is kept; one byte more is left out. */
static void test_cap_exact(void **state)
{
    (void)state;
    for (int over = 0; over <= 1; over++) {
        buf_t b;
        buf_init(&b, 64u << 20);
        append(&b, "{\"name\":\"Cap\",\"type\":\"personal_chat\",\"id\":79,\"messages\":[");
        size_t start = b.len;
        append(&b, "{\"id\":5,\"type\":\"message\",\"date_unixtime\":\"1735689605\",\"text\":\"");
        size_t n = TG_READER_MESSAGE_MAX - (b.len - start) - 2 + (size_t)over;
        fill(&b, 'y', n);
        append(&b, "\"}");
        assert_int_equal(b.len - start, TG_READER_MESSAGE_MAX + (size_t)over);
        append(&b, ",");
        message(&b, 6, "after");
        append(&b, "]}");
        read_t r;
        read_export(b.data, b.len, 4096, &r);
        assert_int_equal(r.rc, 1);
        assert_string_equal(r.ids, over ? "6," : "5,6,");
        assert_int_equal(r.skipped, (uint64_t)over);
        buf_free(&b);
    }
}

/* In a whole-account export: the chats after it are read as well. */
static void test_account_export(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 64u << 20);
    append(&b, "{\"about\":\"x\",\"chats\":{\"about\":\"y\",\"list\":[{\"name\":\"One\",\"type\":"
               "\"personal_chat\",\"id\":80,\"messages\":[");
    message(&b, 1, "one");
    append(&b, ",{\"id\":2,\"text\":");
    long_string(&b, 17u << 20, 'q');
    append(&b, "},");
    message(&b, 3, "three");
    append(&b, "]},{\"name\":\"Two\",\"type\":\"personal_chat\",\"id\":81,\"messages\":[");
    message(&b, 4, "four");
    append(&b, "]}]}}");
    read_t r;
    read_export(b.data, b.len, 4096, &r);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.ids, "1,3,4,");
    assert_int_equal(r.skipped, 1);
    buf_free(&b);
}

/* A chat's name over the cap fails the read, saying so (not a message
 * that could be left out). */
static void test_long_value_outside_message(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 64u << 20);
    append(&b, "{\"name\":");
    long_string(&b, 17u << 20, 'n');
    append(&b, ",\"type\":\"personal_chat\",\"id\":82,\"messages\":[]}");
    read_t r;
    read_export(b.data, b.len, TG_READER_CHUNK, &r);
    assert_true(r.rc < 0);
    assert_non_null(strstr(r.error, "a value longer than 16 MiB (not in a message) at byte 8"));
    buf_free(&b);
}

/* A NUL is stored as U+FFFD, the message named; small chunks put chunk
 * ends everywhere. */
static void test_nul_repaired(void **state)
{
    (void)state;
    static const size_t small[] = {1, 7, 4096};
    for (size_t c = 0; c < sizeof small / sizeof *small; c++) {
        buf_t b;
        buf_init(&b, 1 << 20);
        append(&b, "{\"name\":\"Nul\",\"type\":\"personal_chat\",\"id\":83,\"messages\":[");
        message(&b, 1, "a\\u0000b");
        append(&b, ",");
        message(&b, 2, "fine");
        append(&b, "]}");
        read_t r;
        read_export(b.data, b.len, small[c], &r);
        assert_int_equal(r.rc, 1);
        assert_string_equal(r.ids, "1,2,");
        assert_string_equal(r.texts, "a\xEF\xBF\xBD"
                                     "b|fine|");
        assert_int_equal(r.repaired, 1);
        assert_int_equal(r.skipped, 0);
        assert_non_null(strstr(r.note[0], "message 1: \"text\" held a NUL character (\\u0000) at "
                                          "byte 57; stored as U+FFFD"));
        buf_free(&b);
    }
}

/* Malformed input inside a message still fails as malformed; a message
 * left unclosed at the end is truncated JSON. */
static void test_errors_still_errors(void **state)
{
    (void)state;
    read_t r;
    const char *bad = "{\"name\":\"Bad\",\"id\":1,\"messages\":[{\"id\":1,\"text\":tru}]}";
    read_export(bad, strlen(bad), 4096, &r);
    assert_true(r.rc < 0);
    assert_non_null(strstr(r.error, "malformed JSON"));
    buf_t b;
    buf_init(&b, 64u << 20);
    append(&b, "{\"name\":\"Cut\",\"id\":1,\"messages\":[{\"id\":1,\"text\":");
    long_string(&b, 17u << 20, 'c');
    read_export(b.data, b.len, TG_READER_CHUNK, &r);
    assert_true(r.rc < 0);
    assert_non_null(strstr(r.error, "truncated JSON"));
    assert_int_equal(r.skipped, 1);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_string_skipped_and_named),
        cmocka_unit_test(test_many_values_skipped),
        cmocka_unit_test(test_cap_exact),
        cmocka_unit_test(test_account_export),
        cmocka_unit_test(test_long_value_outside_message),
        cmocka_unit_test(test_nul_repaired),
        cmocka_unit_test(test_errors_still_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
