/* Tests for archive/regex_guard: back-references are found wherever the
 * regex engine could read one (after groups, named, several digits, and
 * inside what looks like a bracket expression: options can make it none,
 * (?x)'s comments and (?b)'s brackets, which the scan once skipped), and
 * not where no escape is one (escaped backslashes, other escapes,
 * literal regexes). */
#include <stdlib.h>
#include <string.h>

#include "archive/regex_guard.h"
#include "testutil.h"

static void test_backrefs_found(void **state)
{
    (void)state;
    static const struct {
        const char *rx;
        size_t at;
    } refused[] = {
        {"(.*)(.*)(.*)\\3\\2\\1x", 12}, /* the finding's */
        {"(a)\\1", 3},
        {"(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\\10", 30},
        {"(?<n>a)\\k<n>", 7},
        {"***:(a)\\1", 7},
        {"(?i)(a)\\1", 7},
        {"[a]\\1", 3},
        {"[]](x)\\1", 6},
        {"[[:alpha:]](x)\\1", 14},
        {"\\\\\\1", 2}, /* an escaped backslash, then \1 */
        {"(a)|\\9", 4},
        /* The review's bypasses: a '[' in an expanded-mode comment, and a
         * BRE bracket whose backslash is a character. */
        {"(?x)#[\n(ab)\\1", 11},
        {"(?x)(ab) # [\n\\1", 13},
        {"(?b)[\\]\\(a\\)\\1", 12},
        {"[\\1]", 1}, /* inside brackets: an error in ARE; refused alike */
        {"[]\\1]", 2},
        {"[^]\\2]x", 3},
        {"[[:digit:]\\3]", 10},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        size_t at = 999;
        assert_true(archive_regex_has_backref(refused[i].rx, &at));
        assert_int_equal(at, refused[i].at);
    }
}

static void test_others_pass(void **state)
{
    (void)state;
    static const char *const passed[] = {
        "",
        "hello",
        "^foo\\d+bar$",
        "\\m\\M\\y\\Y\\w\\s\\D",
        "\\\\1", /* a backslash, then a 1 */
        "[[.hyphen.]]\\.",
        "***=(a)\\1", /* literal */
        "(?q)(a)\\1", /* literal */
        "(a+)+b",     /* slow, but no back-reference: the time limit bounds it */
        "\\x31\\u0031",
        "trailing\\",
    };
    for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++) {
        size_t at = 999;
        if (archive_regex_has_backref(passed[i], &at))
            fail_msg("refused %s at %zu", passed[i], at);
    }
    assert_false(archive_regex_has_backref(NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backrefs_found),
        cmocka_unit_test(test_others_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
