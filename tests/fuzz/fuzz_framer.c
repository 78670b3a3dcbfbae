/* Fuzz target: the newline framer, fed the input in pieces whose sizes the
 * input's first byte chooses, with a small limit so oversized messages,
 * pauses and resumes are all reached. Every delivered message must lie
 * within the limit and hold no newline. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/framer.h"

#define LIMIT 64

static int delivered;

static bool on_msg(framer_t *f, const char *msg, size_t len)
{
    (void)f;
    if (len > LIMIT || memchr(msg, '\n', len) != NULL)
        abort();
    return ++delivered % 5 != 0; /* pause now and then */
}

static void on_oversize(framer_t *f, size_t limit)
{
    (void)f;
    if (limit != LIMIT)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t step = (size_t)(data[0] % 17) + 1;
    framer_t f;
    framer_init(&f, LIMIT, on_msg, on_oversize, NULL);
    for (size_t off = 1; off < size; off += step) {
        size_t n = size - off < step ? size - off : step;
        if (framer_feed(&f, (const char *)data + off, n) != 0)
            break;
        if (f.paused)
            (void)framer_resume(&f);
    }
    while (f.paused && framer_resume(&f) == 0 && f.paused)
        ;
    (void)framer_finish(&f);
    framer_free(&f);
    return 0;
}
