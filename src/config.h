/* config: the daemon's settings, their defaults, and where each came from.
 *
 * Every setting has one key (also its config-file key), one long flag
 * ("--" + key with '_' as '-') and one environment variable (PARLEY_ + KEY,
 * plus DATABASE_URL and the libpq PG* variables for the database).
 * Precedence: flags > environment > file > defaults. The config file is
 * lines of "key = value"; '#' starts a comment; values may be "quoted". */
#ifndef PARLEY_CONFIG_H
#define PARLEY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util/log.h"

#define CONFIG_PATH_MAX 1024
#define CONFIG_URL_MAX  2048
#define CONFIG_ERR_MAX  512

/* Limits; each has a config key of the same name in lower case. */
#define CONFIG_DEFAULT_DB_POOL_SIZE     4
#define CONFIG_DEFAULT_DB_RO_POOL_SIZE  4
#define CONFIG_DEFAULT_SEARCH_MAX_CONNS 2 /* search_max_conns */
/* search_max_conns_per_principal: 0 is search_max_conns less one (at
 * least one), so that one principal leaves a search slot to the others. */
#define CONFIG_DEFAULT_SEARCH_MAX_CONNS_PER_PRINCIPAL 0
/* search_regex_timeout_ms: archive/archive.h's ARCHIVE_REGEX_TIMEOUT_MS. */
#define CONFIG_DEFAULT_SEARCH_REGEX_TIMEOUT_MS 5000
#define CONFIG_DEFAULT_DB_QUEUE_MAX            1024
#define CONFIG_DEFAULT_DB_QUERY_TIMEOUT_MS     30000
#define CONFIG_DEFAULT_CHATWISE_INTERVAL_S     60                /* chatwise_interval_s */
#define CONFIG_DEFAULT_TRANSCRIPTS_RESCAN_S    10                /* transcripts_rescan_s */
#define CONFIG_DEFAULT_BLUESKY_REFRESH_S       900               /* bluesky_refresh_s */
#define CONFIG_DEFAULT_SEARCH_LANGUAGES        "english,russian" /* search_languages */
#define CONFIG_DEFAULT_SEARCH_FILL_BATCH       5000              /* search_fill_batch */
#define CONFIG_DEFAULT_HTTP_MAX_PENDING_CONNS  256               /* http_max_pending_conns */
#define CONFIG_DEFAULT_DB_CONNECT_TIMEOUT_MS   10000
#define CONFIG_DEFAULT_SHUTDOWN_TIMEOUT_MS     8000
#define CONFIG_DEFAULT_PG_START_TIMEOUT_S      60
#define CONFIG_FILE_MAX_BYTES                  (64 * 1024)
#define CONFIG_LIST_MAX                        2048

typedef enum {
    CONFIG_SRC_DEFAULT = 0,
    CONFIG_SRC_FILE,
    CONFIG_SRC_ENV,
    CONFIG_SRC_FLAG,
} config_source_t;

typedef struct config_s {
    char data_dir[CONFIG_PATH_MAX];
    char config_file[CONFIG_PATH_MAX]; /* "" when none */
    /* db_url: "" and !db_external means the embedded cluster. db_external
     * with an empty db_url means "libpq's PG* environment variables". */
    char db_url[CONFIG_URL_MAX];
    bool db_external;
    char db_ro_url[CONFIG_URL_MAX];        /* "" = db_url with read-only sessions */
    char memory_db[CONFIG_URL_MAX];        /* the memory toolset's Django database, or "" */
    char chatwise_db[CONFIG_PATH_MAX];     /* ChatWise's app.db serve follows, or "" */
    int chatwise_interval_s;               /* how often it is checked */
    char claude_code_dir[CONFIG_PATH_MAX]; /* Claude Code's projects folder serve follows, or "" */
    char codex_dir[CONFIG_PATH_MAX];       /* Codex CLI's sessions folder serve follows, or "" */
    int transcripts_rescan_s;              /* how often a followed folder is walked whole */
    char search_languages[256];            /* text search configurations of word forms; "" none */
    int search_fill_batch;                 /* rows per statement filling word forms */
    log_level_t log_level;
    char pg_user[64];
    char pg_bindir[CONFIG_PATH_MAX];
    int pg_start_timeout_s;
    int db_pool_size;
    int db_ro_pool_size;
    int search_max_conns;               /* searches on read-only connections at once */
    int search_max_conns_per_principal; /* of them, one principal's; 0: search_max_conns - 1 */
    int search_regex_timeout_ms;        /* time limit of a running regex search */
    int db_queue_max;
    int db_query_timeout_ms;
    int db_connect_timeout_ms;
    int shutdown_timeout_ms;
    /* MCP serving (defaults of the limits in mcp/server.h). */
    char toolsets[CONFIG_LIST_MAX]; /* comma-separated names, "all" or "auto" */
    bool read_only;
    bool stdio;
    char listen[CONFIG_LIST_MAX]; /* comma-separated endpoints */
    char tls_cert[CONFIG_PATH_MAX];
    char tls_key[CONFIG_PATH_MAX];
    char token_file[CONFIG_PATH_MAX];
    char allow_anonymous[CONFIG_LIST_MAX]; /* endpoints served without a token */
    char state_key_file[CONFIG_PATH_MAX];  /* "" = DATA_DIR/mcp-state.key */
    char allowed_origins[CONFIG_LIST_MAX];
    int max_message_bytes;
    int session_max_inflight;
    int output_high_water;
    int output_low_water;
    int output_hard_limit;
    int max_active_calls;
    int max_sessions;
    int principal_session_share; /* percent of max_sessions */
    int http_max_pending_conns;  /* HTTP connections without a completed request */
    int request_timeout_ms;      /* server-to-client requests (elicitation, sampling) */
    int init_timeout_ms;         /* a socket connection must initialize within */
    int list_page_size;
    char tz[16];                       /* import: UTC offset of export dates */
    char eras[CONFIG_PATH_MAX];        /* import claude-code: eras file, or "" */
    char timezone[64];                 /* IANA zone of relative dates (inline toolset) */
    char export_root[CONFIG_PATH_MAX]; /* mediaDownload writes only here ("" = DATA_DIR/exports) */
    char
        upload_root[CONFIG_PATH_MAX]; /* messagesSendFile reads only here ("" = DATA_DIR/uploads) */
    char telegram_bot_token[256];     /* secret: never logged */
    char telegram_api_url[CONFIG_URL_MAX];
    char telegram_tdjson[CONFIG_PATH_MAX]; /* TDLib's libtdjson (user accounts) */
    int telegram_api_id;                   /* the app's api_id (user accounts) */
    char telegram_api_hash[64];            /* its api_hash: secret, never logged */
    int telegram_td_timeout_s;             /* a TDLib request unanswered this long fails */
    int telegram_history_jobs;             /* backfill jobs run at once (per daemon) */
    char phone[32];                        /* login telegram: the account's phone number */
    char account[64];                      /* login telegram: the account's name */
    char bluesky_service[CONFIG_URL_MAX];
    int bluesky_refresh_s; /* 0: no bluesky.refresh job */
    int telegram_poll_timeout_s;
    int telegram_file_limit_mb;
    int telegram_media_stall_s;     /* a getFile or download silent this long fails */
    int telegram_media_retry_max_s; /* longest wait before a failed download is retried */
    int inline_upload_max_mb;       /* files_upload size cap */
    int url_timeout_s;              /* URLs tools fetch */
    bool url_allow_http;            /* tests: plain http too */
    char url_allow_addresses[CONFIG_LIST_MAX]; /* tests: refused ranges allowed */
    char import_path[CONFIG_PATH_MAX];         /* import: the source's path (an argument) */
    char import_source[32];                    /* import: the source's name (importers.h) */
    char backup_dir[CONFIG_PATH_MAX];          /* backup, restore: the backup (an argument) */
    char login_name[32];                       /* login: what signs in (connectors.h) */
    char boot_project[CONFIG_PATH_MAX];        /* bootstrap: the project (a session's cwd) */
    int boot_token_budget;                     /* bootstrap: tokens (--token-budget) */
    bool boot_hook;                            /* bootstrap --hook: SessionStart JSON */
    config_source_t source[80];                /* per key, indexed like the key table */
} config_t;

/* Fills every field with its default. Returns 0, or UV_EINVAL with err set
 * when no default data directory can be derived (no HOME). */
int config_init(config_t *cfg, char *err, size_t errcap);

/* Sets key to value (value parsed and range-checked). Returns 0, or
 * UV_EINVAL / UV_ENOENT (unknown key) with a message in err. */
int config_set(config_t *cfg, const char *key, const char *value, config_source_t src, char *err,
               size_t errcap);

/* The value of key as text into out (a secret too: the caller keeps it
 * from logs). Returns 0, or UV_ENOENT for an unknown key. */
int config_get(const config_t *cfg, const char *key, char *out, size_t cap);

/* Applies a config file. Returns 0 or a negative code with err naming the
 * file and line. The file is opened without blocking and must be a
 * regular file; one that sets a secret (config__secret_key) must pass
 * secret_file's mode rule (util/secret_file.h), else UV_EPERM. */
int config_load_file(config_t *cfg, const char *path, char *err, size_t errcap);

/* Internal: the canonical key when key = value sets a secret (a Telegram
 * bot token or api_hash; a database URL or conninfo with a password),
 * else NULL. */
const char *config__secret_key(const char *key, const char *value);

/* Applies PARLEY_* variables, DATABASE_URL and the libpq PG* variables. */
int config_load_env(config_t *cfg, char *err, size_t errcap);

/* The source that set key, for diagnostics and tests; -1 if no such key. */
int config_source_of(const config_t *cfg, const char *key);
const char *config_source_name(config_source_t src);

/* True when key names a setting (used by the flag parser). */
__attribute__((warn_unused_result)) bool config_has_key(const char *key);

/* True when key is a boolean setting: its flag may stand alone
 * ("--read-only" means "--read-only true"). */
__attribute__((warn_unused_result)) bool config_key_is_bool(const char *key);

/* Writes the settings reference (key, flag, env, default, meaning). */
void config_print_reference(FILE *out);

/* Writes the same reference as a Markdown table (parleyd --help-config;
 * docs/configuration.md holds it between its config markers). */
void config_print_markdown(FILE *out);

#endif
