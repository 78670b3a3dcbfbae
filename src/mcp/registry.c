/* registry: tool definitions gathered from toolsets (see registry.h). */
#include "mcp/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "mcp/schema.h"

bool mcp_tool_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n < 1 || n > MCP_TOOL_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

static const mcp_toolset_t *toolset_find(const mcp_toolset_t *const *available, const char *name,
                                         size_t len)
{
    for (int i = 0; available[i]; i++) {
        const mcp_toolset_t *ts = available[i];
        if (strlen(ts->name) == len && strncmp(ts->name, name, len) == 0)
            return ts;
    }
    return NULL;
}

_Static_assert(MCP_REGISTRY_TOOL_SLOTS >= 4 * MCP_REGISTRY_MAX_TOOLS &&
                   (MCP_REGISTRY_TOOL_SLOTS & (MCP_REGISTRY_TOOL_SLOTS - 1)) == 0,
               "the tool table is a power of two, never more than half full");

/* FNV-1a: tool names are short, and the table at most half full. */
static unsigned name_hash(const char *name)
{
    unsigned h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h;
}

static bool tool_named(const mcp_tool_t *t, const char *name)
{
    return strcmp(t->name, name) == 0 || strcmp(t->def->name, name) == 0 ||
           (t->brief_name[0] && strcmp(t->brief_name, name) == 0);
}

/* The slot holding name, or the empty slot where it would go; *probes
 * counts the slots examined. */
static unsigned tool_slot(const mcp_registry_t *r, const char *name, int *probes)
{
    unsigned mask = MCP_REGISTRY_TOOL_SLOTS - 1, i = name_hash(name) & mask;
    for (*probes = 1;; i = (i + 1) & mask, (*probes)++) {
        unsigned v = r->tool_slots[i];
        if (v == 0 || tool_named(&r->tools[v - 1], name))
            return i;
    }
}

/* Enters tool number k under name (not yet entered). */
static void tool_enter(mcp_registry_t *r, const char *name, int k)
{
    int probes;
    r->tool_slots[tool_slot(r, name, &probes)] = (unsigned short)(k + 1);
}

static json_t *make_listing(const mcp_tool_t *t, json_t *output_schema)
{
    const mcp_tool_def_t *d = t->def;
    json_t *ann = json_pack("{s:s, s:b, s:b, s:b, s:b}", "title", d->title, "readOnlyHint",
                            (d->annotations & MCP_TOOL_READ_ONLY) != 0, "destructiveHint",
                            (d->annotations & MCP_TOOL_DESTRUCTIVE) != 0, "idempotentHint",
                            (d->annotations & MCP_TOOL_IDEMPOTENT) != 0, "openWorldHint",
                            (d->annotations & MCP_TOOL_OPEN_WORLD) != 0);
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:O, s:o}", "name", t->name, "title", d->title, "description",
                  d->description, "inputSchema", t->input_schema, "annotations", ann);
    if (o && output_schema)
        json_object_set_new(o, "outputSchema", output_schema);
    else
        json_decref(output_schema);
    return o;
}

static int add_tool(mcp_registry_t *r, const mcp_toolset_t *ts, const mcp_tool_def_t *d, char *err,
                    size_t errcap)
{
    if (r->ntools == MCP_REGISTRY_MAX_TOOLS) {
        snprintf(err, errcap, "too many tools (at most %d)", MCP_REGISTRY_MAX_TOOLS);
        return UV_E2BIG;
    }
    mcp_tool_t *t = &r->tools[r->ntools];
    memset(t, 0, sizeof *t);
    t->def = d;
    t->toolset = ts;
    size_t n = strlen(d->name);
    if (n > MCP_TOOL_NAME_MAX) {
        snprintf(err, errcap, "tool %s: name longer than %d", d->name, MCP_TOOL_NAME_MAX);
        return UV_EINVAL;
    }
    for (size_t i = 0; i <= n; i++)
        t->name[i] = d->name[i] == '.' ? '_' : d->name[i];
    if (!mcp_tool_name_valid(t->name)) {
        snprintf(err, errcap, "tool %s: name must match ^[A-Za-z0-9_-]{1,64}$", d->name);
        return UV_EINVAL;
    }
    if (mcp_registry_find(r, t->name) != NULL || mcp_registry_find(r, d->name) != NULL) {
        snprintf(err, errcap, "tool %s: defined twice", t->name);
        return UV_EINVAL;
    }
    json_error_t je;
    t->input_schema = json_loads(d->input_schema, 0, &je);
    if (t->input_schema == NULL || !schema_check(t->input_schema, err, errcap)) {
        if (t->input_schema == NULL)
            snprintf(err, errcap, "tool %s: inputSchema is not JSON: %s", d->name, je.text);
        json_decref(t->input_schema);
        return UV_EINVAL;
    }
    json_t *out = NULL;
    if (d->output_schema && (out = json_loads(d->output_schema, 0, &je)) == NULL) {
        snprintf(err, errcap, "tool %s: outputSchema is not JSON: %s", d->name, je.text);
        json_decref(t->input_schema);
        return UV_EINVAL;
    }
    t->listing = make_listing(t, out);
    if (t->listing == NULL) {
        json_decref(t->input_schema);
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    tool_enter(r, t->name, r->ntools);
    if (strcmp(d->name, t->name) != 0)
        tool_enter(r, d->name, r->ntools);
    r->ntools++;
    return 0;
}

static int add_resource(mcp_registry_t *r, const mcp_toolset_t *ts, const mcp_resource_def_t *d,
                        char *err, size_t errcap)
{
    if (r->nresources == MCP_REGISTRY_MAX_RESOURCES) {
        snprintf(err, errcap, "too many resources (at most %d)", MCP_REGISTRY_MAX_RESOURCES);
        return UV_E2BIG;
    }
    mcp_resource_t *res = &r->resources[r->nresources];
    res->def = d;
    res->toolset = ts;
    res->is_template = strchr(d->uri, '{') != NULL;
    res->listing =
        json_pack("{s:s, s:s}", res->is_template ? "uriTemplate" : "uri", d->uri, "name", d->name);
    if (res->listing == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    if (d->title)
        json_object_set_new(res->listing, "title", json_string(d->title));
    if (d->description)
        json_object_set_new(res->listing, "description", json_string(d->description));
    if (d->mime_type)
        json_object_set_new(res->listing, "mimeType", json_string(d->mime_type));
    r->nresources++;
    return 0;
}

static int add_prompt(mcp_registry_t *r, const mcp_toolset_t *ts, const mcp_prompt_def_t *d,
                      char *err, size_t errcap)
{
    if (r->nprompts == MCP_REGISTRY_MAX_PROMPTS) {
        snprintf(err, errcap, "too many prompts (at most %d)", MCP_REGISTRY_MAX_PROMPTS);
        return UV_E2BIG;
    }
    mcp_prompt_t *p = &r->prompts[r->nprompts];
    p->def = d;
    p->toolset = ts;
    json_error_t je;
    if (d->arguments && (p->arguments = json_loads(d->arguments, 0, &je)) == NULL) {
        snprintf(err, errcap, "prompt %s: arguments are not JSON: %s", d->name, je.text);
        return UV_EINVAL;
    }
    p->listing = json_pack("{s:s}", "name", d->name);
    if (d->title)
        json_object_set_new(p->listing, "title", json_string(d->title));
    if (d->description)
        json_object_set_new(p->listing, "description", json_string(d->description));
    if (p->arguments)
        json_object_set(p->listing, "arguments", p->arguments);
    r->nprompts++;
    return 0;
}

bool mcp_registry_has_toolset(const mcp_registry_t *r, const mcp_toolset_t *ts)
{
    for (int i = 0; i < r->ntoolsets; i++)
        if (r->toolsets[i] == ts)
            return true;
    return false;
}

void mcp_registry_set_context(mcp_registry_t *r, const mcp_toolset_t *ts, void *ctx)
{
    for (int i = 0; i < r->ntoolsets; i++)
        if (r->toolsets[i] == ts)
            r->contexts[i] = ctx;
}

void *mcp_registry_context(const mcp_registry_t *r, const mcp_toolset_t *ts)
{
    for (int i = 0; i < r->ntoolsets; i++)
        if (r->toolsets[i] == ts)
            return r->contexts[i];
    return NULL;
}

static int add_toolset(mcp_registry_t *r, const mcp_toolset_t *ts, bool read_only, char *err,
                       size_t errcap)
{
    if (mcp_registry_has_toolset(r, ts))
        return 0;
    if (r->ntoolsets == MCP_REGISTRY_MAX_TOOLSETS) {
        snprintf(err, errcap, "too many toolsets");
        return UV_E2BIG;
    }
    r->toolsets[r->ntoolsets++] = ts;
    for (int i = 0; i < ts->nresources; i++) {
        int rc = add_resource(r, ts, &ts->resources[i], err, errcap);
        if (rc != 0)
            return rc;
    }
    for (int i = 0; i < ts->nprompts; i++) {
        int rc = add_prompt(r, ts, &ts->prompts[i], err, errcap);
        if (rc != 0)
            return rc;
    }
    for (int i = 0; i < ts->ntools; i++) {
        if (read_only && !(ts->tools[i].annotations & MCP_TOOL_READ_ONLY))
            continue;
        int rc = add_tool(r, ts, &ts->tools[i], err, errcap);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int mcp_registry_build(mcp_registry_t *r, const mcp_toolset_t *const *available,
                       const char *toolsets, bool read_only, char *err, size_t errcap)
{
    memset(r, 0, sizeof *r);
    r->tools = calloc(MCP_REGISTRY_MAX_TOOLS, sizeof *r->tools);
    r->tool_slots = calloc(MCP_REGISTRY_TOOL_SLOTS, sizeof *r->tool_slots);
    r->resources = calloc(MCP_REGISTRY_MAX_RESOURCES, sizeof *r->resources);
    r->prompts = calloc(MCP_REGISTRY_MAX_PROMPTS, sizeof *r->prompts);
    if (r->tools == NULL || r->tool_slots == NULL || r->resources == NULL || r->prompts == NULL) {
        mcp_registry_free(r);
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    const char *p = toolsets;
    int rc = 0;
    while (rc == 0 && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len > 0 && *p == ' ') {
            p++;
            len--;
        }
        while (len > 0 && p[len - 1] == ' ')
            len--;
        /* "auto" selects what "all" does; the entry point hides what
         * has nothing to serve yet. */
        if ((len == 3 && strncmp(p, "all", 3) == 0) || (len == 4 && strncmp(p, "auto", 4) == 0)) {
            for (int i = 0; rc == 0 && available[i]; i++)
                if (!available[i]->on_request_only)
                    rc = add_toolset(r, available[i], read_only, err, errcap);
        } else if (len > 0) {
            const mcp_toolset_t *ts = toolset_find(available, p, len);
            if (ts == NULL) {
                char known[256] = "";
                size_t n = 0;
                for (int i = 0; available[i]; i++)
                    n += (size_t)snprintf(known + n, sizeof known - n, "%s, ", available[i]->name);
                snprintf(err, errcap, "unknown toolset '%.*s' (known: %sall, auto)", (int)len, p,
                         known);
                rc = UV_EINVAL;
                break;
            }
            rc = add_toolset(r, ts, read_only, err, errcap);
        }
        p += (comma ? (size_t)(comma - p) + 1 : strlen(p));
    }
    if (rc != 0)
        mcp_registry_free(r);
    return rc;
}

/* The tool a selected toolset named ts_name defines under the spec name
 * tool, or NULL. */
static mcp_tool_t *tool_of(mcp_registry_t *r, const char *ts_name, const char *tool)
{
    for (int i = 0; i < r->ntools; i++)
        if (strcmp(r->tools[i].toolset->name, ts_name) == 0 &&
            strcmp(r->tools[i].def->name, tool) == 0)
            return &r->tools[i];
    return NULL;
}

static bool toolset_known(const mcp_registry_t *r, const char *name)
{
    for (int i = 0; i < r->ntoolsets; i++)
        if (strcmp(r->toolsets[i]->name, name) == 0)
            return true;
    return false;
}

int mcp_registry_set_default(mcp_registry_t *r, const mcp_brief_def_t *defs, int ndefs, char *err,
                             size_t errcap)
{
    for (int i = 0; i < ndefs; i++) {
        const mcp_brief_def_t *d = &defs[i];
        if (!toolset_known(r, d->toolset))
            continue;
        mcp_tool_t *t = tool_of(r, d->toolset, d->tool);
        if (t == NULL) {
            bool dropped = false;
            for (int k = 0; k < r->ntoolsets; k++) {
                const mcp_toolset_t *ts = r->toolsets[k];
                if (strcmp(ts->name, d->toolset) != 0)
                    continue;
                for (int j = 0; j < ts->ntools; j++)
                    dropped = dropped || strcmp(ts->tools[j].name, d->tool) == 0;
            }
            if (dropped) /* not read-only, and the server is */
                continue;
            snprintf(err, errcap, "default selection: toolset %s has no tool %s", d->toolset,
                     d->tool);
            return UV_EINVAL;
        }
        const char *name = d->name ? d->name : t->name;
        const mcp_tool_t *other = mcp_registry_find(r, name);
        if (!mcp_tool_name_valid(name) || (other != NULL && other != t) || t->brief_listing) {
            snprintf(err, errcap, "default selection: %s is not a valid name for %s.%s", name,
                     d->toolset, d->tool);
            return UV_EINVAL;
        }
        json_t *l = json_deep_copy(t->listing);
        if (l == NULL) {
            snprintf(err, errcap, "out of memory");
            return UV_ENOMEM;
        }
        json_object_set_new(l, "name", json_string(name));
        if (d->description)
            json_object_set_new(l, "description", json_string(d->description));
        t->brief_listing = l;
        if (strcmp(name, t->name) != 0 && strcmp(name, t->def->name) != 0) {
            snprintf(t->brief_name, sizeof t->brief_name, "%s", name);
            tool_enter(r, name, (int)(t - r->tools));
        }
    }
    return 0;
}

void mcp_registry_free(mcp_registry_t *r)
{
    for (int i = 0; i < r->ntools; i++) {
        json_decref(r->tools[i].input_schema);
        json_decref(r->tools[i].listing);
        json_decref(r->tools[i].brief_listing);
    }
    for (int i = 0; i < r->nresources; i++)
        json_decref(r->resources[i].listing);
    for (int i = 0; i < r->nprompts; i++) {
        json_decref(r->prompts[i].arguments);
        json_decref(r->prompts[i].listing);
    }
    free(r->tools);
    free(r->tool_slots);
    free(r->resources);
    free(r->prompts);
    memset(r, 0, sizeof *r);
}

bool mcp_uri_template_match(const char *tmpl, const char *uri, json_t **vars)
{
    json_t *v = vars ? json_object() : NULL;
    const char *t = tmpl, *u = uri;
    while (*t) {
        if (*t != '{') {
            if (*t++ != *u++)
                goto nomatch;
            continue;
        }
        const char *close = strchr(t, '}');
        if (close == NULL)
            goto nomatch;
        /* The variable runs up to the template's next literal character
         * (or '/', or the end). */
        char stop = close[1];
        const char *end = u;
        while (*end && *end != '/' && (stop == '\0' || *end != stop))
            end++;
        if (end == u)
            goto nomatch;
        if (v) {
            char name[64], *val = strndup(u, (size_t)(end - u));
            snprintf(name, sizeof name, "%.*s", (int)(close - t - 1), t + 1);
            json_object_set_new(v, name, json_string(val ? val : ""));
            free(val);
        }
        u = end;
        t = close + 1;
    }
    if (*u != '\0')
        goto nomatch;
    if (vars)
        *vars = v;
    return true;
nomatch:
    json_decref(v);
    return false;
}

bool mcp_registry_toolset_in(const mcp_registry_t *r, const mcp_toolset_t *ts, unsigned mask)
{
    for (int i = 0; i < r->ntoolsets && i < MCP_REGISTRY_MAX_TOOLSETS; i++)
        if (r->toolsets[i] == ts)
            return (mask >> i) & 1u;
    return false;
}

unsigned mcp_registry_shown(const mcp_registry_t *r, unsigned mask)
{
    return mask & ~r->hidden;
}

void mcp_registry_count_served(const mcp_registry_t *r, bool brief, int *tools, int *resources,
                               int *prompts)
{
    unsigned mask =
        brief ? mcp_registry_shown(r, MCP_REGISTRY_ALL_TOOLSETS) : MCP_REGISTRY_ALL_TOOLSETS;
    *tools = *resources = *prompts = 0;
    for (int i = 0; i < r->ntools; i++)
        *tools += (!brief || r->tools[i].brief_listing) &&
                  mcp_registry_toolset_in(r, r->tools[i].toolset, mask);
    for (int i = 0; i < r->nresources; i++)
        *resources += mcp_registry_toolset_in(r, r->resources[i].toolset, mask);
    for (int i = 0; i < r->nprompts; i++)
        *prompts += mcp_registry_toolset_in(r, r->prompts[i].toolset, mask);
}

bool mcp_registry_set_hidden(mcp_registry_t *r, const mcp_toolset_t *ts, bool hidden)
{
    for (int i = 0; i < r->ntoolsets && i < MCP_REGISTRY_MAX_TOOLSETS; i++) {
        if (r->toolsets[i] != ts)
            continue;
        unsigned was = r->hidden;
        r->hidden = hidden ? r->hidden | (1u << i) : r->hidden & ~(1u << i);
        return was != r->hidden;
    }
    return false;
}

const mcp_resource_t *mcp_registry_find_resource(const mcp_registry_t *r, const char *uri,
                                                 unsigned mask, json_t **vars)
{
    for (int i = 0; i < r->nresources; i++)
        if (!r->resources[i].is_template && strcmp(r->resources[i].def->uri, uri) == 0 &&
            mcp_registry_toolset_in(r, r->resources[i].toolset, mask)) {
            if (vars)
                *vars = json_object();
            return &r->resources[i];
        }
    for (int i = 0; i < r->nresources; i++)
        if (r->resources[i].is_template &&
            mcp_registry_toolset_in(r, r->resources[i].toolset, mask) &&
            mcp_uri_template_match(r->resources[i].def->uri, uri, vars))
            return &r->resources[i];
    return NULL;
}

const mcp_prompt_t *mcp_registry_find_prompt(const mcp_registry_t *r, const char *name,
                                             unsigned mask)
{
    for (int i = 0; i < r->nprompts; i++)
        if (strcmp(r->prompts[i].def->name, name) == 0 &&
            mcp_registry_toolset_in(r, r->prompts[i].toolset, mask))
            return &r->prompts[i];
    return NULL;
}

const mcp_tool_t *mcp_registry_find(const mcp_registry_t *r, const char *name)
{
    if (r->tool_slots == NULL)
        return NULL;
    int probes;
    unsigned v = r->tool_slots[tool_slot(r, name, &probes)];
    return v ? &r->tools[v - 1] : NULL;
}

int mcp_registry__find_probes(const mcp_registry_t *r, const char *name)
{
    int probes = 0;
    if (r->tool_slots != NULL)
        (void)tool_slot(r, name, &probes);
    return probes;
}

bool mcp_registry_lists_change(const mcp_registry_t *r)
{
    if (r->hidden != 0)
        return true;
    for (int i = 0; i < r->ntoolsets; i++)
        if (r->toolsets[i]->lists_change)
            return true;
    return false;
}
