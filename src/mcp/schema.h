/* schema: validates tool arguments against the tool's inputSchema (a JSON
 * Schema subset: type, properties, required, additionalProperties, enum,
 * const, minimum/maximum and their exclusive forms, minLength/maxLength,
 * pattern, items, minItems/maxItems, anyOf). The error names the field by
 * its path and says what is expected, for the model to correct its call. */
#ifndef PARLEY_MCP_SCHEMA_H
#define PARLEY_MCP_SCHEMA_H

/* The largest integer an argument may hold when its schema sets no
 * maximum (2^53 - 1: exact in JSON everywhere, and in a bigint). */
#define MCP_SCHEMA_INT_MAX 9007199254740991.0
/* The bound tool tables give counts and offsets the store keeps in a
 * 32-bit integer. */
#define MCP_SCHEMA_INT32_MAX "2147483647"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Returns true when value satisfies schema; otherwise false with err like
 * "limit: expected an integer between 1 and 500, got \"ten\"". One thread
 * only (the loop's): the compiled patterns it keeps are not locked. */
__attribute__((warn_unused_result)) bool schema_validate(const json_t *schema, const json_t *value,
                                                         char *err, size_t errcap);

/* Rewrites, in place, every whole real of value ("2.0", "-0.0", "1e3")
 * where schema wants an integer as that integer, so that handlers and
 * the store see the integer (PostgreSQL's ::int refuses "-0.0"). Call it
 * after schema_validate succeeded; value must be an object or array (a
 * top-level scalar is left as it is). */
void schema_normalize(const json_t *schema, json_t *value);

/* Whether v holds a real number anywhere: what schema_normalize may turn
 * into an integer. */
__attribute__((warn_unused_result)) bool schema_holds_real(const json_t *v);

/* Checks that a schema uses only what schema_validate understands and that
 * its patterns compile. Returns true, or false with err. */
__attribute__((warn_unused_result)) bool schema_check(const json_t *schema, char *err,
                                                      size_t errcap);

#endif
