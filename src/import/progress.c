/* progress: one progress reporter for every import source (see
 * progress.h): percentage, rate and time left from done/total. */
#include "import/progress.h"

#include <stdio.h>
#include <unistd.h>

#include "util/log.h"

void import_progress_init(import_progress_t *p, uv_loop_t *loop, const char *tag, const char *unit,
                          bool on)
{
    *p = (import_progress_t){.loop = loop, .tag = tag, .unit = unit, .on = on};
    p->tty = on && isatty(2) == 1;
    p->started_ms = p->last_ms = uv_now(loop);
}

void import_progress_report(import_progress_t *p, uint64_t done, uint64_t total, uint64_t messages,
                            bool final)
{
    if (!p->on || p->ended)
        return;
    uint64_t now = uv_now(p->loop);
    if (!final && !p->tty && now - p->last_ms < IMPORT_PROGRESS_MS)
        return;
    p->last_ms = now;
    p->ended = final;
    double secs = (double)(now - p->started_ms) / 1000.0;
    if (secs < 0.001)
        secs = 0.001;
    if (final || done > total)
        done = total ? total : done;
    double pct = total ? 100.0 * (double)done / (double)total : 100.0;
    double rate = (double)messages / secs;
    double eta = done > 0 && total > done ? secs * (double)(total - done) / (double)done : 0;
    if (p->tty) {
        char bar[31];
        int fill = (int)(pct * 30 / 100);
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r%5.1f%% [%s] %llu messages, %.0f msg/s, ETA %d:%02d ", pct, bar,
                (unsigned long long)messages, rate, (int)eta / 60, (int)eta % 60);
        if (final)
            fputc('\n', stderr);
    } else {
        log_info(p->tag, "%.1f%% (%llu of %llu %s), %llu messages, %.0f msg/s, ETA %.0f s", pct,
                 (unsigned long long)done, (unsigned long long)total, p->unit,
                 (unsigned long long)messages, rate, eta);
    }
}

void import_progress_abort(import_progress_t *p)
{
    if (p->tty && !p->ended)
        fputc('\n', stderr);
    p->ended = true;
}
