/* agent_formats: the transcript formats of agent_import and the listing of
 * their files (see agent_formats.h). */
#include "import/agent_formats.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "import/agent_events.h"
#include "import/codex_events.h"
#include "util/file_kind.h"
#include "util/log.h"

#define AF_TAG "import"

/* ---- the listing ------------------------------------------------------------ */

static int add_file(agent_listing_t *l, const char *path, const char *project)
{
    if (l->nfiles == AGENT_FORMATS_MAX_FILES)
        return UV_E2BIG;
    if (l->nfiles == l->cap) {
        size_t n = l->cap ? l->cap * 2 : 64;
        char **f = realloc(l->files, n * sizeof *f), **p;
        if (f == NULL)
            return UV_ENOMEM;
        l->files = f;
        p = realloc(l->projects, n * sizeof *p);
        if (p == NULL)
            return UV_ENOMEM;
        l->projects = p;
        l->cap = n;
    }
    l->files[l->nfiles] = strdup(path);
    l->projects[l->nfiles] = strdup(project);
    if (l->files[l->nfiles] == NULL || l->projects[l->nfiles] == NULL)
        return UV_ENOMEM;
    l->nfiles++;
    return 0;
}

/* An entry not listed: warned and counted. */
static void skip_entry(agent_listing_t *l, const char *path, const char *why)
{
    log_warn(AF_TAG, "%s: %s; skipped", path, why);
    l->skipped++;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_jsonl(const char *name)
{
    size_t n = strlen(name);
    return n > 6 && strcmp(name + n - 6, ".jsonl") == 0;
}

/* Opens the directory name under dirfd without following a symbolic link
 * (O_NOFOLLOW: a link fails with ELOOP) and without waiting on anything.
 * NULL with errno on an error. */
static DIR *open_dir_at(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

static bool has_dotdot(const char *rel)
{
    for (const char *c = rel; c; c = strchr(c, '/') ? strchr(c, '/') + 1 : NULL)
        if (c[0] == '.' && c[1] == '.' && (c[2] == '/' || c[2] == '\0'))
            return true;
    return false;
}

/* The files given, each DIR/REL: read beneath DIR as listed ones are (a
 * symbolic link, a FIFO, a missing file is skipped and named when it is
 * read). */
static void list_given(agent_listing_t *l, const agent_format_t *fmt, char *const *given,
                       size_t ngiven)
{
    for (size_t i = 0; l->status == 0 && i < ngiven; i++) {
        char folder[1024], path[4096];
        const char *rel = given[i];
        snprintf(path, sizeof path, "%s/%s", l->dir, rel);
        const char *why = rel[0] == '/' || rel[0] == '\0' ? "not a path relative to the folder"
                          : has_dotdot(rel)               ? "a path with a \"..\" component"
                                                          : fmt->given(rel, folder, sizeof folder);
        if (why != NULL)
            skip_entry(l, path, why);
        else
            l->status = add_file(l, path, folder);
    }
}

/* Sorts the files by path, each keeping its project. */
static void sort_files(agent_listing_t *l)
{
    char **pairs = malloc(l->nfiles * 2 * sizeof *pairs);
    if (pairs == NULL)
        return;
    /* sort files, keep projects aligned: sort indexes by path */
    for (size_t i = 0; i < l->nfiles; i++) {
        size_t len = strlen(l->files[i]) + 1 + strlen(l->projects[i]) + 1;
        char *joined = malloc(len);
        if (joined == NULL)
            continue;
        snprintf(joined, len, "%s%c%s", l->files[i], '\1', l->projects[i]);
        pairs[i] = joined;
    }
    qsort(pairs, l->nfiles, sizeof *pairs, cmp_str);
    for (size_t i = 0; i < l->nfiles; i++) {
        char *sep = strchr(pairs[i], '\1');
        *sep = '\0';
        free(l->files[i]);
        free(l->projects[i]);
        l->files[i] = strdup(pairs[i]);
        l->projects[i] = strdup(sep + 1);
        free(pairs[i]);
    }
    free(pairs);
}

int agent_formats_list(agent_listing_t *l, const agent_format_t *fmt, const char *dir,
                       char *const *given, size_t ngiven, char *err, size_t errcap)
{
    l->dir = dir;
    if (given != NULL) {
        list_given(l, fmt, given, ngiven);
    } else {
        int root = open(dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
        DIR *d = root >= 0 ? fdopendir(root) : NULL;
        if (d == NULL) {
            int e = errno;
            snprintf(err, errcap, "%s: %s", dir, strerror(e));
            if (root >= 0)
                close(root);
            return l->status = -e;
        }
        fmt->list(l, d);
        closedir(d);
    }
    if (l->status != 0) {
        snprintf(err, errcap, "listing %s: %s", dir, uv_strerror(l->status));
        return l->status;
    }
    if (l->nfiles > 1)
        sort_files(l);
    return 0;
}

void agent_formats_listing_free(agent_listing_t *l)
{
    for (size_t i = 0; i < l->nfiles; i++) {
        free(l->files[i]);
        free(l->projects[i]);
    }
    free(l->files);
    free(l->projects);
}

/* ---- Claude Code's ------------------------------------------------------------ */

/* The .jsonl files of DIR and of DIR/PROJECT (entries looked at as the
 * header says). */
static void list_claude(agent_listing_t *l, DIR *d)
{
    struct dirent *de;
    while (l->status == 0 && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char sub[2048];
        snprintf(sub, sizeof sub, "%s/%s", l->dir, de->d_name);
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            skip_entry(l, sub, strerror(errno));
            continue;
        }
        bool jsonl = is_jsonl(de->d_name);
        if (S_ISLNK(st.st_mode)) {
            if (jsonl)
                skip_entry(l, sub, AGENT_FORMATS_LINK_SKIPPED);
            else
                log_warn(AF_TAG, "%s: %s; skipped", sub, AGENT_FORMATS_LINK_SKIPPED);
            continue;
        }
        if (jsonl && !S_ISDIR(st.st_mode)) {
            if (S_ISREG(st.st_mode))
                l->status = add_file(l, sub, "");
            else
                skip_entry(l, sub, file_kind_not_regular(st.st_mode));
            continue;
        }
        if (!S_ISDIR(st.st_mode))
            continue;
        DIR *p = open_dir_at(dirfd(d), de->d_name);
        if (p == NULL) {
            skip_entry(l, sub, strerror(errno));
            continue;
        }
        struct dirent *fe;
        while (l->status == 0 && (fe = readdir(p)) != NULL) {
            if (!is_jsonl(fe->d_name))
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", sub, fe->d_name);
            /* lstat's view: a symbolic link (dangling, a loop, to a file
             * inside or outside DIR), a directory, a FIFO, a socket or a
             * device is skipped (opening a FIFO would block). */
            if (fstatat(dirfd(p), fe->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
                skip_entry(l, path, strerror(errno));
            else if (S_ISLNK(st.st_mode))
                skip_entry(l, path, AGENT_FORMATS_LINK_SKIPPED);
            else if (!S_ISREG(st.st_mode))
                skip_entry(l, path, file_kind_not_regular(st.st_mode));
            else
                l->status = add_file(l, path, de->d_name);
        }
        closedir(p);
    }
}

static const char *given_claude(const char *rel, char *folder, size_t cap)
{
    const char *slash = strchr(rel, '/');
    if (!is_jsonl(slash ? slash + 1 : rel) || (slash && strchr(slash + 1, '/')))
        return "not SESSION.jsonl or PROJECT/SESSION.jsonl";
    snprintf(folder, cap, "%.*s", slash ? (int)(slash - rel) : 0, rel);
    return NULL;
}

/* The project of a folder: Claude Code names it after the working
 * directory with '/' turned into '-'; the part after the last '-' is the
 * folder's own name. */
static const char *project_claude(const char *folder)
{
    if (folder[0] == '\0')
        return "transcripts";
    const char *dash = strrchr(folder, '-');
    return dash && dash[1] ? dash + 1 : folder;
}

static char *parse_claude(const char *buf, size_t len, const char *path, uint64_t first_line,
                          uint64_t *lines, uint64_t *malformed)
{
    return agent_events_parse(buf, len, path, first_line, lines, malformed);
}

const agent_format_t agent_formats_claude = {
    .source = "claude-code",
    .list = list_claude,
    .given = given_claude,
    .project = project_claude,
    .parse = parse_claude,
};

/* ---- Codex CLI's -------------------------------------------------------------- */

/* The rollout-*.jsonl files of DIR and of its folders to three levels
 * (DIR/YYYY/MM/DD), looked at as list_claude's; rel is the folder's path
 * under DIR ("" for DIR). */
static void list_codex_in(agent_listing_t *l, DIR *d, const char *rel, int depth)
{
    struct dirent *de;
    while (l->status == 0 && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char sub[2048], path[4096];
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
        snprintf(path, sizeof path, "%s/%s", l->dir, sub);
        bool rollout = codex_events_is_rollout(de->d_name);
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (rollout)
                skip_entry(l, path, strerror(errno));
        } else if (S_ISLNK(st.st_mode)) {
            if (rollout)
                skip_entry(l, path, AGENT_FORMATS_LINK_SKIPPED);
            else
                log_warn(AF_TAG, "%s: %s; skipped", path, AGENT_FORMATS_LINK_SKIPPED);
        } else if (S_ISDIR(st.st_mode)) {
            if (depth >= 3)
                continue;
            DIR *p = open_dir_at(dirfd(d), de->d_name);
            if (p == NULL) {
                log_warn(AF_TAG, "%s: %s; skipped", path, strerror(errno));
                continue;
            }
            list_codex_in(l, p, sub, depth + 1);
            closedir(p);
        } else if (rollout) {
            if (S_ISREG(st.st_mode))
                l->status = add_file(l, path, rel);
            else
                skip_entry(l, path, file_kind_not_regular(st.st_mode));
        }
    }
}

static void list_codex(agent_listing_t *l, DIR *d)
{
    list_codex_in(l, d, "", 0);
}

static const char *given_codex(const char *rel, char *folder, size_t cap)
{
    const char *slash = strrchr(rel, '/');
    if (!codex_events_is_rollout(slash ? slash + 1 : rel))
        return "not a Codex rollout (rollout-*.jsonl)";
    snprintf(folder, cap, "%.*s", slash ? (int)(slash - rel) : 0, rel);
    return NULL;
}

/* A session without a working directory (no session_meta) is of "codex". */
static const char *project_codex(const char *folder)
{
    (void)folder;
    return "codex";
}

/* The session is the file's: the UUID its name ends with. */
static char *parse_codex(const char *buf, size_t len, const char *path, uint64_t first_line,
                         uint64_t *lines, uint64_t *malformed)
{
    const char *slash = strrchr(path, '/');
    char session[1100];
    codex_events_session(slash ? slash + 1 : path, session, sizeof session);
    return codex_events_parse(buf, len, path, session, first_line, lines, malformed);
}

const agent_format_t agent_formats_codex = {
    .source = "codex",
    .list = list_codex,
    .given = given_codex,
    .project = project_codex,
    .parse = parse_codex,
};
