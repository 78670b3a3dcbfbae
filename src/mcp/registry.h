/* registry: the tools a server offers, gathered from the selected toolsets.
 *
 * A toolset is a static table of tool definitions; the entry point hands
 * the registry the toolsets it knows (the engine names none) and sets each
 * selected toolset's context, which its handlers get from
 * mcp_call_context. The registry checks each
 * definition once at start (name, schemas), lists tools under names that
 * match ^[A-Za-z0-9_-]{1,64}$ (a spec name with dots, "conversations.list",
 * is listed as "conversations_list" and found under both spellings), and
 * drops every tool that is not readOnlyHint when the server is read-only. */
#ifndef PARLEY_MCP_REGISTRY_H
#define PARLEY_MCP_REGISTRY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct mcp_call_s mcp_call_t;

/* Annotations (hints for clients). */
#define MCP_TOOL_READ_ONLY   0x1u
#define MCP_TOOL_DESTRUCTIVE 0x2u
#define MCP_TOOL_IDEMPOTENT  0x4u
#define MCP_TOOL_OPEN_WORLD  0x8u

#define MCP_TOOL_NAME_MAX      64
#define MCP_REGISTRY_MAX_TOOLS 512
/* The tool names' hash table: a power of two, at least four times
 * MCP_REGISTRY_MAX_TOOLS (each tool may be entered under two names: its
 * listed and its dotted spec name), so that it is never more than half
 * full and a lookup compares one or two names, whatever the tool count. */
#define MCP_REGISTRY_TOOL_SLOTS    2048
#define MCP_REGISTRY_MAX_RESOURCES 256
#define MCP_REGISTRY_MAX_PROMPTS   256

/* A handler (tool, resource read, prompt get). It owns the call until it
 * calls one of the mcp_call_finish_* functions (now or later, from any loop
 * callback). */
typedef void (*mcp_tool_fn)(mcp_call_t *call);

typedef struct mcp_tool_def_s {
    const char *name; /* spec name; may contain dots */
    const char *title;
    const char *description;
    const char *input_schema;  /* JSON text */
    const char *output_schema; /* JSON text or NULL */
    unsigned annotations;
    mcp_tool_fn fn;
    /* For the toolset's handler, opaque to the engine: the SQL function
     * that answers the tool, when a generic handler runs one. */
    const char *sql_function;
} mcp_tool_def_t;

/* A resource, or a resource template when uri holds {name} parts (RFC 6570
 * level 1; each part matches one or more characters other than '/'). The
 * read handler gets arguments {"uri": URI, "vars": {name: value}} and
 * finishes with a ReadResourceResult ({"contents": [...]}). */
typedef struct mcp_resource_def_s {
    const char *uri;
    const char *name;
    const char *title;
    const char *description;
    const char *mime_type;
    mcp_tool_fn fn;
    /* Whether the caller may watch uri (resources/subscribe, the
     * resourceSubscriptions of subscriptions/listen): gets the read's
     * arguments and finishes with any result when it may, with the error
     * resources/read gives when it may not (not found for what the
     * caller cannot read). NULL: the read itself decides. A watch may
     * allow what does not exist yet (a message to come in a chat the
     * caller reads), never what the read would refuse for the caller. */
    mcp_tool_fn watch;
} mcp_resource_def_t;

/* A prompt. arguments: JSON text of the PromptArgument array, or NULL. The
 * handler gets the arguments object and finishes with a GetPromptResult. */
typedef struct mcp_prompt_def_s {
    const char *name;
    const char *title;
    const char *description;
    const char *arguments;
    mcp_tool_fn fn;
} mcp_prompt_def_t;

typedef struct mcp_toolset_s {
    const char *name;
    const char *description;
    const mcp_tool_def_t *tools;
    int ntools;
    const mcp_resource_def_t *resources;
    int nresources;
    const mcp_prompt_def_t *prompts;
    int nprompts;
    bool on_request_only; /* not part of "all" (e.g. a test fixture toolset) */
    /* Its tools or prompts can change while the daemon runs (it calls
     * mcp_server_list_changed): 2026-07-28 listeners may ask for
     * list_changed. Only the conformance fixtures do. */
    bool lists_change;
} mcp_toolset_t;

/* An entry of the default selection (the compact surface "auto" serves):
 * a tool of a toolset, listed there under name with a short description
 * that says when to use it (rather than recall, the one search). The
 * tool's schemas, annotations and handler stay its own. */
typedef struct mcp_brief_def_s {
    const char *toolset;     /* the toolset's name */
    const char *tool;        /* the tool's spec name in it */
    const char *name;        /* its name in the default; NULL: its listed name */
    const char *description; /* NULL: its own */
} mcp_brief_def_t;

typedef struct mcp_tool_s {
    const mcp_tool_def_t *def;
    const mcp_toolset_t *toolset;
    char name[MCP_TOOL_NAME_MAX + 1];       /* listed name */
    char brief_name[MCP_TOOL_NAME_MAX + 1]; /* its name in the default, or "" */
    json_t *input_schema;
    json_t *listing;       /* the tools/list entry */
    json_t *brief_listing; /* its entry in the default's tools/list; NULL: not there */
} mcp_tool_t;

typedef struct mcp_resource_s {
    const mcp_resource_def_t *def;
    const mcp_toolset_t *toolset;
    bool is_template;
    json_t *listing; /* the resources/list or resources/templates/list entry */
} mcp_resource_t;

typedef struct mcp_prompt_s {
    const mcp_prompt_def_t *def;
    const mcp_toolset_t *toolset;
    json_t *arguments; /* the PromptArgument array, or NULL */
    json_t *listing;
} mcp_prompt_t;

#define MCP_REGISTRY_MAX_TOOLSETS 32

typedef struct mcp_registry_s {
    const mcp_toolset_t *toolsets[MCP_REGISTRY_MAX_TOOLSETS];
    void *contexts[MCP_REGISTRY_MAX_TOOLSETS]; /* the toolsets' own, set by the entry point */
    int ntoolsets;
    mcp_tool_t *tools;
    int ntools;
    /* MCP_REGISTRY_TOOL_SLOTS slots, open addressing with linear probing:
     * 0 empty, else 1 + the index in tools of the tool whose listed or
     * spec name hashes there (mcp_registry_find). */
    unsigned short *tool_slots;
    mcp_resource_t *resources; /* fixed ones and templates */
    int nresources;
    mcp_prompt_t *prompts;
    int nprompts;
    /* Toolsets selected but not served now (bit i: toolsets[i]): the
     * default selection ("auto") holds back a toolset whose source has
     * no data yet. No mask includes them (mcp_registry_toolset_in). */
    unsigned hidden;
} mcp_registry_t;

/* Builds a registry of the toolsets a comma-separated list selects from
 * available (NULL-terminated, borrowed for the registry's life; "all" and
 * "auto" =
 * every toolset not on_request_only). Returns 0, or UV_EINVAL with err
 * naming an unknown toolset or a bad definition. */
int mcp_registry_build(mcp_registry_t *r, const mcp_toolset_t *const *available,
                       const char *toolsets, bool read_only, char *err, size_t errcap);

/* mask without the toolsets hidden for now (the default selection's
 * "nothing to serve yet"). */
__attribute__((warn_unused_result)) unsigned mcp_registry_shown(const mcp_registry_t *r,
                                                                unsigned mask);

/* The tools, resources and prompts a session with every toolset served
 * now gets: the default selection's (brief) or every selected toolset's
 * whole, without the toolsets hidden for now. For the start-up log. */
void mcp_registry_count_served(const mcp_registry_t *r, bool brief, int *tools, int *resources,
                               int *prompts);

/* Makes the default selection of the registry (see mcp_brief_def_t):
 * each entry whose toolset was selected and whose tool it serves (not
 * dropped as read-only) is listed in the default, and found by
 * mcp_registry_find under its default name as well. Call once, after
 * mcp_registry_build. Returns 0, or UV_EINVAL with err (a name that is
 * not valid or names another tool, a tool the toolset does not define). */
int mcp_registry_set_default(mcp_registry_t *r, const mcp_brief_def_t *defs, int ndefs, char *err,
                             size_t errcap);

/* True when a selected toolset's lists can change (lists_change), or a
 * hidden toolset may be served later. */
__attribute__((warn_unused_result)) bool mcp_registry_lists_change(const mcp_registry_t *r);

/* Hides ts (hidden: true) or serves it again. Returns true when that
 * changed what the registry serves (the caller tells the sessions:
 * mcp_server_list_changed). */
__attribute__((warn_unused_result)) bool
mcp_registry_set_hidden(mcp_registry_t *r, const mcp_toolset_t *ts, bool hidden);

/* True when ts was selected. */
__attribute__((warn_unused_result)) bool mcp_registry_has_toolset(const mcp_registry_t *r,
                                                                  const mcp_toolset_t *ts);

/* The context handed to ts's handlers (borrowed; the caller frees it after
 * the server closed). Ignored when ts was not selected. */
void mcp_registry_set_context(mcp_registry_t *r, const mcp_toolset_t *ts, void *ctx);
void *mcp_registry_context(const mcp_registry_t *r, const mcp_toolset_t *ts);
void mcp_registry_free(mcp_registry_t *r);

/* Finds a tool by listed name, spec name or name in the default; NULL if
 * none. By hash: the cost does not grow with the number of tools served. */
const mcp_tool_t *mcp_registry_find(const mcp_registry_t *r, const char *name);

/* The number of slots mcp_registry_find examines to answer name (for the
 * tests: a lookup by hash examines one or two, a walk ntools). */
int mcp_registry__find_probes(const mcp_registry_t *r, const char *name);

/* A set of selected toolsets: bit i stands for r->toolsets[i]
 * (MCP_REGISTRY_ALL_TOOLSETS: every one). A session's policy holds one. */
#define MCP_REGISTRY_ALL_TOOLSETS (~0u)

/* True when ts is in the set mask (a toolset not selected never is).
 * Hidden toolsets are the caller's to leave out of mask
 * (mcp_registry_shown). */
__attribute__((warn_unused_result)) bool
mcp_registry_toolset_in(const mcp_registry_t *r, const mcp_toolset_t *ts, unsigned mask);

/* Finds the resource for uri among the toolsets in mask: a fixed one by
 * equality, else the first template that matches; vars (may be NULL)
 * receives the template's variables (a new object). NULL if none. */
const mcp_resource_t *mcp_registry_find_resource(const mcp_registry_t *r, const char *uri,
                                                 unsigned mask, json_t **vars);

/* Finds a prompt by name among the toolsets in mask; NULL if none. */
const mcp_prompt_t *mcp_registry_find_prompt(const mcp_registry_t *r, const char *name,
                                             unsigned mask);

/* Matches uri against an RFC 6570 level-1 template; on a match, vars
 * (when not NULL) receives {name: value}. */
__attribute__((warn_unused_result)) bool mcp_uri_template_match(const char *tmpl, const char *uri,
                                                                json_t **vars);

/* True when name matches ^[A-Za-z0-9_-]{1,64}$. */
__attribute__((warn_unused_result)) bool mcp_tool_name_valid(const char *name);

#endif
