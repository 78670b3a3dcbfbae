/* Tests for util/heap: with the thresholds applied, memory freed at the
 * top of the heap stays (the break does not move back); the
 * environment's own setting wins. Each case forks: mallopt is for the
 * whole process. Built without the sanitizers (tests/CMakeLists.txt):
 * their allocator is not the C library's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/heap.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BLOCKS 64
#define BLOCK  (32 * 1024) /* 2 MiB in all: below the mmap threshold, above the default trim */

/* How far the break moves back when BLOCKS blocks at the heap's top are
 * freed (bytes). */
static long shrink_after_free(void)
{
    void *b[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        b[i] = malloc(BLOCK);
        memset(b[i], 1, BLOCK);
    }
    char *top = sbrk(0);
    for (int i = BLOCKS - 1; i >= 0; i--)
        free(b[i]);
    return (long)(top - (char *)sbrk(0));
}

/* Runs fn in a child; its exit status. */
static int in_child(int (*fn)(void))
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(fn());
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static int kept_when_tuned(void)
{
    if (!heap_tune())
        return 1;
    return shrink_after_free() == 0 ? 0 : 2;
}

static int trimmed_by_default(void)
{
    return shrink_after_free() > 0 ? 0 : 3;
}

static int environment_wins(void)
{
    setenv("MALLOC_TRIM_THRESHOLD_", "131072", 1);
    if (heap_tune())
        return 4;
    unsetenv("MALLOC_TRIM_THRESHOLD_");
    setenv("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=131072", 1);
    return heap_tune() ? 5 : 0;
}

static void test_keeps_the_top(void **state)
{
    (void)state;
    /* The default trims (else this test could not tell), heap_tune keeps. */
    assert_int_equal(in_child(trimmed_by_default), 0);
    assert_int_equal(in_child(kept_when_tuned), 0);
}

static void test_environment_wins(void **state)
{
    (void)state;
    assert_int_equal(in_child(environment_wins), 0);
}

/* The variables that set the thresholds: glibc reads them at start. */
static const char *const knobs[] = {"GLIBC_TUNABLES", "MALLOC_TRIM_THRESHOLD_",
                                    "MALLOC_MMAP_THRESHOLD_"};

int main(int argc, char **argv)
{
    (void)argc;
    /* Run with none of them set: the defaults are part of what is tested. */
    bool set = false;
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        if (getenv(knobs[i]) != NULL) {
            unsetenv(knobs[i]);
            set = true;
        }
    if (set) {
        execv("/proc/self/exe", argv);
        return 98;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keeps_the_top),
        cmocka_unit_test(test_environment_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
