/* Fuzz target: the Telegram export reader (yajl callbacks) over arbitrary
 * bytes given as a file (memfd): it must end with events, the end, or an
 * error saying where, never crash or loop. The first byte chooses how many
 * bytes the reader reads at a time (1 to 4096: chunk ends anywhere in the
 * input; a megabyte chunk per input made ASan's allocator the run's
 * bottleneck). */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "import/tg_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t chunk = data[0] == 0 ? 4096 : (size_t)data[0] * 16 - 15; /* 1, 17, ... 4065 */
    data++;
    size--;
    static int fd = -1; /* one memfd, emptied for each input */
    if (fd < 0 && (fd = memfd_create("export", MFD_CLOEXEC)) < 0)
        abort();
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size ||
        lseek(fd, 0, SEEK_SET) != 0)
        abort();
    tg_reader_t *r = tg_reader_new_chunk(fd, 0, chunk);
    if (r == NULL)
        return 0;
    static tg_event_t events[TG_READER_MAX_EVENTS];
    for (int steps = 0; steps < 100000; steps++) {
        int n = 0;
        int rc = tg_reader_step(r, events, &n);
        tg_events_free(events, n);
        if (rc != 0) {
            if (rc < 0 && tg_reader_error(r) == NULL)
                abort(); /* an error says what */
            break;
        }
    }
    tg_reader_free(r);
    return 0;
}
