/* Fuzz target: the Telegram export reader (yajl callbacks) over arbitrary
 * bytes given as a file (memfd): it must end with events, the end, or an
 * error saying where, never crash or loop. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "archive/tg_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("export", 0);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return 0;
    }
    tg_reader_t *r = tg_reader_new(fd, 0);
    if (r == NULL) {
        close(fd);
        return 0;
    }
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
    close(fd);
    return 0;
}
