/* backup_manifest: the manifest of a backup and the counts it holds (see
 * backup_manifest.h). */
#include "app/backup_manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

const char *const backup_items[BACKUP_ITEMS] = {BACKUP_MEDIA_DIR, "mcp-state.key",
                                                "credentials.key", "telegram"};

#define WALK_FDS 16

/* nftw has no data pointer: the walk in progress on this thread. */
static _Thread_local backup_count_t *walk_count;
static _Thread_local bool walk_drop;

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    if (type == FTW_DNR || type == FTW_NS) {
        errno = EACCES;
        return -1;
    }
    if (type != FTW_F || !S_ISREG(st->st_mode))
        return 0;
    if (walk_drop && ftw->level == 1 && path[ftw->base] == '.') {
        unlink(path);
        return 0;
    }
    walk_count->files++;
    walk_count->bytes += (uint64_t)st->st_size;
    return 0;
}

int backup_count_tree(const char *dir, bool drop_partial, backup_count_t *out, char *err,
                      size_t errcap)
{
    *out = (backup_count_t){0};
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        int e = errno;
        snprintf(err, errcap, "%s: %s", dir, strerror(e));
        return -e;
    }
    walk_count = out;
    walk_drop = drop_partial;
    errno = 0;
    int rc = nftw(dir, walk_one, WALK_FDS, FTW_PHYS);
    walk_count = NULL;
    if (rc != 0) {
        int e = errno ? errno : EIO;
        snprintf(err, errcap, "cannot read every file under %s: %s", dir, strerror(e));
        return -e;
    }
    return 0;
}

int backup_manifest_write(const char *dir, const backup_manifest_t *m, char *err, size_t errcap)
{
    json_t *items = json_array();
    for (int i = 0; i < BACKUP_ITEMS; i++)
        if (m->has[i])
            json_array_append_new(items, json_string(backup_items[i]));
    json_t *doc =
        json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:o, s:{s:I, s:I}, s:{s:I, s:I}}", "format",
                  BACKUP_FORMAT, "version", m->version, "parleyd", m->parleyd, "created",
                  m->created, "data_dir", m->data_dir, "pg_version", m->pg_version, "items", items,
                  "pg", "files", (json_int_t)m->pg.files, "bytes", (json_int_t)m->pg.bytes, "media",
                  "files", (json_int_t)m->media.files, "bytes", (json_int_t)m->media.bytes);
    if (doc == NULL) {
        snprintf(err, errcap, "cannot build the manifest (a field is not UTF-8?)");
        return UV_EINVAL;
    }
    char tmp[1200], path[1200];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, BACKUP_MANIFEST_NAME);
    snprintf(path, sizeof path, "%s/%s", dir, BACKUP_MANIFEST_NAME);
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (text == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    int rc = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t len = strlen(text);
    if (fd < 0 || write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1 ||
        fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        rc = -errno;
        if (fd >= 0)
            close(fd);
        snprintf(err, errcap, "cannot write %s: %s", path, strerror(-rc));
    }
    free(text);
    return rc;
}

static bool copy_str(char *dst, size_t cap, json_t *doc, const char *key)
{
    const char *s = json_string_value(json_object_get(doc, key));
    if (s == NULL || strlen(s) >= cap)
        return false;
    memcpy(dst, s, strlen(s) + 1);
    return true;
}

static bool read_count(backup_count_t *c, json_t *doc, const char *key)
{
    json_t *o = json_object_get(doc, key);
    json_t *f = json_object_get(o, "files"), *b = json_object_get(o, "bytes");
    if (!json_is_integer(f) || !json_is_integer(b) || json_integer_value(f) < 0 ||
        json_integer_value(b) < 0)
        return false;
    c->files = (uint64_t)json_integer_value(f);
    c->bytes = (uint64_t)json_integer_value(b);
    return true;
}

int backup_manifest_read(const char *dir, backup_manifest_t *m, char *err, size_t errcap)
{
    memset(m, 0, sizeof *m);
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, BACKUP_MANIFEST_NAME);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            snprintf(err, errcap,
                     "%s has no %s: it is not a backup of parleyd backup, or one that did not "
                     "finish",
                     dir, BACKUP_MANIFEST_NAME);
        else
            snprintf(err, errcap, "cannot open %s: %s", path, strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > BACKUP_MANIFEST_MAX) {
        close(fd);
        snprintf(err, errcap, "%s is not a manifest (a regular file of at most %d bytes)", path,
                 BACKUP_MANIFEST_MAX);
        return UV_EINVAL;
    }
    char buf[BACKUP_MANIFEST_MAX + 1];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0) {
        int e = errno;
        snprintf(err, errcap, "cannot read %s: %s", path, strerror(e));
        return -e;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(buf, (size_t)n, 0, &jerr);
    if (doc == NULL) {
        snprintf(err, errcap, "%s is not JSON: %s (line %d)", path, jerr.text, jerr.line);
        return UV_EINVAL;
    }
    int rc = 0;
    const char *format = json_string_value(json_object_get(doc, "format"));
    json_t *version = json_object_get(doc, "version");
    if (format == NULL || strcmp(format, BACKUP_FORMAT) != 0 || !json_is_integer(version)) {
        snprintf(err, errcap, "%s is not a manifest of parleyd backup", path);
        rc = UV_EINVAL;
        goto done;
    }
    m->version = (int)json_integer_value(version);
    if (m->version != BACKUP_FORMAT_VERSION) {
        snprintf(err, errcap,
                 "%s is of version %d; this parleyd reads version %d (restore it with the "
                 "parleyd that made it, or a newer one)",
                 path, m->version, BACKUP_FORMAT_VERSION);
        rc = UV_EINVAL;
        goto done;
    }
    json_t *items = json_object_get(doc, "items");
    bool ok = copy_str(m->parleyd, sizeof m->parleyd, doc, "parleyd") &&
              copy_str(m->created, sizeof m->created, doc, "created") &&
              copy_str(m->data_dir, sizeof m->data_dir, doc, "data_dir") &&
              copy_str(m->pg_version, sizeof m->pg_version, doc, "pg_version") &&
              read_count(&m->pg, doc, "pg") && read_count(&m->media, doc, "media") &&
              json_is_array(items);
    for (size_t i = 0; ok && i < json_array_size(items); i++) {
        const char *name = json_string_value(json_array_get(items, i));
        int k = 0;
        while (name && k < BACKUP_ITEMS && strcmp(name, backup_items[k]) != 0)
            k++;
        if (name == NULL || k == BACKUP_ITEMS)
            ok = false;
        else
            m->has[k] = true;
    }
    if (!ok) {
        snprintf(err, errcap, "%s lacks a field or has one of the wrong type", path);
        rc = UV_EINVAL;
    }
done:
    json_decref(doc);
    return rc;
}
