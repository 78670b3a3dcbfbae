/* media_store: content-addressed media files (see media_store.h). */
#include "archive/media_store.h"
#include "util/strutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Creates dir and its missing parents. */
static int mkdir_p(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return 0;
    return -errno;
}

int media_store_prepare(const char *root, char *err, size_t errcap)
{
    int rc = mkdir_p(root);
    if (rc != 0)
        snprintf(err, errcap, "media store %s: %s", root, strerror(-rc));
    return rc;
}

/* Copies in to out in MEDIA_STORE_CHUNK pieces, hashing them: the
 * SHA-256 in hex into sha256, the bytes into *total. out -1: hashes only.
 * inname and outname name the two ends in err. Returns 0 or a negative
 * errno code. */
static int copy_hashing(int in, int out, const char *inname, const char *outname, char sha256[65],
                        uint64_t *total, char *err, size_t errcap)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    char *buf = malloc(MEDIA_STORE_CHUNK);
    int rc = 0;
    *total = 0;
    if (md == NULL || buf == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
        rc = -ENOMEM;
        snprintf(err, errcap, "out of memory");
        goto done;
    }
    for (;;) {
        ssize_t n = read(in, buf, MEDIA_STORE_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            snprintf(err, errcap, "%s: %s", inname, strerror(-rc));
            goto done;
        }
        if (n == 0)
            break;
        EVP_DigestUpdate(md, buf, (size_t)n);
        for (ssize_t off = 0; out >= 0 && off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                rc = -errno;
                snprintf(err, errcap, "%s: %s", outname, strerror(-rc));
                goto done;
            }
            off += w;
        }
        *total += (uint64_t)n;
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    if (EVP_DigestFinal_ex(md, digest, &dlen) != 1 || dlen != 32) {
        rc = -EIO;
        snprintf(err, errcap, "%s: SHA-256 failed", inname);
        goto done;
    }
    str_hex(digest, 32, sha256);
done:
    free(buf);
    EVP_MD_CTX_free(md);
    return rc;
}

/* Moves tmp (a file inside root, of total bytes hashing to sha256) to its
 * place xx/SHA256, or removes it when that file is already stored. Returns
 * 0 with rel, or a negative errno code with err (tmp is left then). */
static int place(const char *root, const char *tmp, const char *sha256, uint64_t total,
                 char rel[MEDIA_STORE_REL_MAX], char *err, size_t errcap)
{
    snprintf(rel, MEDIA_STORE_REL_MAX, "%.2s/%s", sha256, sha256);
    char dir[4200], final[4300];
    snprintf(dir, sizeof dir, "%s/%.2s", root, sha256);
    int rc = mkdir_p(dir);
    if (rc != 0) {
        snprintf(err, errcap, "media store %s: %s", dir, strerror(-rc));
        return rc;
    }
    snprintf(final, sizeof final, "%s/%s", root, rel);
    struct stat st;
    if (stat(final, &st) == 0 && (uint64_t)st.st_size == total) {
        unlink(tmp); /* already stored */
        return 0;
    }
    if (rename(tmp, final) != 0) {
        rc = -errno;
        snprintf(err, errcap, "media store %s: %s", final, strerror(-rc));
        return rc;
    }
    return 0;
}

int media_store_put_fd(const char *root, int in, const char *srcname, char sha256[65],
                       char rel[MEDIA_STORE_REL_MAX], uint64_t *size, char *err, size_t errcap)
{
    int rc = mkdir_p(root);
    if (rc != 0) {
        snprintf(err, errcap, "media store %s: %s", root, strerror(-rc));
        return rc;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/.incoming-%d-XXXXXX", root, (int)getpid());
    int out = mkostemp(tmp, O_CLOEXEC);
    if (out < 0) {
        rc = -errno;
        snprintf(err, errcap, "media store %s: %s", root, strerror(-rc));
        return rc;
    }
    fchmod(out, 0644);
    uint64_t total = 0;
    char where[4300];
    snprintf(where, sizeof where, "media store %s", root);
    if ((rc = copy_hashing(in, out, srcname, where, sha256, &total, err, errcap)) != 0)
        goto done;
    if ((rc = place(root, tmp, sha256, total, rel, err, errcap)) != 0)
        goto done;
    tmp[0] = '\0';
    *size = total;
done:
    if (tmp[0])
        unlink(tmp);
    close(out);
    return rc;
}

int media_store_put(const char *root, const char *src, char sha256[65],
                    char rel[MEDIA_STORE_REL_MAX], uint64_t *size, char *err, size_t errcap)
{
    /* O_NOFOLLOW and O_NONBLOCK: a symbolic link or a FIFO in src's
     * place is refused at once, never followed or waited on. */
    int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (in < 0) {
        int rc = -errno;
        snprintf(err, errcap, "%s: %s", src, strerror(-rc));
        return rc;
    }
    struct stat st;
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errcap, "%s: not a regular file", src);
        close(in);
        return -EINVAL;
    }
    int rc = media_store_put_fd(root, in, src, sha256, rel, size, err, errcap);
    close(in);
    return rc;
}

int media_store_adopt(const char *root, const char *src, char sha256[65],
                      char rel[MEDIA_STORE_REL_MAX], uint64_t *size, char *err, size_t errcap)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        int rc = -errno;
        snprintf(err, errcap, "%s: %s", src, strerror(-rc));
        return rc;
    }
    uint64_t total = 0;
    int rc = copy_hashing(in, -1, src, NULL, sha256, &total, err, errcap);
    close(in);
    if (rc == 0 && chmod(src, 0644) != 0) {
        rc = -errno;
        snprintf(err, errcap, "%s: %s", src, strerror(-rc));
    }
    if (rc == 0 && (rc = place(root, src, sha256, total, rel, err, errcap)) == 0)
        *size = total;
    return rc;
}

int media_store_sweep(const char *root, int *removed, char *err, size_t errcap)
{
    *removed = 0;
    DIR *d = opendir(root);
    if (d == NULL) {
        int rc = errno == ENOENT ? 0 : -errno;
        if (rc != 0)
            snprintf(err, errcap, "media store %s: %s", root, strerror(-rc));
        return rc;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *p = NULL;
        if (strncmp(e->d_name, ".download-", 10) == 0)
            p = e->d_name + 10;
        else if (strncmp(e->d_name, ".incoming-", 10) == 0)
            p = e->d_name + 10;
        if (p == NULL)
            continue;
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p || *end != '-' || pid <= 0)
            continue; /* not a name this store gives */
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* its process still runs (or is not ours to judge) */
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        if (unlink(path) == 0)
            (*removed)++;
    }
    closedir(d);
    return 0;
}

bool media_store_rel_ok(const char *sha256, const char *rel)
{
    if (sha256 == NULL || rel == NULL || strlen(sha256) != 64 ||
        strspn(sha256, "0123456789abcdef") != 64)
        return false;
    char want[MEDIA_STORE_REL_MAX];
    snprintf(want, sizeof want, "%.2s/%s", sha256, sha256);
    return strcmp(rel, want) == 0;
}

int media_store_get_fd(const char *root, const char *sha256, int out, const char *outname,
                       uint64_t *size, char *err, size_t errcap)
{
    char rel[MEDIA_STORE_REL_MAX], src[4300];
    snprintf(rel, sizeof rel, "%.2s/%s", sha256, sha256);
    if (!media_store_rel_ok(sha256, rel)) {
        snprintf(err, errcap, "not a stored file's sha256");
        return -EINVAL;
    }
    snprintf(src, sizeof src, "%s/%s", root, rel);
    int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (in < 0) {
        int rc = -errno;
        snprintf(err, errcap, "stored file %s: %s", rel, strerror(-rc));
        return rc;
    }
    uint64_t total = 0;
    char hex[65];
    char where[4300];
    snprintf(where, sizeof where, "stored file %s", rel);
    struct stat st;
    int rc = 0;
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        snprintf(err, errcap, "%s is not a regular file; it is not served", where);
        goto done;
    }
    rc = copy_hashing(in, out, where, outname, hex, &total, err, errcap);
    if (rc != 0)
        goto done;
    if (strcmp(hex, sha256) != 0) {
        rc = -EBADMSG;
        snprintf(err, errcap, "the stored file %s does not match its sha256; it is not served",
                 rel);
        goto done;
    }
    *size = total;
done:
    close(in);
    return rc;
}

int media_store_get(const char *root, const char *sha256, const char *dst, uint64_t *size,
                    char *err, size_t errcap)
{
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (out < 0) {
        int rc = -errno;
        snprintf(err, errcap, "%s: %s", dst, strerror(-rc));
        return rc;
    }
    int rc = media_store_get_fd(root, sha256, out, dst, size, err, errcap);
    close(out);
    if (rc != 0)
        unlink(dst);
    return rc;
}
