/* progress: one progress reporter for every import source (see
 * progress.h): percentage, rate and time left from done/total, and what a
 * long wait is on, at least every interval. */
#include "import/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/log.h"

static void timer_closed(uv_handle_t *h)
{
    free(h);
}

static void timer_stop(import_progress_t *p)
{
    if (p->timer == NULL)
        return;
    uv_close((uv_handle_t *)p->timer, timer_closed);
    p->timer = NULL;
}

/* Writes the line of the figures of the last report; final: the closing
 * one, the only one to say 100 % (a line written with everything read and
 * work left says "all read"). The timer fires one interval after it. */
static void write_line(import_progress_t *p, uint64_t now, bool final)
{
    p->last_ms = now;
    double secs = (double)(now - p->started_ms) / 1000.0;
    if (secs < 0.001)
        secs = 0.001;
    uint64_t done = p->done, total = p->total;
    if (final || done > total)
        done = total ? total : done;
    double pct = total ? 100.0 * (double)done / (double)total : 100.0;
    bool all_read = !final && done >= total;
    if (!final && pct > 99.9)
        pct = 99.9;
    double rate = (double)p->messages / secs;
    double eta = done > 0 && total > done ? secs * (double)(total - done) / (double)done : 0;
    /* A wait shorter than half an interval is the import's pace, not a wait. */
    bool waiting =
        !final && p->waiting[0] != '\0' && now - p->waiting_since_ms >= p->interval_ms / 2;
    double waited = waiting ? (double)(now - p->waiting_since_ms) / 1000.0 : 0;
    char what[IMPORT_PROGRESS_WAIT_MAX + 64];
    if (waiting)
        snprintf(what, sizeof what, "waiting %.*f s on %s", waited < 10 ? 1 : 0, waited,
                 p->waiting);
    else if (final)
        snprintf(what, sizeof what, "%.0f msg/s, done in %.0f s", rate, secs);
    else
        snprintf(what, sizeof what, "%.0f msg/s, ETA %.0f s", rate, eta);
    if (p->tty) {
        char bar[31];
        int fill = (int)(pct * 30 / 100);
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[30] = '\0';
        fprintf(stderr, "\r%5.1f%% [%s] %llu messages, %s\033[K", pct, bar,
                (unsigned long long)p->messages, what);
        if (final)
            fputc('\n', stderr);
    } else if (all_read) {
        log_info(p->tag, "all read (%llu %s), %llu messages, %s", (unsigned long long)total,
                 p->unit, (unsigned long long)p->messages, what);
    } else {
        log_info(p->tag, "%.1f%% (%llu of %llu %s), %llu messages, %s", pct,
                 (unsigned long long)done, (unsigned long long)total, p->unit,
                 (unsigned long long)p->messages, what);
    }
    if (p->timer && !final)
        uv_timer_again(p->timer);
}

/* An interval passed without a line: the import waits (a long statement,
 * a slow read); the line again, with what it waits on. */
static void timer_fired(uv_timer_t *t)
{
    import_progress_t *p = t->data;
    if (p->ended)
        return;
    write_line(p, uv_now(p->loop), false);
}

void import_progress_init(import_progress_t *p, uv_loop_t *loop, const char *tag, const char *unit,
                          bool on, uint64_t interval_ms)
{
    *p = (import_progress_t){.loop = loop, .tag = tag, .unit = unit, .on = on};
    p->interval_ms = interval_ms ? interval_ms : IMPORT_PROGRESS_MS;
    p->tty = on && isatty(2) == 1;
    p->started_ms = p->last_ms = p->waiting_since_ms = uv_now(loop);
    if (!on)
        return;
    p->timer = malloc(sizeof *p->timer);
    if (p->timer == NULL || uv_timer_init(loop, p->timer) != 0) {
        free(p->timer); /* no timer: lines at the steps only */
        p->timer = NULL;
        return;
    }
    p->timer->data = p;
    uv_timer_start(p->timer, timer_fired, p->interval_ms, p->interval_ms);
}

void import_progress_report(import_progress_t *p, uint64_t done, uint64_t total, uint64_t messages,
                            bool final)
{
    if (!p->on || p->ended)
        return;
    p->done = done;
    p->total = total;
    p->messages = messages;
    uint64_t now = uv_now(p->loop);
    if (final) {
        p->ended = true;
        timer_stop(p);
        write_line(p, now, true);
        return;
    }
    if (total > 0 && done >= total)
        return; /* all read, work left: the timer's lines say on what */
    if (!p->tty && now - p->last_ms < p->interval_ms)
        return;
    write_line(p, now, false);
}

void import_progress_waiting(import_progress_t *p, const char *what)
{
    if (what == NULL)
        what = "";
    if (snprintf(p->waiting, sizeof p->waiting, "%s", what) >= (int)sizeof p->waiting)
        snprintf(p->waiting + sizeof p->waiting - 4, 4, "...");
    p->waiting_since_ms = uv_now(p->loop);
}

void import_progress_abort(import_progress_t *p)
{
    if (p->tty && !p->ended)
        fputc('\n', stderr);
    p->ended = true;
    timer_stop(p);
}
