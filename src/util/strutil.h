/* strutil: small string and number helpers shared by every layer: bounded
 * copies, trimming, strict integer parsing. No allocation unless stated. */
#ifndef PARLEY_UTIL_STRUTIL_H
#define PARLEY_UTIL_STRUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copies src into dst (capacity cap > 0), always NUL-terminated. Returns
 * false when src did not fit (dst then holds a truncated copy). */
__attribute__((warn_unused_result)) bool str_copy(char *dst, size_t cap, const char *src);

/* Formats into dst like snprintf; false when the result was truncated. */
__attribute__((warn_unused_result, format(printf, 3, 4))) bool str_fmt(char *dst, size_t cap,
                                                                       const char *fmt, ...);

/* Trims ASCII whitespace in place; returns the start of the trimmed text. */
char *str_trim(char *s);

/* Parses a whole string as a base-10 integer in [min, max]. Leading or
 * trailing garbage, overflow and empty strings are refused. */
__attribute__((warn_unused_result)) bool str_parse_i64(const char *s, int64_t min, int64_t max,
                                                       int64_t *out);

/* Length (1 to 4) of the valid UTF-8 sequence s[0..n) starts with, or 0
 * when it starts with none: RFC 3629, so no overlong form, no surrogate,
 * nothing past U+10FFFF (what jansson and PostgreSQL take). A NUL counts
 * as a sequence of 1. */
size_t str_utf8_seq(const unsigned char *s, size_t n);

/* Drops a UTF-8 sequence cut short at the end of s (what a count of bytes,
 * such as snprintf's, may leave of valid text), so that s stays UTF-8. */
void str_utf8_trim_end(char *s);

/* Replaces, in place, every byte of s where no valid UTF-8 sequence starts
 * with '?': text cut by bytes in the middle (a "%.100s" of a client's
 * name) becomes valid UTF-8 to send. */
void str_utf8_repair(char *s);

/* Writes the n bytes of in as 2n lowercase hex digits and a NUL into out
 * (room for 2n + 1). One table look-up a digit: a digest's 32 snprintf
 * ("%02x") cost 22,000 instructions a call. */
void str_hex(const unsigned char *in, size_t n, char *out);

/* true/false, yes/no, on/off, 1/0 (case-insensitive). */
__attribute__((warn_unused_result)) bool str_parse_bool(const char *s, bool *out);

#endif
