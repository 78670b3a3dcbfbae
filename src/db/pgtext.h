/* pgtext: PostgreSQL's text formats, written in C byte for byte as the
 * server writes them, for loading rows with COPY without a round of
 * conversion in SQL: a COPY text-format field, jsonb's text of a JSON
 * value (what ->> and ::text give: keys ordered by length then bytes,
 * ", " and ": ", numbers as numeric prints them), and a timestamptz in
 * UTC. Pure functions over util/buf.h, tested against the server by
 * tests/unit/test_pgtext.c. */
#ifndef PARLEY_DB_PGTEXT_H
#define PARLEY_DB_PGTEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

#define PGTEXT_USECS      INT64_C(1000000)
#define PGTEXT_EPOCH_UNIX INT64_C(946684800) /* 2000-01-01, PostgreSQL's epoch, in Unix seconds */
/* The end of timestamptz's range: in Unix seconds, 86400 * (TIMESTAMP_END_JULIAN -
 * UNIX_EPOCH_JDATE), and in microseconds since PostgreSQL's epoch. */
#define PGTEXT_TS_END_UNIX_SECS 9224318016000.0
#define PGTEXT_TS_END_USECS     INT64_C(9223371331200000000)

/* Appends s[0..n) as a COPY text-format field (backslash, tab, newline and
 * carriage return escaped). Returns 0 or a buf_t error. */
int pgtext_copy_escape(buf_t *b, const char *s, size_t n);

/* Appends jsonb's text of v; strip_nulls leaves out object fields whose
 * value is null at every level (jsonb_strip_nulls). Returns 0, UV_ENOMEM
 * or a buf_t error. */
int pgtext_jsonb(buf_t *b, const json_t *v, bool strip_nulls);

/* Days from 1970-01-01 of a proleptic Gregorian date (y may be <= 0). */
int64_t pgtext_days_from_civil(int64_t y, int m, int d);

/* Appends a timestamptz (microseconds since 2000-01-01 UTC, as PostgreSQL
 * keeps it) as its COPY text in UTC ("2024-05-01 12:00:00.5+00",
 * "... BC"). Returns 0 or a buf_t error. */
int pgtext_timestamptz(buf_t *b, int64_t us);

#endif
