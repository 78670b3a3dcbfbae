/* tg_user_session: a Telegram user account's files (see
 * tg_user_internal.h). DATA_DIR/telegram/ holds one directory per account,
 * named after it, mode 0700:
 *
 *   db.key  TDLib's database key: 32 random bytes, sealed (util/sealed.h)
 *           under "telegram_user:NAME" with DATA_DIR/credentials.key
 *   td/     TDLib's database_directory (one client at a time: TDLib locks
 *           td/td.binlog)
 *
 * A directory without db.key is not an account. Small and bounded file
 * work, done at start (before serving) or by `parleyd login`. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "upstream/telegram/user/tg_user_internal.h"
#include "util/dirs.h"
#include "util/secret_file.h"

#define TGU_SEALED_MAX (TGU_DB_KEY_BYTES + SEALED_OVERHEAD)

int tgu__session_name(const char *name, const char *phone, char *out, size_t cap, char *err,
                      size_t errcap)
{
    size_t n = 0;
    if (name && name[0]) {
        for (const char *p = name; *p; p++) {
            bool alnum =
                (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
            bool ok = alnum || (p > name && (*p == '_' || *p == '-'));
            if (!ok || n + 1 >= cap || n + 1 >= TGU_NAME_MAX) {
                snprintf(err, errcap,
                         "account: '%s' is not a name (a letter or digit, then letters, digits, _ "
                         "and -; at most %d)",
                         name, TGU_NAME_MAX - 1);
                return UV_EINVAL;
            }
            out[n++] = *p;
        }
    } else {
        for (const char *p = phone ? phone : ""; *p; p++)
            if (*p >= '0' && *p <= '9' && n + 1 < cap)
                out[n++] = *p;
        if (n < 5) {
            snprintf(err, errcap,
                     "phone: give the account's phone number with its country code "
                     "(--phone +15551234567)");
            return UV_EINVAL;
        }
    }
    out[n] = '\0';
    return 0;
}

/* Makes dir 0700, or makes an existing one 0700. */
static int private_dir(const char *dir, char *err, size_t errcap)
{
    int rc = dirs_make(dir, err, errcap);
    if (rc != 0)
        return rc;
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errcap, "%s: not a directory", dir);
        return UV_ENOTDIR;
    }
    if ((st.st_mode & 077) != 0 && chmod(dir, 0700) != 0) {
        snprintf(err, errcap, "%s: cannot make it private (chmod 700): %s", dir, strerror(errno));
        return UV_EPERM;
    }
    return 0;
}

static int key_write(const char *path, const sealed_key_t *cred, const char *ctx, uint8_t *key,
                     char *err, size_t errcap)
{
    if (RAND_bytes(key, TGU_DB_KEY_BYTES) != 1) {
        snprintf(err, errcap, "no random bytes for the database key");
        return UV_EIO;
    }
    uint8_t *sealed = NULL;
    size_t n = 0;
    int rc = sealed_seal(cred, ctx, key, TGU_DB_KEY_BYTES, &sealed, &n);
    if (rc != 0) {
        snprintf(err, errcap, "cannot seal the database key: %s", uv_strerror(rc));
        return rc;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        rc = -errno;
        snprintf(err, errcap, "%s: %s", path, strerror(errno));
    } else {
        rc = write(fd, sealed, n) == (ssize_t)n && fsync(fd) == 0 ? 0 : UV_EIO;
        close(fd);
        if (rc != 0) {
            unlink(path);
            snprintf(err, errcap, "%s: could not write the database key", path);
        }
    }
    free(sealed);
    return rc;
}

static int key_read(const char *path, const sealed_key_t *cred, const char *ctx, uint8_t *key,
                    char *err, size_t errcap)
{
    uint8_t buf[TGU_SEALED_MAX];
    size_t n = 0;
    int rc = secret_file_read(path, SECRET_FILE_PRIVATE | SECRET_FILE_NOFOLLOW, NULL, buf,
                              sizeof buf, &n, err, errcap);
    if (rc != 0 && rc != UV_E2BIG)
        return rc;
    char *plain = NULL;
    size_t plen = 0;
    rc = rc == 0 && n > 0 ? sealed_open(cred, ctx, buf, n, &plain, &plen) : UV_EINVAL;
    if (rc != 0 || plen != TGU_DB_KEY_BYTES) {
        snprintf(err, errcap,
                 "%s does not open with %s (another credentials key?); sign the account in "
                 "again",
                 path, "credentials.key");
        sealed_free(plain, plen);
        return UV_EINVAL;
    }
    memcpy(key, plain, TGU_DB_KEY_BYTES);
    sealed_free(plain, plen);
    return 0;
}

int tgu__session_open(const char *data_dir, const sealed_key_t *cred, const char *name, bool create,
                      tgu_session_t *out, char *err, size_t errcap)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    char root[TGU_PATH_MAX], key_path[TGU_PATH_MAX + 16], ctx[TGU_NAME_MAX + 32];
    snprintf(root, sizeof root, "%s/telegram", data_dir);
    if (snprintf(out->dir, sizeof out->dir, "%s/%s", root, name) >= (int)sizeof out->dir ||
        snprintf(out->td_dir, sizeof out->td_dir, "%s/td", out->dir) >= (int)sizeof out->td_dir) {
        snprintf(err, errcap, "%s: the path is too long", data_dir);
        return UV_ENAMETOOLONG;
    }
    snprintf(key_path, sizeof key_path, "%s/db.key", out->dir);
    snprintf(ctx, sizeof ctx, "telegram_user:%s", name);
    struct stat st;
    if (!create && stat(key_path, &st) != 0) {
        snprintf(err, errcap, "no Telegram account '%s' is signed in here (%s)", name, out->dir);
        return UV_ENOENT;
    }
    int rc;
    if ((rc = private_dir(root, err, errcap)) != 0 ||
        (rc = private_dir(out->dir, err, errcap)) != 0 ||
        (rc = private_dir(out->td_dir, err, errcap)) != 0)
        return rc;
    uint8_t key[TGU_DB_KEY_BYTES];
    char pending[TGU_PATH_MAX + 32];
    snprintf(pending, sizeof pending, "%s/db.key.pending", out->dir);
    if (stat(key_path, &st) == 0) {
        rc = key_read(key_path, cred, ctx, key, err, errcap);
    } else {
        /* Not signed in yet: the key waits under db.key.pending until the
         * sign-in succeeds (tgu__session_commit), so that a directory of a
         * sign-in that did not end is no account; one that failed removes
         * it (tgu__session_discard); one a crash left is used again. */
        out->pending = true;
        rc = stat(pending, &st) == 0 ? key_read(pending, cred, ctx, key, err, errcap)
                                     : key_write(pending, cred, ctx, key, err, errcap);
    }
    if (rc == 0)
        EVP_EncodeBlock((unsigned char *)out->key_b64, key, TGU_DB_KEY_BYTES);
    OPENSSL_cleanse(key, sizeof key);
    return rc;
}

int tgu__session_list(const char *data_dir, char names[][TGU_NAME_MAX], int max)
{
    char root[TGU_PATH_MAX];
    snprintf(root, sizeof root, "%s/telegram", data_dir);
    DIR *d = opendir(root);
    if (d == NULL)
        return 0;
    int n = 0;
    struct dirent *e;
    /* The first max in name order (the same every start, whatever order
     * the directory lists them in): each kept sorted as it comes. */
    while (max > 0 && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len >= TGU_NAME_MAX)
            continue;
        char key_path[TGU_PATH_MAX + TGU_NAME_MAX + 16];
        struct stat st;
        if (snprintf(key_path, sizeof key_path, "%s/%.*s/db.key", root, TGU_NAME_MAX - 1,
                     e->d_name) >= (int)sizeof key_path)
            continue;
        if (stat(key_path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == max && strcmp(e->d_name, names[max - 1]) >= 0)
            continue;
        int at = n < max ? n++ : max - 1;
        while (at > 0 && strcmp(names[at - 1], e->d_name) > 0) {
            memcpy(names[at], names[at - 1], TGU_NAME_MAX);
            at--;
        }
        memcpy(names[at], e->d_name, len + 1);
    }
    closedir(d);
    return n;
}

int tgu__session_commit(tgu_session_t *s, char *err, size_t errcap)
{
    if (!s->pending)
        return 0;
    char from[TGU_PATH_MAX + 32], to[TGU_PATH_MAX + 32];
    snprintf(from, sizeof from, "%s/db.key.pending", s->dir);
    snprintf(to, sizeof to, "%s/db.key", s->dir);
    if (rename(from, to) != 0) {
        int e = errno;
        snprintf(err, errcap, "%s: %s", to, strerror(e));
        return -e;
    }
    s->pending = false;
    return 0;
}

static int discard_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int rc = flag == FTW_DP || flag == FTW_DNR ? rmdir(path) : unlink(path);
    return rc != 0 && errno != ENOENT ? -1 : 0;
}

int tgu__session_discard(tgu_session_t *s)
{
    if (!s->pending || s->dir[0] == '\0')
        return 0;
    s->pending = false;
    /* Depth first, symbolic links removed, never followed. */
    return nftw(s->dir, discard_entry, 8, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -errno;
}

void tgu__session_wipe(tgu_session_t *s)
{
    OPENSSL_cleanse(s->key_b64, sizeof s->key_b64);
}
