/* log: leveled, timestamped log lines on stderr.
 *
 * stdout belongs to MCP over stdio, so every log line goes to stderr as
 * "2026-11-23T09:02:06.123Z LEVEL [tag] message". The tag names the
 * component or session ("main", "pg", "db", "s:42"). Secrets must never be
 * passed to these functions: callers mask them first. */
#ifndef PARLEY_UTIL_LOG_H
#define PARLEY_UTIL_LOG_H

#include <stdarg.h>
#include <stdbool.h>

typedef enum { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR, LOG_OFF } log_level_t;

void log_set_level(log_level_t level);
log_level_t log_get_level(void);

/* Parses "debug", "info", "warn"/"warning", "error", "off"; false if unknown. */
__attribute__((warn_unused_result)) bool log_level_parse(const char *s, log_level_t *out);
const char *log_level_name(log_level_t level);

__attribute__((format(printf, 3, 4))) void log_write(log_level_t level, const char *tag,
                                                     const char *fmt, ...);
void log_vwrite(log_level_t level, const char *tag, const char *fmt, va_list ap);

#define log_debug(tag, ...) log_write(LOG_DEBUG, tag, __VA_ARGS__)
#define log_info(tag, ...)  log_write(LOG_INFO, tag, __VA_ARGS__)
#define log_warn(tag, ...)  log_write(LOG_WARN, tag, __VA_ARGS__)
#define log_error(tag, ...) log_write(LOG_ERROR, tag, __VA_ARGS__)

#endif
