/* sdnotify: READY, STOPPING and the watchdog's pings to systemd (see
 * sdnotify.h). libsystemd's sd_notify does nothing when $NOTIFY_SOCKET is
 * unset, and sd_watchdog_enabled reads $WATCHDOG_USEC and $WATCHDOG_PID. */
#include "util/sdnotify.h"

#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "util/log.h"

#define SDNOTIFY_TAG "systemd"

/* systemd (since 248) names the process it started in $SYSTEMD_EXEC_PID:
 * a parleyd started by that process (an MCP client run as a service that
 * starts parleyd serve --stdio) inherits $NOTIFY_SOCKET but must not speak
 * for the client's unit. */
static bool is_main_process(void)
{
    const char *pid = getenv("SYSTEMD_EXEC_PID");
    return pid == NULL || pid[0] == '\0' || atol(pid) == (long)getpid();
}

int sdnotify_ready(const char *status)
{
    if (!is_main_process())
        return 0;
    int rc = status ? sd_notifyf(0, "READY=1\nSTATUS=%s", status) : sd_notify(0, "READY=1");
    return rc < 0 ? rc : 0;
}

int sdnotify_stopping(void)
{
    if (!is_main_process())
        return 0;
    int rc = sd_notify(0, "STOPPING=1\nSTATUS=stopping");
    return rc < 0 ? rc : 0;
}

static void watchdog_ping(uv_timer_t *t)
{
    (void)t;
    int rc = sd_notify(0, "WATCHDOG=1");
    if (rc < 0)
        log_warn(SDNOTIFY_TAG, "watchdog ping: %s", uv_strerror(rc));
}

int sdnotify_watchdog_start(sdnotify_watchdog_t *w, uv_loop_t *loop)
{
    w->armed = false;
    w->interval_ms = 0;
    uint64_t usec = 0;
    /* 0 (not wanted), > 0 (wanted), < 0 (a malformed variable). */
    int rc = sd_watchdog_enabled(0, &usec);
    if (rc <= 0)
        return rc;
    w->interval_ms = usec / 2000;
    if (w->interval_ms < SDNOTIFY_WATCHDOG_MIN_MS)
        w->interval_ms = SDNOTIFY_WATCHDOG_MIN_MS;
    if ((rc = uv_timer_init(loop, &w->timer)) != 0)
        return rc;
    w->armed = true;
    /* The first ping at once: the interval runs from the start. */
    if ((rc = uv_timer_start(&w->timer, watchdog_ping, 0, w->interval_ms)) != 0)
        return rc;
    /* The loop may end while only this timer is left: it must not keep
     * the loop alive. */
    uv_unref((uv_handle_t *)&w->timer);
    log_info(SDNOTIFY_TAG, "watchdog: a ping every %llu ms", (unsigned long long)w->interval_ms);
    return 0;
}

void sdnotify_watchdog_close(sdnotify_watchdog_t *w, uv_close_cb cb)
{
    if (!w->armed)
        return;
    w->armed = false;
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, cb);
}
