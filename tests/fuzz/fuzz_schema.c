/* Fuzz target: argument validation. The input is parsed as JSON-RPC
 * (jsonrpc_parse, with its fallback for integers past 64 bits) and, when it
 * is an object, validated against the input schema of every tool of every
 * toolset compiled in. A validator must answer true or false with a
 * message, never crash, never read past what it was given. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "mcp/jsonrpc.h"
#include "mcp/schema.h"
#include "toolsets/toolset.h"

static json_t **schemas;
static int nschemas;

static void load(void)
{
    int cap = 0;
    for (int t = 0; toolsets_table[t]; t++)
        cap += toolsets_table[t]->mcp->ntools;
    schemas = calloc((size_t)cap, sizeof *schemas);
    for (int t = 0; toolsets_table[t]; t++)
        for (int i = 0; i < toolsets_table[t]->mcp->ntools; i++) {
            json_t *s = json_loads(toolsets_table[t]->mcp->tools[i].input_schema, 0, NULL);
            if (s == NULL)
                abort(); /* a static table that does not parse */
            schemas[nschemas++] = s;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (schemas == NULL)
        load();
    json_error_t je;
    json_t *v = jsonrpc_parse((const char *)data, size, &je);
    if (v == NULL)
        return 0;
    char err[512];
    for (int i = 0; i < nschemas; i++)
        if (!schema_validate(schemas[i], v, err, sizeof err) && err[0] == '\0')
            abort(); /* a refusal says why */
    json_decref(v);
    return 0;
}
