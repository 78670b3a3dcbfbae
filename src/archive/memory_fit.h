/* memory_fit: what bootstrap_memory answers, kept within a token budget —
 * one implementation for the memory toolset's tool and `parleyd
 * bootstrap`. Pure: JSON in (the memory source's answers), JSON or text
 * out; no I/O.
 *
 * The answer is built in three steps, in this order of precedence: the
 * latest continuation (its content cut when all of it does not fit), the
 * work before it (newest first, while it fits), the foundational era from
 * its start (while it fits). The budget counts the whole answer — its
 * compact JSON text, MEMORY_CHARS_PER_TOKEN characters a token — and
 * left_out says what was not included and how to page for it.
 * memory_fit_text renders such an answer as plain text for a person or a
 * session-start hook, within a number of characters, the continuation
 * first. */
#ifndef PARLEY_ARCHIVE_MEMORY_FIT_H
#define PARLEY_ARCHIVE_MEMORY_FIT_H

#include <jansson.h>
#include <stdbool.h>

/* Characters a token, as the budget counts the answer. */
#define MEMORY_CHARS_PER_TOKEN 4
/* Characters set aside for the answer's own keys, note and left_out
 * before messages are fitted (measured again at the end). */
#define MEMORY_BOOT_WRAPPER 900

typedef struct memory_fit_s {
    json_t *out; /* the answer being built */
    long budget; /* characters left for the parts */
    long limit;  /* characters in all */
} memory_fit_t;

/* Starts an answer of at most tokens tokens (> 0); project (or NULL) is
 * named in it. 0, or UV_ENOMEM. */
int memory_fit_init(memory_fit_t *f, long tokens, const char *project);
/* The latest continuation (an object with message_id and content), or
 * JSON null / NULL when there is none. */
void memory_fit_continuation(memory_fit_t *f, json_t *v);
/* The answer of messages_before ({messages, next_reference_id}), newest
 * first. */
void memory_fit_before(memory_fit_t *f, json_t *v);
/* The answer of era_summary ({era, messages, total} or {error}). */
void memory_fit_era(memory_fit_t *f, json_t *v);
/* The answer as compact JSON text (malloc'd; NULL: out of memory), at
 * most the limit whenever the wrapper alone fits: should it not fit after
 * all, messages go from the end (the era's last, then the oldest work)
 * until it does. Once, after the steps. */
char *memory_fit_json(memory_fit_t *f);
void memory_fit_free(memory_fit_t *f);

/* True when the answer holds nothing: no continuation, no work, no era
 * messages. */
__attribute__((warn_unused_result)) bool memory_fit_empty(const json_t *answer);

/* The answer as plain text of at most limit bytes (malloc'd; NULL: out of
 * memory): a heading, the continuation, the work before it (newest
 * first), the foundational era's messages, then what was left out and
 * how to page for it with the memory tools. What does not fit is left
 * out from the end; the continuation's content is cut (at a character
 * boundary) only when it alone is over. */
char *memory_fit_text(const json_t *answer, long limit);

#endif
