/* app_login: one run of `parleyd login NAME`, after the migrations: the
 * connector whose login command NAME is (upstream/connectors.c) signs an
 * account in, asking its questions on stdout and reading each answer as a
 * line of stdin (a terminal, a pipe or a file; a password is not echoed
 * on a terminal). Success prints the connector's line (who signed in) on
 * stdout and exits 0; a failure prints why on stderr and exits 1. The
 * connector is a part on the entry's stack, closed and freed with it.
 * Its settings are checked before the database starts (login_check). */
#include "app/steps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "upstream/connectors.h"
#include "util/log.h"

/* The longest answer line. */
#define LOGIN_LINE_MAX 1024

typedef struct login_s {
    app_t *a;
    const connector_def_t *def;
    void *obj;
    /* stdin: a stream (terminal, pipe) or, for a file, reads on the thread
     * pool. */
    uv_handle_type kind;
    union {
        uv_tty_t tty;
        uv_pipe_t pipe;
    } in;
    bool in_open, in_reading, eof;
    uv_fs_t fs;
    bool fs_busy;
    char fsbuf[256];
    int64_t fs_off;
    char line[LOGIN_LINE_MAX];
    size_t len;
    bool echo_off;
    struct termios saved;
    void (*answer)(void *adata, const char *line);
    void *adata;
} login_t;

static void login_echo(login_t *l, bool on)
{
    if (l->kind != UV_TTY)
        return;
    if (!on && !l->echo_off && tcgetattr(0, &l->saved) == 0) {
        struct termios t = l->saved;
        t.c_lflag &= ~(tcflag_t)ECHO;
        l->echo_off = tcsetattr(0, TCSANOW, &t) == 0;
    } else if (on && l->echo_off) {
        tcsetattr(0, TCSANOW, &l->saved);
        l->echo_off = false;
        fputc('\n', stdout);
        fflush(stdout);
    }
}

static void login_read_more(login_t *l);

/* A whole line is in l->line (or the input ended): hand it over. */
static bool login_deliver(login_t *l)
{
    char *nl = memchr(l->line, '\n', l->len);
    if (nl == NULL && !l->eof && l->len < sizeof l->line - 1)
        return false;
    if (l->answer == NULL)
        return false;
    void (*answer)(void *, const char *) = l->answer;
    l->answer = NULL;
    if (l->in_reading) {
        uv_read_stop((uv_stream_t *)&l->in);
        l->in_reading = false;
    }
    login_echo(l, true);
    if (nl == NULL && l->len == 0) {
        answer(l->adata, NULL);
        return true;
    }
    size_t n = nl ? (size_t)(nl - l->line) : l->len;
    char got[LOGIN_LINE_MAX];
    memcpy(got, l->line, n);
    got[n] = '\0';
    if (n > 0 && got[n - 1] == '\r')
        got[n - 1] = '\0';
    size_t used = nl ? n + 1 : n;
    memmove(l->line, l->line + used, l->len - used);
    l->len -= used;
    answer(l->adata, got);
    memset(got, 0, sizeof got);
    return true;
}

static void login_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    login_t *l = h->data;
    *buf = uv_buf_init(l->line + l->len, (unsigned)(sizeof l->line - 1 - l->len));
}

static void login_on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    login_t *l = s->data;
    if (n < 0)
        l->eof = true;
    else
        l->len += (size_t)n;
    login_deliver(l);
}

static void login_fs_read(uv_fs_t *req)
{
    login_t *l = req->data;
    ssize_t n = req->result;
    uv_fs_req_cleanup(req);
    l->fs_busy = false;
    if (n <= 0) {
        l->eof = true;
    } else {
        size_t room = sizeof l->line - 1 - l->len;
        size_t k = (size_t)n < room ? (size_t)n : room;
        memcpy(l->line + l->len, l->fsbuf, k);
        l->len += k;
        l->fs_off += n;
    }
    if (!login_deliver(l) && l->answer && !l->eof)
        login_read_more(l);
}

static void login_read_more(login_t *l)
{
    if (login_deliver(l))
        return;
    if (l->in_open) {
        if (!l->in_reading && uv_read_start((uv_stream_t *)&l->in, login_alloc, login_on_read) == 0)
            l->in_reading = true;
        return;
    }
    if (l->fs_busy)
        return;
    l->fs.data = l;
    l->fs_busy =
        uv_fs_read(&l->a->loop, &l->fs, 0, &(uv_buf_t){.base = l->fsbuf, .len = sizeof l->fsbuf}, 1,
                   l->fs_off, login_fs_read) == 0;
    if (!l->fs_busy) {
        l->eof = true;
        login_deliver(l);
    }
}

static void login_ask(void *pdata, const char *question, bool secret,
                      void (*answer)(void *adata, const char *line), void *adata)
{
    login_t *l = pdata;
    fputs(question, stdout);
    fflush(stdout);
    l->answer = answer;
    l->adata = adata;
    if (secret)
        login_echo(l, false);
    login_read_more(l);
}

static void login_done(void *data, int status, const char *message)
{
    login_t *l = data;
    if (status == 0) {
        printf("%s\n", message);
        fflush(stdout);
        app_shutdown(l->a, APP_EXIT_OK);
    } else {
        fprintf(stderr, "parleyd: login failed: %s\n", message ? message : uv_strerror(status));
        app_shutdown(l->a, APP_EXIT_FAILURE);
    }
}

/* ---- the part on the stack ---------------------------------------------------------- */

static void login_in_closed(uv_handle_t *h)
{
    login_t *l = h->data;
    app_stack_next(&l->a->stack);
}

static void login_conn_closed(void *data)
{
    login_t *l = data;
    login_echo(l, true);
    if (l->in_open) {
        l->in_open = false;
        uv_close((uv_handle_t *)&l->in, login_in_closed);
        return;
    }
    app_stack_next(&l->a->stack);
}

static void login_close(void *obj, app_stack_t *s)
{
    (void)s;
    login_t *l = obj;
    l->answer = NULL;
    if (l->obj)
        l->def->close(l->obj, login_conn_closed, l);
    else
        login_conn_closed(l);
}

static void login_free(void *obj)
{
    login_t *l = obj;
    if (l->obj)
        l->def->free(l->obj);
    memset(l->line, 0, sizeof l->line);
    free(l);
}

static const app_part_ops_t login_part = {
    .name = "login", .close = login_close, .free = login_free};

static void login_start(app_t *a)
{
    const connector_def_t *def = connectors_find_login(a->cfg->login_name);
    login_t *l = calloc(1, sizeof *l);
    if (l == NULL || def == NULL) {
        free(l);
        app_fatal(a, "login", def ? "out of memory" : "no such login");
        return;
    }
    l->a = a;
    l->def = def;
    l->kind = uv_guess_handle(0);
    int rc = -1;
    if (l->kind == UV_TTY)
        rc = uv_tty_init(&a->loop, &l->in.tty, 0, 1);
    else if (l->kind == UV_NAMED_PIPE && (rc = uv_pipe_init(&a->loop, &l->in.pipe, 0)) == 0 &&
             (rc = uv_pipe_open(&l->in.pipe, 0)) != 0)
        uv_close((uv_handle_t *)&l->in.pipe, NULL);
    l->in_open = rc == 0;
    l->in.tty.data = l;
    if (app_push(a, &login_part, l) != 0)
        return;
    connector_env_t ce = {.loop = &a->loop,
                          .rw = a->rw,
                          .conninfo = &a->conninfo,
                          .data_dir = a->cfg->data_dir,
                          .setting = app_connector_setting,
                          .setting_data = a->cfg,
                          .owner = "login"};
    connector_prompt_t prompt = {.ask = login_ask, .pdata = l};
    char err[CONFIG_ERR_MAX] = "";
    rc = def->login(&ce, &prompt, login_done, l, &l->obj, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "parleyd: login failed: %s\n", err[0] ? err : uv_strerror(rc));
        app_shutdown(a, APP_EXIT_FAILURE);
    }
}

/* Before any database work: the connector's own check of the login's
 * settings (Telegram: the application's id and hash), so a login that
 * cannot work is refused with no cluster made. */
static int login_check(const config_t *cfg, char *err, size_t errcap)
{
    const connector_def_t *def = connectors_find_login(cfg->login_name);
    if (def == NULL) {
        snprintf(err, errcap, "no login '%s'", cfg->login_name);
        return UV_EINVAL;
    }
    connector_env_t ce = {
        .data_dir = cfg->data_dir, .setting = app_connector_setting, .setting_data = cfg};
    return def->login_check ? def->login_check(&ce, err, errcap) : 0;
}

const app_step_t app_step_login = {.cmd = CLI_CMD_LOGIN,
                                   .name = "login",
                                   .after = APP_AFTER_MIGRATIONS,
                                   .check = login_check,
                                   .start = login_start};
