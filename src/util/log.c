/* log: leveled, timestamped log lines on stderr (see log.h). Each line is
 * formatted into one bounded buffer and written with a single write(2), so
 * lines from the loop and from thread-pool work never interleave. */
#include "util/log.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* Longest log line; longer messages are truncated with "...". */
#define LOG_LINE_MAX 4096

static log_level_t log_level = LOG_INFO;

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR", "OFF"};

void log_set_level(log_level_t level)
{
    log_level = level;
}

log_level_t log_get_level(void)
{
    return log_level;
}

const char *log_level_name(log_level_t level)
{
    return level <= LOG_OFF ? level_names[level] : "?";
}

bool log_level_parse(const char *s, log_level_t *out)
{
    static const struct {
        const char *name;
        log_level_t level;
    } names[] = {{"debug", LOG_DEBUG},  {"info", LOG_INFO},   {"warn", LOG_WARN},
                 {"warning", LOG_WARN}, {"error", LOG_ERROR}, {"off", LOG_OFF}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].level;
            return true;
        }
    }
    return false;
}

void log_vwrite(log_level_t level, const char *tag, const char *fmt, va_list ap)
{
    if (level < log_level || level >= LOG_OFF)
        return;
    char line[LOG_LINE_MAX];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s [%s] ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, level_names[level], tag ? tag : "-");
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2) {
        len = sizeof line - 2;
        memcpy(line + len - 3, "...", 3);
    }
    while (len > (size_t)n && line[len - 1] == '\n')
        len--;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void log_write(log_level_t level, const char *tag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(level, tag, fmt, ap);
    va_end(ap);
}
