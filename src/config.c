/* config: settings table, defaults, file and environment loading (see
 * config.h). One table drives parsing, the help text and the reference
 * in docs/configuration.md (parleyd --help-config, tools/gen-docs), so the
 * three cannot drift apart. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "mcp/server.h"
#include "util/secret_file.h"
#include "util/strutil.h"

/* OPT_LIST: a comma-separated string; on the command line, given again it
 * adds to the list instead of replacing it. */
typedef enum { OPT_STR, OPT_LIST, OPT_INT, OPT_LOGLEVEL, OPT_BOOL } opt_type_t;

typedef struct {
    const char *key;
    const char *env;
    opt_type_t type;
    size_t offset;
    size_t size; /* OPT_STR, OPT_LIST: capacity */
    long min, max;
    /* The default, stated once: for OPT_INT the number inum (def NULL);
     * else def is the value, unless it is in parentheses ("(none)"):
     * then the value is empty (or derived: data_dir) and def only says
     * what that means. config_init applies it; the reference shows it. */
    const char *def;
    const char *help;
    const char *arg; /* placeholder for the value in the reference */
    long inum;
} opt_t;

#define OFF(f) offsetof(config_t, f)
#define SZ(f)  sizeof(((config_t *)0)->f)

static const opt_t opts[] = {
    {"data_dir", "PARLEY_DATA_DIR", OPT_STR, OFF(data_dir), SZ(data_dir), 0, 0,
     "($XDG_DATA_HOME/parley; as root: /var/lib/parley)",
     "Directory for the embedded PostgreSQL cluster and local state.", "DIR", 0},
    {"db", "DATABASE_URL", OPT_STR, OFF(db_url), SZ(db_url), 0, 0, "(embedded cluster)",
     "PostgreSQL URL or conninfo of an existing server. PARLEY_DB and the libpq PG* "
     "variables (PGHOST, PGDATABASE, PGSERVICE) also select an external server.",
     "URL", 0},
    {"memory_db", "PARLEY_MEMORY_DB", OPT_STR, OFF(memory_db), SZ(memory_db), 0, 0, "(none)",
     "PostgreSQL URL of a memory-lane (Django) database for the memory toolset; read in "
     "read-only sessions, never written.",
     "URL", 0},
    {"chatwise_db", "PARLEY_CHATWISE_DB", OPT_STR, OFF(chatwise_db), SZ(chatwise_db), 0, 0,
     "(none)",
     "ChatWise's app.db (or its folder): serve re-imports it when it changes, checked every "
     "chatwise_interval_s, so the chatwise toolset follows the app.",
     "PATH", 0},
    {"chatwise_interval_s", "PARLEY_CHATWISE_INTERVAL_S", OPT_INT, OFF(chatwise_interval_s), 0, 1,
     86400, NULL, "How often serve checks chatwise_db for changes.", "S",
     CONFIG_DEFAULT_CHATWISE_INTERVAL_S},
    {"claude_code_dir", "PARLEY_CLAUDE_CODE_DIR", OPT_STR, OFF(claude_code_dir),
     SZ(claude_code_dir), 0, 0, "(none)",
     "Claude Code's projects folder (usually ~/.claude/projects): serve follows it, storing new "
     "sessions and appended lines within seconds (memory toolset, recall); one daemon follows a "
     "folder at a time.",
     "DIR", 0},
    {"codex_dir", "PARLEY_CODEX_DIR", OPT_STR, OFF(codex_dir), SZ(codex_dir), 0, 0, "(none)",
     "Codex CLI's sessions folder (usually ~/.codex/sessions, or $CODEX_HOME/sessions): serve "
     "follows it as claude_code_dir, its rollouts stored within seconds; one daemon follows a "
     "folder at a time.",
     "DIR", 0},
    {"transcripts_rescan_s", "PARLEY_TRANSCRIPTS_RESCAN_S", OPT_INT, OFF(transcripts_rescan_s), 0,
     1, 86400, NULL,
     "How often serve walks a followed transcripts folder whole, besides the kernel's change "
     "events (a change it missed).",
     "S", CONFIG_DEFAULT_TRANSCRIPTS_RESCAN_S},
    {"search_languages", "PARLEY_SEARCH_LANGUAGES", OPT_STR, OFF(search_languages),
     SZ(search_languages), 0, 0, CONFIG_DEFAULT_SEARCH_LANGUAGES,
     "PostgreSQL text search configurations whose word forms the archive search matches, "
     "comma-separated (any configuration of the database); '' matches words as written only. "
     "A change refills the forms in the background (docs/search.md).",
     "LIST", 0},
    {"search_fill_batch", "PARLEY_SEARCH_FILL_BATCH", OPT_INT, OFF(search_fill_batch), 0, 100,
     1000000, NULL,
     "Rows a statement fills with word forms when search_languages changes, or reads into the "
     "fuzzy search's vocabulary after an upgrade (shorter locks, more statements).",
     "ROWS", CONFIG_DEFAULT_SEARCH_FILL_BATCH},
    {"db_ro", "PARLEY_DB_RO", OPT_STR, OFF(db_ro_url), SZ(db_ro_url), 0, 0, "(same as db)",
     "Server for the read-only pool, e.g. a replica. Sessions are read-only either way.", "URL", 0},
    {"log_level", "PARLEY_LOG_LEVEL", OPT_LOGLEVEL, OFF(log_level), 0, 0, 0, "info",
     "debug, info, warn, error or off. Logs go to stderr only.", "LEVEL", 0},
    {"pg_user", "PARLEY_PG_USER", OPT_STR, OFF(pg_user), SZ(pg_user), 0, 0, "parley",
     "Unprivileged system user that runs the embedded cluster when parleyd runs as root; "
     "created if missing.",
     "USER", 0},
    {"pg_bindir", "PARLEY_PG_BINDIR", OPT_STR, OFF(pg_bindir), SZ(pg_bindir), 0, 0,
     PARLEY_PG_BINDIR, "Directory holding initdb, pg_ctl and postgres.", "DIR", 0},
    {"pg_start_timeout_s", "PARLEY_PG_START_TIMEOUT_S", OPT_INT, OFF(pg_start_timeout_s), 0, 5,
     3600, NULL, "Seconds to wait for the embedded cluster to start.", "SECONDS",
     CONFIG_DEFAULT_PG_START_TIMEOUT_S},
    {"db_pool_size", "PARLEY_DB_POOL_SIZE", OPT_INT, OFF(db_pool_size), 0, 1, 256, NULL,
     "Connections in the read-write pool.", "N", CONFIG_DEFAULT_DB_POOL_SIZE},
    {"db_ro_pool_size", "PARLEY_DB_RO_POOL_SIZE", OPT_INT, OFF(db_ro_pool_size), 0, 1, 256, NULL,
     "Connections in the read-only pool.", "N", CONFIG_DEFAULT_DB_RO_POOL_SIZE},
    {"search_max_conns", "PARLEY_SEARCH_MAX_CONNS", OPT_INT, OFF(search_max_conns), 0, 1, 256, NULL,
     "Searches that may hold a read-only connection at once (at most the read-only pool's "
     "size less one); more wait while other reads pass them.",
     "N", CONFIG_DEFAULT_SEARCH_MAX_CONNS},
    {"search_max_conns_per_principal", "PARLEY_SEARCH_MAX_CONNS_PER_PRINCIPAL", OPT_INT,
     OFF(search_max_conns_per_principal), 0, 0, 256, NULL,
     "Of those, how many one principal (a bearer token; without one, its endpoint) may hold at "
     "once; 0: with a token_file, search_max_conns less one (at least one), so another "
     "token's search never waits for all of them; without tokens, all of them. Waiting "
     "searches take turns between principals.",
     "N", CONFIG_DEFAULT_SEARCH_MAX_CONNS_PER_PRINCIPAL},
    {"search_regex_timeout_ms", "PARLEY_SEARCH_REGEX_TIMEOUT_MS", OPT_INT,
     OFF(search_regex_timeout_ms), 0, 100, 3600000, NULL,
     "Time limit of a search with a regex once it holds a connection; past it the search is "
     "stopped and the tool answers isError saying how to make the regex cheaper.",
     "MS", CONFIG_DEFAULT_SEARCH_REGEX_TIMEOUT_MS},
    {"db_queue_max", "PARLEY_DB_QUEUE_MAX", OPT_INT, OFF(db_queue_max), 0, 1, 1000000, NULL,
     "Queries that may wait for a connection per pool; past it a query fails at once "
     "with a busy error (a tool answers isError naming db_queue_max).",
     "N", CONFIG_DEFAULT_DB_QUEUE_MAX},
    {"db_query_timeout_ms", "PARLEY_DB_QUERY_TIMEOUT_MS", OPT_INT, OFF(db_query_timeout_ms), 0, 100,
     3600000, NULL, "Default time limit of a query, queue wait included.", "MS",
     CONFIG_DEFAULT_DB_QUERY_TIMEOUT_MS},
    {"db_connect_timeout_ms", "PARLEY_DB_CONNECT_TIMEOUT_MS", OPT_INT, OFF(db_connect_timeout_ms),
     0, 100, 600000, NULL, "Time limit of one connection attempt (DNS included).", "MS",
     CONFIG_DEFAULT_DB_CONNECT_TIMEOUT_MS},
    {"shutdown_timeout_ms", "PARLEY_SHUTDOWN_TIMEOUT_MS", OPT_INT, OFF(shutdown_timeout_ms), 0, 100,
     600000, NULL, "Time the first SIGTERM/SIGINT gives in-flight work to drain.", "MS",
     CONFIG_DEFAULT_SHUTDOWN_TIMEOUT_MS},
    {"toolsets", "PARLEY_TOOLSETS", OPT_STR, OFF(toolsets), SZ(toolsets), 0, 0, "auto",
     "Comma-separated toolsets to serve; 'all': every toolset except 'conformance' (served "
     "only when named); 'auto': those of 'all' that have data or settings to serve (recall "
     "always; the others once their data arrives).",
     "LIST", 0},
    {"read_only", "PARLEY_READ_ONLY", OPT_BOOL, OFF(read_only), 0, 0, 0, "false",
     "Serve only tools that are read-only (readOnlyHint).", "[BOOL]", 0},
    {"stdio", "PARLEY_STDIO", OPT_BOOL, OFF(stdio), 0, 0, 0, "false",
     "Serve one MCP session on stdin/stdout; exit 0 when stdin ends.", "[BOOL]", 0},
    {"listen", "PARLEY_LISTEN", OPT_LIST, OFF(listen), SZ(listen), 0, 0, "(none)",
     "Comma-separated MCP endpoints: unix:PATH, tcp://HOST:PORT, http://HOST:PORT/PATH, "
     "https://HOST:PORT/PATH; --listen given several times adds endpoints. TCP and HTTP bind "
     "to loopback unless tokens are configured.",
     "LIST", 0},
    {"tls_cert", "PARLEY_TLS_CERT", OPT_STR, OFF(tls_cert), SZ(tls_cert), 0, 0, "(none)",
     "PEM certificate chain for TLS on tcp:// and https:// endpoints.", "FILE", 0},
    {"tls_key", "PARLEY_TLS_KEY", OPT_STR, OFF(tls_key), SZ(tls_key), 0, 0, "(none)",
     "PEM private key matching tls_cert.", "FILE", 0},
    {"token_file", "PARLEY_TOKEN_FILE", OPT_STR, OFF(token_file), SZ(token_file), 0, 0, "(none)",
     "Bearer tokens, one per line: TOKEN [toolsets=a,b] [read_only] [metrics] (metrics: the token "
     "may read /metrics, which otherwise needs full access).",
     "FILE", 0},
    {"allow_anonymous", "PARLEY_ALLOW_ANONYMOUS", OPT_LIST, OFF(allow_anonymous),
     SZ(allow_anonymous), 0, 0, "(none)",
     "Comma-separated loopback endpoints, written as in listen, served without a token when "
     "token_file is set; every other tcp:// or http(s):// endpoint then needs one (a tcp:// "
     "endpoint cannot carry one: serve is refused until it is named here). unix: sockets are "
     "owner-only and need none.",
     "LIST", 0},
    {"state_key_file", "PARLEY_STATE_KEY_FILE", OPT_STR, OFF(state_key_file), SZ(state_key_file), 0,
     0, "(DATA_DIR/mcp-state.key)",
     "Key that seals MCP 2026-07-28 requestState (created, mode 0600, when missing); daemons "
     "behind one balancer share it.",
     "FILE", 0},
    {"allowed_origins", "PARLEY_ALLOWED_ORIGINS", OPT_STR, OFF(allowed_origins),
     SZ(allowed_origins), 0, 0, "(loopback origins)",
     "Comma-separated Origin values HTTP requests may carry besides loopback ones.", "LIST", 0},
    {"max_message_bytes", "PARLEY_MAX_MESSAGE_BYTES", OPT_INT, OFF(max_message_bytes), 0, 1024,
     256 * 1024 * 1024, NULL,
     "Largest MCP message accepted; a larger one is answered with an error and dropped.", "BYTES",
     MCP_DEFAULT_MAX_MESSAGE_BYTES},
    {"session_max_inflight", "PARLEY_SESSION_MAX_INFLIGHT", OPT_INT, OFF(session_max_inflight), 0,
     1, 100000, NULL, "Requests one session may have in flight before its input is paused.", "N",
     MCP_DEFAULT_SESSION_MAX_INFLIGHT},
    {"output_high_water", "PARLEY_OUTPUT_HIGH_WATER", OPT_INT, OFF(output_high_water), 0, 1024,
     1024 * 1024 * 1024, NULL, "Queued output bytes above which a session stops being read.",
     "BYTES", MCP_DEFAULT_OUTPUT_HIGH_WATER},
    {"output_low_water", "PARLEY_OUTPUT_LOW_WATER", OPT_INT, OFF(output_low_water), 0, 0,
     1024 * 1024 * 1024, NULL, "Queued output bytes below which reading resumes.", "BYTES",
     MCP_DEFAULT_OUTPUT_LOW_WATER},
    {"output_hard_limit", "PARLEY_OUTPUT_HARD_LIMIT", OPT_INT, OFF(output_hard_limit), 0, 4096,
     1024 * 1024 * 1024, NULL,
     "Queued output bytes past which a session that does not read is disconnected.", "BYTES",
     MCP_DEFAULT_OUTPUT_HARD_LIMIT},
    {"max_active_calls", "PARLEY_MAX_ACTIVE_CALLS", OPT_INT, OFF(max_active_calls), 0, 1, 10000000,
     NULL,
     "Tool calls running at once across all sessions; past it a call gets a busy error with "
     "retryAfterMs.",
     "N", MCP_DEFAULT_MAX_ACTIVE_CALLS},
    {"max_sessions", "PARLEY_MAX_SESSIONS", OPT_INT, OFF(max_sessions), 0, 1, 1000000, NULL,
     "Open sessions across all transports; past it new connections are refused.", "N",
     MCP_DEFAULT_MAX_SESSIONS},
    {"principal_session_share", "PARLEY_PRINCIPAL_SESSION_SHARE", OPT_INT,
     OFF(principal_session_share), 0, 1, 100, NULL,
     "Percent of max_sessions one principal may hold open (a bearer token; without a token, "
     "the endpoint): HTTP sessions, 2026-07-28 requests and listens, socket connections. Past "
     "it that principal is refused (HTTP 429) and the rest stays for the others; 100 turns the "
     "reserve off. Without a token_file it is 100 unless set (every client is the one user).",
     "PERCENT", MCP_DEFAULT_PRINCIPAL_SHARE},
    {"http_max_pending_conns", "PARLEY_HTTP_MAX_PENDING_CONNS", OPT_INT,
     OFF(http_max_pending_conns), 0, 1, 100000, NULL,
     "Connections per HTTP endpoint that have not completed a request (slow or silent "
     "clients); past it the oldest of them is dropped for each new one.",
     "N", CONFIG_DEFAULT_HTTP_MAX_PENDING_CONNS},
    {"request_timeout_ms", "PARLEY_REQUEST_TIMEOUT_MS", OPT_INT, OFF(request_timeout_ms), 0, 100,
     3600000, NULL, "Time a client has to answer a server request (elicitation, sampling).", "MS",
     MCP_DEFAULT_REQUEST_TIMEOUT_MS},
    {"init_timeout_ms", "PARLEY_INIT_TIMEOUT_MS", OPT_INT, OFF(init_timeout_ms), 0, 0, 3600000,
     NULL,
     "Time a socket connection has to send initialize (TLS handshake included); then it is "
     "closed. 0: no limit.",
     "MS", MCP_DEFAULT_INIT_TIMEOUT_MS},
    {"tz", "PARLEY_TZ", OPT_STR, OFF(tz), SZ(tz), 0, 0, "+00:00",
     "import: UTC offset of the local times of exports without date_unixtime (about 2020), "
     "e.g. +03:00.",
     "OFFSET", 0},
    {"eras", "PARLEY_ERAS", OPT_STR, OFF(eras), SZ(eras), 0, 0, "(none)",
     "import claude-code: a JSON file naming eras, {\"KEY\": \"Era name\"}, KEY a project "
     "folder (as under ~/.claude/projects) or a session's working directory; without it an "
     "era is named after the project's folder.",
     "FILE", 0},
    {"timezone", "PARLEY_TIMEZONE", OPT_STR, OFF(timezone), SZ(timezone), 0, 0, "UTC",
     "IANA time zone of relative dates in tool arguments (the inline toolset's \"yesterday\" "
     "is a whole day there), e.g. Europe/Berlin.",
     "ZONE", 0},
    {"export_root", "PARLEY_EXPORT_ROOT", OPT_STR, OFF(export_root), SZ(export_root), 0, 0,
     "(DATA_DIR/exports)",
     "The only directory the mediaDownload tool writes into (no symbolic link under it is "
     "followed).",
     "DIR", 0},
    {"upload_root", "PARLEY_UPLOAD_ROOT", OPT_STR, OFF(upload_root), SZ(upload_root), 0, 0,
     "(DATA_DIR/uploads)",
     "The only directory messagesSendFile reads files from (no symbolic link under it is "
     "followed; the root itself may be one).",
     "DIR", 0},
    {"telegram_bot_token", "TELEGRAM_BOT_TOKEN", OPT_STR, OFF(telegram_bot_token),
     SZ(telegram_bot_token), 0, 0, "(none)",
     "Telegram bot token: serve syncs the bot's chats in real time and can send. Secret: never "
     "logged; prefer the environment or the config file to a flag.",
     "TOKEN", 0},
    {"telegram_api_url", "PARLEY_TELEGRAM_API_URL", OPT_STR, OFF(telegram_api_url),
     SZ(telegram_api_url), 0, 0, "https://api.telegram.org",
     "Bot API server (a self-hosted one, or a test server).", "URL", 0},
    {"telegram_tdjson", "TELEGRAM_TDJSON", OPT_STR, OFF(telegram_tdjson), SZ(telegram_tdjson), 0, 0,
     "libtdjson.so",
     "TDLib's JSON library (libtdjson), loaded at run time for Telegram user accounts: a path, "
     "or a name the dynamic loader looks up, else in /usr/local/lib (where deps/install.sh "
     "installs it).",
     "PATH", 0},
    {"telegram_api_id", "TELEGRAM_API_ID", OPT_INT, OFF(telegram_api_id), 0, 0, 2147483647, NULL,
     "The api_id of your Telegram application (my.telegram.org): needed to sign in and serve a "
     "user account. With telegram_api_hash set and the telegram toolset selected, serve runs "
     "the user-account connector also before any account is signed in (authLogin).",
     "N", 0},
    {"telegram_api_hash", "TELEGRAM_API_HASH", OPT_STR, OFF(telegram_api_hash),
     SZ(telegram_api_hash), 0, 0, "(none)",
     "The api_hash of that application. Secret: never logged; prefer the environment or the "
     "config file to a flag.",
     "HASH", 0},
    {"telegram_td_timeout_s", "PARLEY_TELEGRAM_TD_TIMEOUT_S", OPT_INT, OFF(telegram_td_timeout_s),
     0, 1, 3600, NULL,
     "A TDLib request of a user account unanswered this long fails (the tool or job says so and "
     "a job is retried).",
     "SECONDS", 60 /* tdjson.h TDJSON_REQUEST_TIMEOUT_MS */},
    {"telegram_history_jobs", "PARLEY_TELEGRAM_HISTORY_JOBS", OPT_INT, OFF(telegram_history_jobs),
     0, 1, 16, NULL,
     "History backfill jobs (syncJobsAdd through a user account) one daemon runs at once, each "
     "on its own chat.",
     "N", 2 /* tg_user_internal.h TGU_HISTORY_JOBS */},
    {"phone", "PARLEY_PHONE", OPT_STR, OFF(phone), SZ(phone), 0, 0, "(none)",
     "login telegram: the phone number of the account to sign in (+ and digits).", "PHONE", 0},
    {"account", "PARLEY_ACCOUNT", OPT_STR, OFF(account), SZ(account), 0, 0,
     "(the phone number's digits)",
     "login telegram: the name the account is kept under (a letter or digit, then letters, "
     "digits, _ and -), to tell several accounts apart; one Telegram user is one account.",
     "NAME", 0},
    {"bluesky_service", "PARLEY_BLUESKY_SERVICE", OPT_STR, OFF(bluesky_service),
     SZ(bluesky_service), 0, 0, "https://bsky.social",
     "Bluesky service (PDS or entryway) the bluesky toolset logs in at, trusted (a service a "
     "tool names goes through the address policy). A self-hosted PDS, or a test server.",
     "URL", 0},
    {"bluesky_refresh_s", "PARLEY_BLUESKY_REFRESH_S", OPT_INT, OFF(bluesky_refresh_s), 0, 0, 86400,
     NULL,
     "How often serve fetches the default Bluesky account's own posts into the archive "
     "(job bluesky.refresh); 0: never.",
     "S", CONFIG_DEFAULT_BLUESKY_REFRESH_S},
    {"telegram_poll_timeout_s", "PARLEY_TELEGRAM_POLL_TIMEOUT_S", OPT_INT,
     OFF(telegram_poll_timeout_s), 0, 1, 50, NULL, "Long-poll timeout of getUpdates.", "SECONDS",
     25},
    {"telegram_file_limit_mb", "PARLEY_TELEGRAM_FILE_LIMIT_MB", OPT_INT,
     OFF(telegram_file_limit_mb), 0, 1, 4000, NULL,
     "Largest file downloaded through the Bot API (the public server serves 20 MB; a "
     "self-hosted one up to 2000).",
     "MB", 20},
    {"telegram_media_stall_s", "PARLEY_TELEGRAM_MEDIA_STALL_S", OPT_INT,
     OFF(telegram_media_stall_s), 0, 1, 3600, NULL,
     "A media download (or its getFile call) that receives no byte for this long fails and is "
     "retried later.",
     "SECONDS", 60 /* tg_media.h TG_MEDIA_STALL_MS */},
    {"telegram_media_retry_max_s", "PARLEY_TELEGRAM_MEDIA_RETRY_MAX_S", OPT_INT,
     OFF(telegram_media_retry_max_s), 0, 1, 86400, NULL,
     "A media download that failed for a passing reason (network, a server error, a truncated "
     "body, a full disk) is retried, waiting 2 s, then twice as long each time, at most this "
     "long; it is never given up.",
     "SECONDS", 300 /* tg_media.h TG_MEDIA_RETRY_MAX_MS */},
    {"inline_upload_max_mb", "PARLEY_INLINE_UPLOAD_MAX_MB", OPT_INT, OFF(inline_upload_max_mb), 0,
     1, 2000, NULL, "Largest file files_upload takes (base64 or fetched from a URL).", "MB", 20},
    {"url_timeout_s", "PARLEY_URL_TIMEOUT_S", OPT_INT, OFF(url_timeout_s), 0, 1, 3600, NULL,
     "Time limit of fetching a URL a tool gave (files_upload).", "SECONDS", 30},
    {"url_allow_http", "PARLEY_URL_ALLOW_HTTP", OPT_BOOL, OFF(url_allow_http), 0, 0, 0, "false",
     "Let tools fetch plain http:// URLs too (for tests; https only otherwise).", "[BOOL]", 0},
    {"url_allow_addresses", "PARLEY_URL_ALLOW_ADDRESSES", OPT_LIST, OFF(url_allow_addresses),
     SZ(url_allow_addresses), 0, 0, "(none)",
     "Comma-separated addresses tools may fetch from although they are loopback, private or "
     "reserved (for tests, e.g. 127.0.0.2); every other such address is refused.",
     "LIST", 0},
    {"list_page_size", "PARLEY_LIST_PAGE_SIZE", OPT_INT, OFF(list_page_size), 0, 1, 10000, NULL,
     "Entries per page of tools/list, resources/list and prompts/list.", "N",
     MCP_DEFAULT_TOOLS_PAGE_SIZE},
};
#define OPT_COUNT (sizeof opts / sizeof opts[0])

_Static_assert(OPT_COUNT <= sizeof(((config_t *)0)->source) / sizeof(config_source_t),
               "config_t.source too small");

static const opt_t *opt_find(const char *key, size_t *index)
{
    for (size_t i = 0; i < OPT_COUNT; i++) {
        if (strcmp(opts[i].key, key) == 0) {
            if (index)
                *index = i;
            return &opts[i];
        }
    }
    return NULL;
}

bool config_has_key(const char *key)
{
    return opt_find(key, NULL) != NULL;
}

bool config_key_is_bool(const char *key)
{
    const opt_t *o = opt_find(key, NULL);
    return o != NULL && o->type == OPT_BOOL;
}

const char *config_source_name(config_source_t src)
{
    static const char *const names[] = {"default", "file", "environment", "flag"};
    return src <= CONFIG_SRC_FLAG ? names[src] : "?";
}

int config_source_of(const config_t *cfg, const char *key)
{
    size_t i;
    return opt_find(key, &i) ? (int)cfg->source[i] : -1;
}

int config_init(config_t *cfg, char *err, size_t errcap)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < OPT_COUNT; i++) {
        const opt_t *o = &opts[i];
        if (o->type == OPT_INT) {
            *(int *)((char *)cfg + o->offset) = (int)o->inum;
        } else if (o->def[0] != '(') {
            int rc = config_set(cfg, o->key, o->def, CONFIG_SRC_DEFAULT, err, errcap);
            if (rc != 0)
                return rc; /* a bug in the table: the test of config catches it */
        }
    }

    /* A root daemon keeps its state where system daemons do: the cluster
     * runs as an unprivileged user that cannot enter /root. */
    const char *xdg = getenv("XDG_DATA_HOME");
    const char *home = getenv("HOME");
    bool ok;
    if (geteuid() == 0)
        ok = str_copy(cfg->data_dir, sizeof cfg->data_dir, "/var/lib/parley");
    else if (xdg && xdg[0] == '/')
        ok = str_fmt(cfg->data_dir, sizeof cfg->data_dir, "%s/parley", xdg);
    else if (home && home[0] == '/')
        ok = str_fmt(cfg->data_dir, sizeof cfg->data_dir, "%s/.local/share/parley", home);
    else {
        snprintf(err, errcap, "cannot derive a data directory: HOME is not set; pass --data-dir");
        return UV_EINVAL;
    }
    if (!ok) {
        snprintf(err, errcap, "default data directory path is too long; pass --data-dir");
        return UV_EINVAL;
    }
    return 0;
}

int config_set(config_t *cfg, const char *key, const char *value, config_source_t src, char *err,
               size_t errcap)
{
    size_t idx;
    const opt_t *o = opt_find(key, &idx);
    if (o == NULL) {
        snprintf(err, errcap, "unknown setting '%s'", key);
        return UV_ENOENT;
    }
    char *field = (char *)cfg + o->offset;
    switch (o->type) {
    case OPT_LIST:
        if (src == CONFIG_SRC_FLAG && cfg->source[idx] == CONFIG_SRC_FLAG && field[0] && value[0]) {
            /* Given again on the command line: adds to the list. */
            size_t n = strlen(field);
            if (n + 1 + strlen(value) >= o->size) {
                snprintf(err, errcap, "%s: the list is too long (at most %zu bytes)", key,
                         o->size - 1);
                return UV_EINVAL;
            }
            field[n] = ',';
            memcpy(field + n + 1, value, strlen(value) + 1);
            break;
        }
        /* fall through */
    case OPT_STR:
        if (!str_copy(field, o->size, value)) {
            snprintf(err, errcap, "%s: value is too long (at most %zu bytes)", key, o->size - 1);
            return UV_EINVAL;
        }
        if (strcmp(key, "data_dir") == 0 && value[0] == '\0') {
            snprintf(err, errcap, "data_dir: must not be empty");
            return UV_EINVAL;
        }
        if (strcmp(key, "pg_user") == 0 && value[0] == '\0') {
            snprintf(err, errcap, "pg_user: must not be empty");
            return UV_EINVAL;
        }
        break;
    case OPT_INT: {
        int64_t v;
        if (!str_parse_i64(value, o->min, o->max, &v)) {
            snprintf(err, errcap, "%s: '%s' is not an integer between %ld and %ld", key, value,
                     o->min, o->max);
            return UV_EINVAL;
        }
        *(int *)field = (int)v;
        break;
    }
    case OPT_BOOL:
        if (!str_parse_bool(value, (bool *)field)) {
            snprintf(err, errcap, "%s: '%s' is not a boolean (true/false, yes/no, on/off, 1/0)",
                     key, value);
            return UV_EINVAL;
        }
        break;
    case OPT_LOGLEVEL:
        if (!log_level_parse(value, (log_level_t *)field)) {
            snprintf(err, errcap, "%s: '%s' is not one of debug, info, warn, error, off", key,
                     value);
            return UV_EINVAL;
        }
        break;
    }
    if (strcmp(key, "db") == 0)
        cfg->db_external = value[0] != '\0';
    cfg->source[idx] = src;
    return 0;
}

int config_get(const config_t *cfg, const char *key, char *out, size_t cap)
{
    const opt_t *o = opt_find(key, NULL);
    if (cap == 0)
        return UV_EINVAL;
    out[0] = '\0';
    if (o == NULL)
        return UV_ENOENT;
    const char *field = (const char *)cfg + o->offset;
    switch (o->type) {
    case OPT_LIST:
    case OPT_STR:
        snprintf(out, cap, "%s", field);
        break;
    case OPT_INT:
        snprintf(out, cap, "%d", *(const int *)field);
        break;
    case OPT_BOOL:
        snprintf(out, cap, "%s", *(const bool *)field ? "true" : "false");
        break;
    case OPT_LOGLEVEL:
        snprintf(out, cap, "%s", log_level_name(*(const log_level_t *)field));
        break;
    }
    return 0;
}

/* Unquotes a "value" in place; returns NULL on an unterminated quote. */
static char *unquote(char *v)
{
    size_t n = strlen(v);
    if (n == 0 || (v[0] != '"' && v[0] != '\''))
        return v;
    if (n < 2 || v[n - 1] != v[0])
        return NULL;
    v[n - 1] = '\0';
    return v + 1;
}

/* A database URL or conninfo that carries a password: "password=" in a
 * conninfo or a URL's query, or a URL's user:password@. */
static bool holds_password(const char *v)
{
    if (strcasestr(v, "password") != NULL)
        return true;
    const char *p = strstr(v, "://");
    if (p == NULL)
        return false;
    p += 3;
    size_t auth = strcspn(p, "/?#");
    const char *at = memchr(p, '@', auth);
    return at != NULL && memchr(p, ':', (size_t)(at - p)) != NULL;
}

const char *config__secret_key(const char *key, const char *value)
{
    static const char *const tokens[] = {"telegram_bot_token", "telegram_api_hash"};
    static const char *const urls[] = {"db", "db_ro", "memory_db"};
    for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++)
        if (strcmp(key, tokens[i]) == 0 && value[0] != '\0')
            return tokens[i];
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++)
        if (strcmp(key, urls[i]) == 0 && holds_password(value))
            return urls[i];
    return NULL;
}

int config_load_file(config_t *cfg, const char *path, char *err, size_t errcap)
{
    /* Read once at start-up, before the loop serves anything; the size cap
     * bounds the synchronous read. Opened without blocking (a FIFO is
     * refused, not waited on); a file that sets a secret falls under
     * secret_file's mode rule, checked once the file is read. */
    struct stat st;
    FILE *f = NULL;
    int orc = secret_file_fopen(path, 0, "config file", &f, &st, err, errcap);
    if (orc != 0)
        return orc;
    const char *secret = NULL;
    char line[4096];
    int lineno = 0, rc = 0;
    size_t total = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        total += strlen(line);
        if (total > CONFIG_FILE_MAX_BYTES) {
            snprintf(err, errcap, "config file %s: larger than %d bytes", path,
                     CONFIG_FILE_MAX_BYTES);
            rc = UV_E2BIG;
            break;
        }
        if (strchr(line, '\n') == NULL && !feof(f)) {
            snprintf(err, errcap, "%s:%d: line too long", path, lineno);
            rc = UV_EINVAL;
            break;
        }
        char *s = str_trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (eq == NULL) {
            snprintf(err, errcap, "%s:%d: expected 'key = value'", path, lineno);
            rc = UV_EINVAL;
            break;
        }
        *eq = '\0';
        char *key = str_trim(s);
        char *value = unquote(str_trim(eq + 1));
        if (value == NULL) {
            snprintf(err, errcap, "%s:%d: unterminated quote", path, lineno);
            rc = UV_EINVAL;
            break;
        }
        for (char *k = key; *k; k++)
            if (*k == '-')
                *k = '_';
        char msg[CONFIG_ERR_MAX];
        rc = config_set(cfg, key, value, CONFIG_SRC_FILE, msg, sizeof msg);
        if (rc != 0) {
            snprintf(err, errcap, "%s:%d: %s", path, lineno, msg);
            break;
        }
        if (secret == NULL)
            secret = config__secret_key(key, value);
    }
    fclose(f);
    if (rc == 0 && secret != NULL && !secret_file_mode_ok(&st)) {
        char what[64];
        snprintf(what, sizeof what, "config file (%s)", secret);
        secret_file_mode_error(what, path, &st, err, errcap);
        rc = UV_EPERM;
    }
    return rc;
}

int config_load_env(config_t *cfg, char *err, size_t errcap)
{
    for (size_t i = 0; i < OPT_COUNT; i++) {
        const char *v = getenv(opts[i].env);
        if (v == NULL && strcmp(opts[i].key, "db") == 0)
            v = getenv("PARLEY_DB");
        if (v == NULL)
            continue;
        char msg[CONFIG_ERR_MAX];
        int rc = config_set(cfg, opts[i].key, v, CONFIG_SRC_ENV, msg, sizeof msg);
        if (rc != 0) {
            snprintf(err, errcap, "environment %s: %s", opts[i].env, msg);
            return rc;
        }
    }
    /* libpq's own variables select an external server too, unless a URL was
     * given: libpq then reads them itself at connect time. */
    size_t db_idx = 0;
    opt_find("db", &db_idx);
    if (cfg->source[db_idx] < CONFIG_SRC_ENV) {
        static const char *const pgvars[] = {"PGHOST", "PGHOSTADDR", "PGDATABASE", "PGSERVICE"};
        for (size_t i = 0; i < sizeof pgvars / sizeof pgvars[0]; i++) {
            if (getenv(pgvars[i]) != NULL) {
                cfg->db_url[0] = '\0';
                cfg->db_external = true;
                cfg->source[db_idx] = CONFIG_SRC_ENV;
                break;
            }
        }
    }
    return 0;
}

/* The default as the reference shows it (buf holds a number's text). */
static const char *opt_default_text(const opt_t *o, char *buf, size_t cap)
{
    if (o->type != OPT_INT)
        return o->def;
    snprintf(buf, cap, "%ld", o->inum);
    return buf;
}

void config_print_reference(FILE *out)
{
    for (size_t i = 0; i < OPT_COUNT; i++) {
        char flag[64];
        size_t k = 0;
        for (const char *p = opts[i].key; *p && k < sizeof flag - 1; p++)
            flag[k++] = *p == '_' ? '-' : *p;
        flag[k] = '\0';
        char head[96];
        snprintf(head, sizeof head, "--%s %s", flag, opts[i].arg);
        char def[32];
        fprintf(out, "  %-30s %s\n  %-30s env %s; default %s\n", head, opts[i].help, "",
                opts[i].env, opt_default_text(&opts[i], def, sizeof def));
    }
}

/* Writes s for a Markdown table cell (| escaped). */
static void md_cell(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputc('\\', out);
        fputc(*s, out);
    }
}

void config_print_markdown(FILE *out)
{
    fprintf(out, "| key | flag | environment | default | meaning |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < OPT_COUNT; i++) {
        fprintf(out, "| `%s` | `--", opts[i].key);
        for (const char *p = opts[i].key; *p; p++)
            fputc(*p == '_' ? '-' : *p, out);
        fprintf(out, " %s` | `%s` | ", opts[i].arg, opts[i].env);
        char def[32];
        md_cell(out, opt_default_text(&opts[i], def, sizeof def));
        fputs(" | ", out);
        md_cell(out, opts[i].help);
        fputs(" |\n", out);
    }
}
