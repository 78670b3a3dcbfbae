/* agent_events: the events of agents' session transcripts (JSON Lines)
 * from a file's untrusted bytes: pure parsing, no I/O, split out of
 * agent_import.c so that the fuzz target transcripts drives it alone. */
#ifndef PARLEY_IMPORT_AGENT_EVENTS_H
#define PARLEY_IMPORT_AGENT_EVENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The events of a piece of a transcript, from the file's untrusted bytes
 * (pure; the fuzz target transcripts drives it). buf[0..len) holds whole
 * lines (the importer reads up to the last newline; a last line without
 * one counts too). Each line that is not blank must be one JSON object,
 * else it is counted in *malformed, reported with path and its number,
 * and skipped (a NUL byte makes a line malformed). Lines are numbered
 * from first_line + 1. Returns the JSON text [{"line": N, "event":
 * {...}}, ...] (the caller frees it) with *lines the number of lines, or
 * NULL when out of memory. */
char *agent_events_parse(const char *buf, size_t len, const char *path, uint64_t first_line,
                         uint64_t *lines, uint64_t *malformed);
/* The next line of a piece of JSON Lines, at *p (up to end): *p moves past
 * it and its newline, *line and *lines count it. Returns its JSON object
 * (a new reference), or NULL for a blank line or for one that is not a
 * JSON object (then counted in *malformed and warned, naming path and the
 * line's number). The line walk both transcript formats share
 * (agent_events, codex_events). */
json_t *agent_events__line(const char **p, const char *end, const char *path, uint64_t *line,
                           uint64_t *lines, uint64_t *malformed);

/* Whether s[0..n) is a time PostgreSQL's timestamptz surely reads: ISO
 * 8601, YYYY-MM-DD[(T| )hh:mm[:ss[.f{1,9}]]][Z|(+|-)hh[[:]mm]], a real
 * calendar date of years 1 to 9999. An event whose "timestamp" is present
 * and not null must have one (else the line is malformed). */
bool agent_events_time_ok(const char *s, size_t n);

#endif
