/* bluesky: the bluesky toolset's table, context, and the profile and
 * search tools (see bluesky.h; login is in login.c). A tool asks the
 * connector (query), keeps the posts it got in the archive
 * (parley_bsky_archive_store), then answers Markdown made by render.c. */
#include "toolsets/bluesky/bluesky.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolsets/bluesky/bluesky_internal.h"
#include "toolsets/bluesky/render.h"
#include "util/log.h"

#define TAG "bluesky"
/* Posts profile shows under the profile. */
#define BS_PROFILE_POSTS 10
#define BS_DEFAULT_LIMIT 25
#define BS_THREAD_DEPTH  6

typedef enum { BS_SEARCH = 0, BS_THREAD, BS_PROFILE } bs_kind_t;

/* One state enum per tool call in flight. */
typedef enum {
    BSS_RESOLVE = 0, /* a handle in a post link to a DID */
    BSS_FETCH,       /* the main upstream call */
    BSS_FEED,        /* profile: the author's recent posts */
    BSS_STORE,       /* posts into the archive */
    BSS_ARCHIVE,     /* search: the archive instead of the service */
} bs_state_t;

typedef struct bs_op_s {
    mcp_call_t *c;
    bs_ctx_t *ctx;
    bs_kind_t kind;
    bs_state_t state;
    char *account; /* NULL: the default */
    char *query;
    int limit;
    char *actor; /* profile: whose; thread: the link's authority */
    char *rkey;  /* thread */
    int64_t account_id;
    json_t *profile; /* getProfile's answer */
    json_t *raw;     /* postViews to store */
    json_t *slim;    /* posts to render */
    char *cursor;    /* search: more */
    char note[600];  /* said above the answer */
} bs_op_t;

/* ---- answers ------------------------------------------------------------ */

void bs_finish(mcp_call_t *c, const char *markdown, json_t *structured)
{
    json_t *content = json_pack("[{s:s, s:s}]", "type", "text", "text", markdown);
    json_t *res = json_pack("{s:o, s:o}", "content", content, "structuredContent",
                            structured ? structured : json_object());
    mcp_call_finish_result(c, res);
}

void bs_fail(mcp_call_t *c, int status, const char *error)
{
    const char *e = error ? error : uv_strerror(status);
    switch (status) {
    case UV_ENOENT:
        mcp_call_finish_error(c,
                              "%s. Call login (with no arguments it asks for the handle and "
                              "the app password) or login {command: \"list\"} to see the "
                              "accounts.",
                              e);
        return;
    case UV_EACCES:
        mcp_call_finish_error(c, "%s.", e);
        return;
    case UV_EAGAIN:
        mcp_call_finish_error(c, "%s", e);
        return;
    case UV_EBUSY:
        mcp_call_finish_error(c, "parley is busy with other Bluesky calls; try again shortly.");
        return;
    default:
        mcp_call_finish_error(c, "Bluesky: %s", e);
    }
}

static void op_free(bs_op_t *op)
{
    free(op->account);
    free(op->query);
    free(op->actor);
    free(op->rkey);
    free(op->cursor);
    json_decref(op->profile);
    json_decref(op->raw);
    json_decref(op->slim);
    free(op);
}

static void op_fail(bs_op_t *op, int status, const char *error)
{
    bs_fail(op->c, status, error);
    op_free(op);
}

/* The Markdown and structured answer of op, then the end of it. */
static void op_answer(bs_op_t *op)
{
    char *md = NULL;
    json_t *st = NULL;
    switch (op->kind) {
    case BS_THREAD:
        md = bsky_render_thread(op->slim);
        st = json_pack("{s:s, s:O}", "kind", "thread", "posts", op->slim);
        break;
    case BS_SEARCH:
        md = bsky_render_search(op->query, op->slim, op->cursor);
        st = json_pack("{s:s, s:s, s:O, s:s}", "kind", "search", "query", op->query, "posts",
                       op->slim, "source", op->note[0] ? "archive" : "bluesky");
        if (st && op->cursor)
            json_object_set_new(st, "cursor", json_string(op->cursor));
        break;
    case BS_PROFILE:
        md = bsky_render_profile(op->profile, op->slim);
        st = json_pack("{s:s, s:o, s:O}", "kind", "profile", "profile",
                       bsky_profile_slim(op->profile), "posts", op->slim);
        break;
    }
    if (md == NULL || st == NULL) {
        free(md);
        json_decref(st);
        op_fail(op, UV_ENOMEM, "out of memory");
        return;
    }
    if (op->note[0]) {
        size_t n = strlen(op->note) + strlen(md) + 4;
        char *both = malloc(n);
        if (both) {
            snprintf(both, n, "%s\n\n%s", op->note, md);
            free(md);
            md = both;
        }
        json_object_set_new(st, "note", json_string(op->note));
    }
    bs_finish(op->c, md, st);
    free(md);
    op_free(op);
}

/* ---- the archive -------------------------------------------------------- */

static void stored(void *data, int status, const char *json, archive_err_t err, const char *message)
{
    bs_op_t *op = data;
    (void)json;
    (void)err;
    if (status != 0) /* the answer does not depend on it: say so in the log */
        log_warn(TAG, "posts fetched by %s were not stored: %s", op->c->name, message);
    op_answer(op);
}

/* Calls fn with args (stolen) for op. Returns 0 or a negative code. */
static int op_archive_call(bs_op_t *op, archive_mode_t mode, const char *fn, json_t *args,
                           archive_call_cb cb)
{
    char *text = args ? json_dumps(args, JSON_COMPACT) : NULL;
    json_decref(args);
    int rc = text ? archive_call(op->ctx->archive, mode, fn, text, NULL, cb, op, NULL) : UV_ENOMEM;
    free(text);
    return rc;
}

/* Keeps op->raw in the archive, then answers. */
static void op_store(bs_op_t *op)
{
    op->state = BSS_STORE;
    int rc = op_archive_call(
        op, ARCHIVE_WRITE, "parley_bsky_archive_store",
        json_pack("{s:I, s:O}", "account", (json_int_t)op->account_id, "posts", op->raw), stored);
    if (rc != 0) {
        log_warn(TAG, "posts fetched by %s were not stored: %s", op->c->name, uv_strerror(rc));
        op_answer(op);
    }
}

static void archive_found(void *data, int status, const char *json, archive_err_t err,
                          const char *message)
{
    bs_op_t *op = data;
    (void)err;
    if (status != 0) {
        op_fail(op, UV_EIO, message);
        return;
    }
    json_t *doc = json_loads(json, 0, NULL);
    json_decref(op->slim);
    op->slim = json_incref(json_object_get(doc, "posts"));
    /* The archive's own word: a near reading, word forms not in use yet. */
    const char *more = json_string_value(json_object_get(doc, "note"));
    size_t used = strlen(op->note);
    if (more && used + 2 < sizeof op->note)
        snprintf(op->note + used, sizeof op->note - used, " _%s_", more);
    json_decref(doc);
    if (!json_is_array(op->slim)) {
        op_fail(op, UV_EIO, "the archive answered no posts");
        return;
    }
    op_answer(op);
}

/* search without the service: the archive's posts, with why in the note. */
static void op_archive(bs_op_t *op, const char *why)
{
    snprintf(op->note, sizeof op->note,
             "_From parley's archive (posts fetched earlier), not from Bluesky: %s._", why);
    op->state = BSS_ARCHIVE;
    int rc = op_archive_call(op, ARCHIVE_READ, "parley_bsky_archive_find",
                             json_pack("{s:s, s:i}", "query", op->query, "limit", op->limit),
                             archive_found);
    if (rc != 0)
        op_fail(op, rc, why);
}

/* ---- upstream ----------------------------------------------------------- */

static void fetched(void *data, int status, const char *json, const char *error);

static int op_query(bs_op_t *op, const char *method, json_t *params)
{
    char *text = json_dumps(params, JSON_COMPACT);
    json_decref(params);
    if (text == NULL)
        return UV_ENOMEM;
    int rc = connector_query(op->ctx->conn, op->account, method, text, fetched, op);
    free(text);
    return rc;
}

/* Every postView in a thread (the parents and the replies). */
static void thread_posts(const json_t *t, json_t *out, int depth)
{
    if (!json_is_object(t) || depth > 200)
        return;
    json_t *p = json_object_get(t, "post");
    if (json_is_object(p))
        json_array_append(out, p);
    thread_posts(json_object_get(t, "parent"), out, depth + 1);
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(t, "replies"), i, r) thread_posts(r, out, depth + 1);
}

static bool network_trouble(int status)
{
    return status == UV_ECONNREFUSED || status == UV_ETIMEDOUT || status == UV_EAI_NONAME ||
           status == UV_EIO;
}

static void fetched(void *data, int status, const char *json, const char *error)
{
    bs_op_t *op = data;
    if (status != 0) {
        if (op->kind == BS_SEARCH && (status == UV_ENOENT || network_trouble(status))) {
            char why[400];
            snprintf(why, sizeof why, "%s%s", error ? error : uv_strerror(status),
                     status == UV_ENOENT ? " (call login to search Bluesky itself)" : "");
            op_archive(op, why);
            return;
        }
        op_fail(op, status, error);
        return;
    }
    json_t *doc = json_loads(json, 0, NULL);
    json_t *d = json_object_get(doc, "data");
    op->account_id = json_integer_value(json_object_get(json_object_get(doc, "account"), "id"));
    int rc = 0;
    switch (op->state) {
    case BSS_RESOLVE: {
        const char *did = json_string_value(json_object_get(d, "did"));
        if (did == NULL) {
            json_decref(doc);
            op_fail(op, UV_EPROTO, "the handle of the link did not resolve to a DID");
            return;
        }
        size_t n = strlen(did) + strlen(op->rkey) + 40;
        char *uri = malloc(n);
        if (uri)
            snprintf(uri, n, "at://%s/app.bsky.feed.post/%s", did, op->rkey);
        op->state = BSS_FETCH;
        rc = uri ? op_query(op, "app.bsky.feed.getPostThread",
                            json_pack("{s:s, s:i, s:i}", "uri", uri, "depth", BS_THREAD_DEPTH,
                                      "parentHeight", 80))
                 : UV_ENOMEM;
        free(uri);
        break;
    }
    case BSS_FETCH:
        if (op->kind == BS_THREAD) {
            json_t *t = json_object_get(d, "thread");
            thread_posts(t, op->raw, 0);
            op->slim = bsky_thread_slim(t);
        } else if (op->kind == BS_SEARCH) {
            op->slim = json_array();
            size_t i;
            json_t *p;
            json_array_foreach(json_object_get(d, "posts"), i, p)
            {
                json_t *s = bsky_post_slim(p);
                if (s) {
                    json_array_append(op->raw, p);
                    json_array_append_new(op->slim, s);
                }
            }
            const char *cur = json_string_value(json_object_get(d, "cursor"));
            op->cursor = cur ? strdup(cur) : NULL;
        } else { /* profile, then the author's recent posts */
            op->profile = json_incref(d);
            op->state = BSS_FEED;
            const char *did = json_string_value(json_object_get(d, "did"));
            rc = op_query(
                op, "app.bsky.feed.getAuthorFeed",
                json_pack("{s:s, s:i}", "actor", did ? did : op->actor, "limit", BS_PROFILE_POSTS));
            break;
        }
        json_decref(doc);
        if (op->slim == NULL) {
            op_fail(op, UV_EPROTO, "Bluesky answered no posts");
            return;
        }
        op_store(op);
        return;
    case BSS_FEED: {
        op->slim = json_array();
        size_t i;
        json_t *item;
        json_array_foreach(json_object_get(d, "feed"), i, item)
        {
            json_t *p = json_object_get(item, "post");
            json_t *s = bsky_post_slim(p);
            if (s) {
                json_array_append(op->raw, p);
                json_array_append_new(op->slim, s);
            }
        }
        json_decref(doc);
        op_store(op);
        return;
    }
    default:
        rc = UV_EINVAL;
    }
    json_decref(doc);
    if (rc != 0)
        op_fail(op, rc, "the next Bluesky call could not start");
}

/* ---- tools -------------------------------------------------------------- */

const char *bs_arg(const mcp_call_t *c, const char *key)
{
    const char *s = json_string_value(json_object_get(c->args, key));
    return s && *s ? s : NULL;
}

static bs_op_t *op_new(mcp_call_t *c, bs_kind_t kind)
{
    bs_ctx_t *ctx = mcp_call_context(c);
    bs_op_t *op = calloc(1, sizeof *op);
    if (op == NULL) {
        mcp_call_finish_error(c, "out of memory");
        return NULL;
    }
    op->c = c;
    op->ctx = ctx;
    op->kind = kind;
    const char *account = bs_arg(c, "account");
    op->account = account ? strdup(account) : NULL;
    op->raw = json_array();
    return op;
}

/* A post link: at://AUTHORITY/app.bsky.feed.post/RKEY or
 * https://bsky.app/profile/AUTHORITY/post/RKEY. True with the parts. */
static bool post_link(const char *q, char *auth, size_t acap, char *rkey, size_t rcap)
{
    const char *rest, *mid;
    if (strncmp(q, "at://", 5) == 0) {
        rest = q + 5;
        mid = strstr(rest, "/app.bsky.feed.post/");
        if (mid == NULL)
            return false;
        snprintf(rkey, rcap, "%s", mid + strlen("/app.bsky.feed.post/"));
    } else if (strncmp(q, "https://bsky.app/profile/", 25) == 0) {
        rest = q + 25;
        mid = strstr(rest, "/post/");
        if (mid == NULL)
            return false;
        snprintf(rkey, rcap, "%s", mid + strlen("/post/"));
    } else {
        return false;
    }
    size_t n = (size_t)(mid - rest);
    if (n == 0 || n >= acap || rkey[0] == '\0')
        return false;
    memcpy(auth, rest, n);
    auth[n] = '\0';
    /* no spaces, slashes or queries in either part */
    return strpbrk(auth, " /?#") == NULL && strpbrk(rkey, " /?#") == NULL;
}

static void bs_search(mcp_call_t *c)
{
    const char *query = bs_arg(c, "query");
    if (query == NULL) {
        mcp_call_finish_error(c, "query is empty: give words to search for, or a post link "
                                 "(at://… or https://bsky.app/profile/…/post/…) for its thread.");
        return;
    }
    json_t *lim = json_object_get(c->args, "limit");
    bs_op_t *op = op_new(c, BS_SEARCH);
    if (op == NULL)
        return;
    op->query = strdup(query);
    op->limit = json_is_integer(lim) ? (int)json_integer_value(lim) : BS_DEFAULT_LIMIT;
    char auth[256], rkey[64];
    int rc;
    char trimmed[1100];
    snprintf(trimmed, sizeof trimmed, "%s", query);
    for (size_t n = strlen(trimmed); n > 0 && (trimmed[n - 1] == ' ' || trimmed[n - 1] == '\n');)
        trimmed[--n] = '\0';
    if (post_link(trimmed, auth, sizeof auth, rkey, sizeof rkey)) {
        op->kind = BS_THREAD;
        op->rkey = strdup(rkey);
        if (strncmp(auth, "did:", 4) == 0) {
            char uri[400];
            snprintf(uri, sizeof uri, "at://%s/app.bsky.feed.post/%s", auth, rkey);
            op->state = BSS_FETCH;
            rc = op_query(op, "app.bsky.feed.getPostThread",
                          json_pack("{s:s, s:i, s:i}", "uri", uri, "depth", BS_THREAD_DEPTH,
                                    "parentHeight", 80));
        } else {
            op->state = BSS_RESOLVE;
            rc = op_query(op, "com.atproto.identity.resolveHandle",
                          json_pack("{s:s}", "handle", auth[0] == '@' ? auth + 1 : auth));
        }
    } else {
        op->state = BSS_FETCH;
        /* cursor: the one a previous answer gave ("More: pass cursor"),
         * handed to Bluesky as it is. */
        const char *cursor = bs_arg(c, "cursor");
        json_t *params = json_pack("{s:s, s:i}", "q", query, "limit", op->limit);
        if (params && cursor)
            json_object_set_new(params, "cursor", json_string(cursor));
        rc = params ? op_query(op, "app.bsky.feed.searchPosts", params) : UV_ENOMEM;
    }
    if (rc != 0)
        op_fail(op, rc, NULL);
}

/* profile without handle: the account's own; its handle from the list. */
static void profile_accounts(void *data, int status, const char *json, const char *error)
{
    bs_op_t *op = data;
    if (status != 0) {
        op_fail(op, status, error);
        return;
    }
    json_t *list = json_loads(json, 0, NULL);
    size_t i;
    json_t *a;
    const char *handle = NULL;
    json_array_foreach(list, i, a)
    {
        if (json_is_true(json_object_get(a, "default")))
            handle = json_string_value(json_object_get(a, "handle"));
    }
    op->actor = handle ? strdup(handle) : NULL;
    json_decref(list);
    if (op->actor == NULL) {
        op_fail(op, UV_ENOENT, "no Bluesky account is logged in, and no handle was given");
        return;
    }
    op->state = BSS_FETCH;
    int rc = op_query(op, "app.bsky.actor.getProfile", json_pack("{s:s}", "actor", op->actor));
    if (rc != 0)
        op_fail(op, rc, NULL);
}

static void bs_profile(mcp_call_t *c)
{
    bs_op_t *op = op_new(c, BS_PROFILE);
    if (op == NULL)
        return;
    const char *handle = bs_arg(c, "handle");
    if (handle == NULL)
        handle = op->account; /* the account's own profile */
    int rc;
    if (handle == NULL) {
        rc = connector_accounts(op->ctx->conn, "list", NULL, profile_accounts, op);
    } else {
        op->actor = strdup(handle[0] == '@' ? handle + 1 : handle);
        op->state = BSS_FETCH;
        rc = op_query(op, "app.bsky.actor.getProfile", json_pack("{s:s}", "actor", op->actor));
    }
    if (rc != 0)
        op_fail(op, rc, NULL);
}

/* ---- table -------------------------------------------------------------- */

#define RO_OPEN (MCP_TOOL_READ_ONLY | MCP_TOOL_OPEN_WORLD)
#define OBJ(props, req)                                                                            \
    "{\"type\":\"object\",\"properties\":{" props "},\"required\":[" req                           \
    "],\"additionalProperties\":false}"
#define OUT_OBJ "{\"type\":\"object\"}"

static const mcp_tool_def_t tools[] = {
    {"login", "Bluesky login and accounts",
     "Logs in to Bluesky with an app password and keeps the session (refreshed by itself, "
     "kept across restarts), or manages the accounts with the subcommands list, default and "
     "delete. With no password, it asks: the handle by a form, the app password on a local page "
     "the user opens (it never passes through the chat). Use an app password, never the main "
     "account password.",
     OBJ("\"command\":{\"type\":\"string\",\"enum\":[\"list\",\"default\",\"delete\"],"
         "\"description\":\"list: the accounts; default: make handle the default; delete: "
         "forget handle. Absent: log in.\"},"
         "\"handle\":{\"type\":\"string\",\"description\":\"alice.bsky.social (or a DID)\"},"
         "\"password\":{\"type\":\"string\",\"description\":\"An app password (xxxx-xxxx-xxxx-"
         "xxxx). Leave out to be asked safely.\"},"
         "\"service\":{\"type\":\"string\",\"description\":\"The PDS or entryway URL (default: "
         "the server's)\"},"
         "\"port\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":65535,\"description\":\"Local "
         "port of the password page (default: any free one)\"}",
         ""),
     OUT_OBJ, MCP_TOOL_DESTRUCTIVE | MCP_TOOL_OPEN_WORLD, bs_login, NULL},
    {"profile", "Bluesky profile",
     "A Bluesky profile as Markdown: handle, name, DID, link, description (quoted), avatar, "
     "followers / following / posts, and the recent posts. handle: whose (default: the "
     "account's own). account: which logged-in account asks (default: the default one).",
     OBJ("\"account\":{\"type\":\"string\",\"description\":\"A logged-in handle (default: the "
         "default account)\"},"
         "\"handle\":{\"type\":\"string\",\"description\":\"Whose profile (default: the "
         "account's)\"}",
         ""),
     OUT_OBJ, RO_OPEN, bs_profile, NULL},
    {"search", "Search Bluesky posts",
     "Searches Bluesky posts (every line of a post is quoted with \"> \"; header @handle/rkey; "
     "stats 👍 likes ♻️ reposts 💬 replies and the time). A post link as query (at://… "
     "or "
     "https://bsky.app/profile/…/post/…) answers its whole thread instead, replies indented "
     "under what they answer. Posts found are kept in parley's archive; without a session or "
     "a connection the archive answers.",
     OBJ("\"account\":{\"type\":\"string\",\"description\":\"A logged-in handle (default: the "
         "default account)\"},"
         "\"query\":{\"type\":\"string\",\"maxLength\":" TOOL_QUERY_MAX
         ",\"minLength\":1,\"description\":\"Words (Bluesky "
         "search syntax: from:alice.bsky.social, \\\"exact phrase\\\", …), or a post link\"},"
         "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"description\":\"Posts "
         "(default 25)\"},"
         "\"cursor\":{\"type\":\"string\",\"maxLength\":512,\"description\":\"The next page: "
         "the cursor the previous answer gave (More: pass cursor …), with the same query\"}",
         "\"query\""),
     OUT_OBJ, RO_OPEN, bs_search, NULL},
};

static const mcp_toolset_t toolset_bluesky_mcp = {
    .name = "bluesky",
    .description = "Bluesky: login (elicitation), profiles, post search and threads as Markdown",
    .tools = tools,
    .ntools = (int)(sizeof tools / sizeof tools[0]),
};

static int bluesky_open(const toolset_env_t *env, void **out, char *err, size_t errcap)
{
    connector_t *conn = toolset_env_connector(env, CONNECTOR_CAN_QUERY);
    if (!connector_can(conn, CONNECTOR_CAN_QUERY) || !connector_can(conn, CONNECTOR_CAN_LOGIN)) {
        snprintf(err, errcap, "the bluesky toolset needs the Bluesky connector");
        return UV_EINVAL;
    }
    bs_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    ctx->archive = env->archive;
    ctx->conn = conn;
    ctx->pages = env->pages;
    login_rounds_init(&ctx->logins, &bs_login_ops);
    *out = ctx;
    return 0;
}

static void bluesky_close(void *ctx)
{
    if (ctx != NULL)
        login_rounds_close(&((bs_ctx_t *)ctx)->logins);
    free(ctx);
}

const toolset_t toolset_bluesky = {
    .mcp = &toolset_bluesky_mcp,
    .caps = CONNECTOR_CAPS_ACCOUNTS,
    .open = bluesky_open,
    .close = bluesky_close,
    .auto_sources = "bluesky",
    .auto_settings = "bluesky_service",
};
