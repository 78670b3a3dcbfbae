/* bluesky render: the bluesky toolset's answers (../shared/specs/bluesky-tools.md).
 * Turns Bluesky API views (app.bsky.feed postView / threadViewPost,
 * app.bsky.actor profileViewDetailed) into slim JSON, the structured content,
 * and renders slim JSON as the Markdown the tools answer. Pure: no I/O, no
 * globals. Every line of user content (post text, profile description) is
 * blockquoted ("> ", an empty line ">"), so it can never pass for the answer's
 * own structure; single-line fields (handles, alt texts, titles, URLs) have
 * their line breaks and other ASCII control characters replaced by spaces,
 * alt texts and titles have "\", "[" and "]" backslash-escaped, and URLs have
 * "(", ")", "<", ">", "\" and spaces percent-encoded, so none can break out
 * of its link or line. Any input may be malformed: missing fields and wrong
 * types are read as absent. */
#ifndef PARLEY_TOOLSETS_BLUESKY_RENDER_H
#define PARLEY_TOOLSETS_BLUESKY_RENDER_H

#include <jansson.h>

#include "util/buf.h"

/* Bound on one rendered answer (bsky_render_thread, _search, _profile). */
#define BSKY_RENDER_LIMIT (16u << 20)
/* The deepest level bsky_thread_slim reads: at most this many ancestors,
 * and no reply whose depth (from the top-most post) would pass it. */
#define BSKY_THREAD_MAX_DEPTH 1000
/* Indentation levels a reply header shows at most (deeper replies are
 * indented as this level; their compact reference still names the parent). */
#define BSKY_RENDER_MAX_INDENT 32

/* Slim post: what structuredContent carries and what the Markdown is made
 * from:
 *   {"uri", "cid"?, "rkey", "handle", "did"?, "displayName"?, "text",
 *    "createdAt"?, "likes", "reposts", "replies", "quotes",
 *    "images": [{"alt", "url"}],
 *    "link": {"uri", "title"}?, "quote": {"uri", "handle"?, "rkey"}?,
 *    "replyTo": {"uri", "handle"?, "rkey"}?, "depth"? (threads only)}
 * rkey is the last path segment of the at-URI. handle is the author's
 * handle, or the author's DID when the handle is absent or "handle.invalid".
 * text is the record's text ("" when absent); createdAt the record's
 * createdAt as given, else the post's indexedAt. Counts are >= 0. images
 * come from an images embed (also inside recordWithMedia), fullsize URL
 * else thumb; link from an external embed; quote from a record embed (handle
 * only when the quoted record has an author); replyTo from the record's
 * reply.parent.
 * Returns a new reference, or NULL when post_view is not an object with a
 * string "uri" and an "author" object with a handle or DID, or on ENOMEM. */
json_t *bsky_post_slim(const json_t *post_view);

/* Flattens an app.bsky.feed.getPostThread "thread" (threadViewPost with its
 * parent chain and nested replies; blockedPost / notFoundPost entries, and
 * whatever hangs below them, are skipped) into an array of slim posts in
 * reading order: the ancestors from the top, the focus post, then its
 * replies depth-first in the order given. Each post gets "depth": 0 for the
 * top-most post shown, +1 per level. A post whose record names no parent
 * gets the thread's parent as replyTo; replyTo.handle is filled when the
 * replied-to post is in the thread. Returns a new array (empty when thread is
 * not a readable threadViewPost), or NULL on ENOMEM. */
json_t *bsky_thread_slim(const json_t *thread);

/* Appends one post's Markdown to out:
 *   <header>\n
 *   > <text line>\n ...  (">" for an empty line; trailing line breaks of the
 *                          text dropped; "\r\n", "\r" and "\n" break lines)
 *   > ![alt](url)\n ...  > 🔗 [title](uri)\n  > ↪ @handle/rkey\n
 *   👍 n  ♻️ n  💬 n  <time>\n   (zero counts left out; no line when empty)
 * The header is "@handle/rkey"; a post with replyTo is
 * "<indent>└─<ref> → @handle/rkey", the indent two spaces per depth level
 * past 1 (at most BSKY_RENDER_MAX_INDENT levels). <ref> is the compact
 * "@<first character of the parent's handle>/…<last four characters of its
 * rkey>" when the parent is in thread (an array of slim posts, matched by
 * uri; the "…" is left out when the rkey has four characters or fewer),
 * else "@handle/rkey" when replyTo has a handle, else the parent's at-URI.
 * <time> is createdAt as YYYY-MM-DDTHH:MM:SS followed by its zone ("Z", the
 * offset as given, or nothing when it has none), fractional seconds dropped;
 * left out when it does not parse (the structured content keeps it): text
 * from upstream must not start a line. thread may be NULL (no compact
 * references). A slim that is not an object appends nothing.
 * Returns 0, or the buf error (UV_ENOBUFS, UV_ENOMEM); out is then as it
 * was before the call. */
int bsky_render_post(buf_t *out, const json_t *slim, const json_t *thread);

/* Appends the posts of the array slim_posts (entries that are not objects
 * skipped), separated by one blank line, each rendered with
 * bsky_render_post(out, post, thread). Returns as bsky_render_post; out is
 * then as it was before the call. */
int bsky_render_posts(buf_t *out, const json_t *slim_posts, const json_t *thread);

/* Whole answers. Each returns a NUL-terminated malloc'd string the caller
 * frees, or NULL on ENOMEM or past BSKY_RENDER_LIMIT. N counts the object
 * entries of slim_posts (NULL or a non-array: none).
 *
 * Thread: "# Thread · N posts", a blank line, the posts with compact
 * references to the posts shown (slim_posts as bsky_thread_slim made it). */
char *bsky_render_thread(const json_t *slim_posts);

/* Search: "# Search · \"query\" · N posts", a blank line, the posts (no
 * compact references: every reply names its parent in full), a blank line,
 * "Results: N posts" and, when cursor is non-NULL, "More: pass cursor
 * \"cursor\"". query and cursor are written JSON-escaped inside the quotes
 * (query NULL: ""). */
char *bsky_render_search(const char *query, const json_t *slim_posts, const char *cursor);

/* The profile as slim JSON for structuredContent:
 *   {"handle", "did"?, "displayName"?, "description"?, "avatar"?,
 *    "followers", "follows", "posts", "createdAt"?, "url"}
 * handle falls back to the DID as in bsky_post_slim; url is
 * "https://bsky.app/profile/<handle>". Returns a new reference, or NULL when
 * profile is not an object with a handle or DID, or on ENOMEM. */
json_t *bsky_profile_slim(const json_t *profile);

/* Profile: app.bsky.actor.getProfile's answer (profileViewDetailed) and
 * optional recent posts (slim, may be NULL):
 *   # @handle · Display Name       (" · Display Name" only when there is one)
 *   https://bsky.app/profile/<handle>
 *   DID: <did>                     (when known)
 *   > <description lines>          (when not empty)
 *   ![avatar](<url>)               (when there is one)
 *   👥 n followers · n following · n posts
 * then, when slim_posts has posts, a blank line, "## Recent posts", a blank
 * line and the posts as bsky_render_posts(…, NULL) renders them. Returns as
 * the answers above, and NULL too when profile is not readable (see
 * bsky_profile_slim). */
char *bsky_render_profile(const json_t *profile, const json_t *slim_posts);

#endif
