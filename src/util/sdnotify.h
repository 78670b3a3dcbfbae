/* sdnotify: telling systemd the daemon's state through libsystemd's
 * sd_notify (the unit's Type=notify, packaging/parleyd.service): READY=1
 * once serve is ready (every endpoint listens), STOPPING=1 when the stop
 * begins, and WATCHDOG=1 from a timer on the loop at half the interval
 * systemd asks for (WatchdogSec, handed over as $WATCHDOG_USEC), so a
 * loop that no longer turns gets the daemon restarted. Every call is a
 * no-op when $NOTIFY_SOCKET is unset (not started by systemd) or when
 * $SYSTEMD_EXEC_PID names another process (parleyd started by a service's
 * process, which speaks for its unit), and the watchdog timer runs only
 * when $WATCHDOG_USEC is set for this process ($WATCHDOG_PID). */
#ifndef PARLEY_UTIL_SDNOTIFY_H
#define PARLEY_UTIL_SDNOTIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

/* The watchdog's pings: at most once every SDNOTIFY_WATCHDOG_MIN_MS, even
 * when systemd asks for a shorter interval. */
#define SDNOTIFY_WATCHDOG_MIN_MS 10

typedef struct {
    uv_timer_t timer;
    bool armed;           /* the timer is initialised (close it) */
    uint64_t interval_ms; /* between pings: half of $WATCHDOG_USEC */
} sdnotify_watchdog_t;

/* READY=1 with STATUS=status (may be NULL). Returns 0 (also when not run
 * by systemd), or a negative errno when the notification could not be
 * sent. */
int sdnotify_ready(const char *status);
/* STOPPING=1: the daemon has begun to stop. Returns as sdnotify_ready. */
int sdnotify_stopping(void);

/* Starts pinging WATCHDOG=1 on loop when systemd asked for a watchdog
 * ($WATCHDOG_USEC, for this pid when $WATCHDOG_PID is set); w->armed says
 * whether it did. Returns 0, or a negative code (a bad $WATCHDOG_USEC, a
 * timer that would not start). */
int sdnotify_watchdog_start(sdnotify_watchdog_t *w, uv_loop_t *loop);
/* Stops the pings and closes the timer (cb as uv_close's, may be NULL;
 * not called when the watchdog was not armed). */
void sdnotify_watchdog_close(sdnotify_watchdog_t *w, uv_close_cb cb);

#endif
