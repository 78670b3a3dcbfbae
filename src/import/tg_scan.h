/* tg_scan: the bytes of a Telegram export on their way to tg_reader's
 * parser (yajl): a buffer of what was read of the file and not yet
 * parsed, and a scanner running ahead of the parser over it. The scanner
 * knows where each token (a string, a number, a literal) ends and how deep
 * the containers are, so that no piece given to the parser ends inside a
 * token (yajl would read such a token again from its start with every
 * piece: time quadratic in its length). A long token is given whole, once,
 * bounded by the room the reader allows (a message's cap, checked before
 * every piece). It also skips a value's bytes unparsed, up to its closing
 * bracket (a message over the cap).
 *
 * Runs on the thread pool with its reader; it touches nothing but its
 * file and its own memory. */
#ifndef PARLEY_IMPORT_TG_SCAN_H
#define PARLEY_IMPORT_TG_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tg_scan_s {
    unsigned char *buf; /* bytes read and not yet parsed (from pos) */
    size_t cap;         /* its size: at most a token (the cap) and a read */
    size_t chunk;       /* bytes read at a time */
    size_t len;         /* bytes in buf */
    size_t pos;         /* bytes of buf already parsed */
    uint64_t offset;    /* file offset of buf[pos] */
    bool eof;           /* the file's end was read */
    size_t scan;        /* bytes of buf scanned */
    int lex;            /* the scanner's state at scan (tg_scan.c) */
    int lex_depth;      /* containers open at scan */
} tg_scan_t;

/* What tg_scan_piece found. */
enum {
    TG_SCAN_OK = 0, /* *end set */
    TG_SCAN_MORE,   /* the token at pos goes on past the bytes read */
    TG_SCAN_LONG,   /* the token at pos is longer than the room */
};

/* A buffer for reads of chunk bytes (> 0). 0, or UV_ENOMEM. */
int tg_scan_init(tg_scan_t *s, size_t chunk);
void tg_scan_free(tg_scan_t *s);

/* Reads the next chunk of fd after the bytes not yet parsed (moved to the
 * front). 0 (s->eof set at the file's end), or a negative code. */
int tg_scan_read(tg_scan_t *s, int fd);

/* The file offset of buf[i]. */
uint64_t tg_scan_at(const tg_scan_t *s, size_t i);

/* Where the next piece to parse ends (*end), from pos: the last token
 * boundary within piece bytes and within room, or else the end of the
 * token that begins at pos when it ends within room bytes; at the file's
 * end, the bytes left (a token cut by it is the parser's to report). */
int tg_scan_piece(tg_scan_t *s, size_t piece, uint64_t room, size_t *end);

/* The parser took the bytes up to end: pos and offset move on. */
void tg_scan_parsed(tg_scan_t *s, size_t end);

/* Skips bytes, unparsed, until the containers open fall to depth: true
 * once past that closing bracket (pos just after it), false when the bytes
 * read end first (the next read goes on). */
bool tg_scan_skip(tg_scan_t *s, int depth);

#endif
