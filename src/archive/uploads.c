/* uploads: files to send, stored and recorded (see uploads.h). */
#include "archive/uploads.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive/media_store.h"
#include "net/http_client.h"

struct uploads_s {
    uv_loop_t *loop;
    archive_t *ar;
    net_client_t *net;
    char media_root[1024];
    uint64_t max_bytes;
    int active;
    unsigned seq;
};

typedef enum { OP_DECODE = 0, OP_FETCH, OP_STORE, OP_RECORD } op_stage_t;

struct uploads_op_s {
    uploads_t *u;
    op_stage_t stage;
    bool is_url;
    bool cancelled;
    char *src;
    char name[UPLOADS_NAME_MAX + 1];
    char mime[128];
    char source[300]; /* what is recorded: "base64", or scheme://host */
    char tmp[1100];
    net_req_t req;
    uv_work_t work;
    archive_call_t *call;
    /* Results of the thread-pool step. */
    int status;
    char sha256[65];
    char rel[MEDIA_STORE_REL_MAX];
    uint64_t size;
    char err[512];
    uploads_cb cb;
    void *data;
};

int uploads_new(uv_loop_t *loop, archive_t *ar, net_client_t *net, const uploads_config_t *cfg,
                uploads_t **out)
{
    uploads_t *u = calloc(1, sizeof *u);
    if (u == NULL)
        return UV_ENOMEM;
    u->loop = loop;
    u->ar = ar;
    u->net = net;
    snprintf(u->media_root, sizeof u->media_root, "%s", cfg->media_root);
    u->max_bytes = cfg->max_bytes;
    *out = u;
    return 0;
}

void uploads_free(uploads_t *u)
{
    free(u);
}

static void op_end(uploads_op_t *op, int status, const char *json, const char *error)
{
    uploads_t *u = op->u;
    if (op->tmp[0])
        unlink(op->tmp);
    u->active--;
    op->cb(op->data, status, json, error);
    free(op->src);
    free(op);
}

/* ---- names and types ------------------------------------------------------- */

/* Length of the UTF-8 sequence at s and its code point, or 0 (jansson
 * hands over valid UTF-8; anything else is refused as not text). */
static size_t utf8_next(const unsigned char *s, uint32_t *cp)
{
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t n = (s[0] & 0xe0) == 0xc0   ? 2
               : (s[0] & 0xf0) == 0xe0 ? 3
               : (s[0] & 0xf8) == 0xf0 ? 4
                                       : 0;
    if (n == 0)
        return 0;
    uint32_t v = s[0] & (0x7f >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    *cp = v;
    return n;
}

/* What makes cp unfit for a file name shown to people, or NULL: control
 * characters (C0, DEL, C1) and the bidirectional controls that reorder
 * what is shown ("cod.exe" shown as "exe.doc"). */
static const char *name_char_problem(uint32_t cp)
{
    if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
        return "a control character";
    if (cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069))
        return "a bidirectional control character (it changes how the name is shown)";
    return NULL;
}

/* True when a file name given by the caller may be stored; else false
 * with why (for the model). */
static bool name_ok(const char *name, char *why, size_t cap)
{
    for (const unsigned char *p = (const unsigned char *)name; *p;) {
        uint32_t cp;
        size_t n = utf8_next(p, &cp);
        if (n == 0) {
            snprintf(why, cap, "fileName: not valid UTF-8 text");
            return false;
        }
        const char *bad = name_char_problem(cp);
        if (bad != NULL) {
            snprintf(why, cap, "fileName: character %zu is %s (U+%04X); give a plain name",
                     (size_t)(p - (const unsigned char *)name), bad, (unsigned)cp);
            return false;
        }
        p += n;
    }
    return true;
}

/* A token character of RFC 2045 (a media type's type, subtype, parameter
 * name or unquoted value). */
static bool mime_tchar(unsigned char c)
{
    return c > 0x20 && c < 0x7f && strchr("()<>@,;:\\\"/[]?=", c) == NULL;
}

/* True when s is a media type: type "/" subtype, then parameters
 * (; name=value, value a token or a quoted string), ASCII without control
 * characters, shorter than cap. */
static bool mime_ok(const char *s, size_t cap)
{
    const unsigned char *p = (const unsigned char *)s;
    if (strlen(s) >= cap)
        return false;
    size_t n = 0;
    while (mime_tchar(p[n]))
        n++;
    if (n == 0 || p[n] != '/')
        return false;
    p += n + 1;
    for (n = 0; mime_tchar(p[n]); n++)
        ;
    if (n == 0)
        return false;
    p += n;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            return true;
        if (*p++ != ';')
            return false;
        while (*p == ' ' || *p == '\t')
            p++;
        for (n = 0; mime_tchar(p[n]); n++)
            ;
        if (n == 0 || p[n] != '=')
            return false;
        p += n + 1;
        if (*p == '"') {
            for (p++; *p != '"'; p++) {
                if (*p == '\\' && p[1] >= 0x20 && p[1] < 0x7f)
                    p++;
                else if (*p < 0x20 || *p >= 0x7f)
                    return false; /* the end, a control character, non-ASCII */
            }
            p++;
        } else {
            for (n = 0; mime_tchar(p[n]); n++)
                ;
            if (n == 0)
                return false;
            p += n;
        }
    }
}

/* A file name safe to store and send: the last path component, without
 * control or bidirectional control characters (each becomes '_'), ':',
 * '"' or separators, at most UPLOADS_NAME_MAX bytes, whole UTF-8
 * sequences. */
static void sanitize_name(const char *in, char *out, size_t cap)
{
    const char *base = in;
    for (const char *p = in; *p; p++)
        if (*p == '/' || *p == '\\')
            base = p + 1;
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)base; *p;) {
        uint32_t cp;
        size_t len = utf8_next(p, &cp);
        bool bad = len == 0 || name_char_problem(cp) != NULL || cp == ':' || cp == '"';
        if (bad) {
            if (n + 2 > cap)
                break;
            out[n++] = '_';
            p += len ? len : 1;
            continue;
        }
        if (n + len + 1 > cap)
            break;
        memcpy(out + n, p, len);
        n += len;
        p += len;
    }
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '.'))
        out[--n] = '\0';
    size_t lead = strspn(out, " .");
    memmove(out, out + lead, strlen(out + lead) + 1);
}

/* The type the first bytes say, or NULL. */
static const char *sniff(const unsigned char *b, size_t n)
{
    if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
        return "image/jpeg";
    if (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0)
        return "image/png";
    if (n >= 6 && (memcmp(b, "GIF87a", 6) == 0 || memcmp(b, "GIF89a", 6) == 0))
        return "image/gif";
    if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
        return "image/webp";
    if (n >= 12 && memcmp(b + 4, "ftyp", 4) == 0)
        return "video/mp4";
    if (n >= 4 && memcmp(b, "\x1a\x45\xdf\xa3", 4) == 0)
        return "video/webm";
    if (n >= 5 && memcmp(b, "%PDF-", 5) == 0)
        return "application/pdf";
    return NULL;
}

static const char *kind_of(const char *mime)
{
    if (strcmp(mime, "image/jpeg") == 0 || strcmp(mime, "image/png") == 0 ||
        strcmp(mime, "image/gif") == 0 || strcmp(mime, "image/webp") == 0)
        return "photo";
    if (strncmp(mime, "video/", 6) == 0)
        return "video";
    return "document";
}

/* ---- the thread-pool steps ---------------------------------------------------- */

/* Decodes base64 (whitespace ignored) into the temporary file. */
static int decode_to_tmp(uploads_op_t *op)
{
    const char *s = op->src;
    size_t n = strlen(s);
    char *clean = malloc(n + 4);
    if (clean == NULL) {
        snprintf(op->err, sizeof op->err, "out of memory");
        return UV_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
            continue;
        bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                  (ch >= '0' && ch <= '9') || ch == '+' || ch == '/' || ch == '=';
        if (!ok) {
            free(clean);
            snprintf(op->err, sizeof op->err,
                     "base64: character %zu is not base64 (give the bytes in standard base64, "
                     "or a data: URL)",
                     i);
            return UV_EINVAL;
        }
        if (ch != '=' && k > 0 && clean[k - 1] == '=') {
            free(clean);
            snprintf(op->err, sizeof op->err,
                     "base64: character %zu follows '=' padding; '=' may only end the data", i);
            return UV_EINVAL;
        }
        clean[k++] = ch;
    }
    /* Strict: "=" ends the data, at most two of them, only to fill the last
     * group of four; a lone character in the last group is no byte. */
    size_t data = k;
    while (data > 0 && clean[data - 1] == '=')
        data--;
    size_t given_pad = k - data;
    if (data == 0) {
        free(clean);
        snprintf(op->err, sizeof op->err, "base64: no data (give the file's bytes in base64)");
        return UV_EINVAL;
    }
    if (data % 4 == 1) {
        free(clean);
        snprintf(op->err, sizeof op->err,
                 "base64: the data ends in a group of one character, which is no whole byte "
                 "(%zu characters of data; the text looks cut short)",
                 data);
        return UV_EINVAL;
    }
    if (given_pad > 0 && (given_pad > 2 || k % 4 != 0)) {
        free(clean);
        snprintf(op->err, sizeof op->err,
                 "base64: the '=' padding does not fit (%zu '=' after %zu characters of data); "
                 "give standard base64",
                 given_pad, data);
        return UV_EINVAL;
    }
    while (k % 4 != 0) /* unpadded input */
        clean[k++] = '=';
    size_t pad = k >= 2 && clean[k - 1] == '=' ? (clean[k - 2] == '=' ? 2 : 1) : 0;
    size_t out_len = k / 4 * 3;
    if (out_len - pad > op->u->max_bytes) {
        free(clean);
        snprintf(op->err, sizeof op->err, "the file is larger than the %llu MB allowed",
                 (unsigned long long)(op->u->max_bytes >> 20));
        return UV_E2BIG;
    }
    unsigned char *bytes = malloc(out_len + 1);
    int got = bytes ? EVP_DecodeBlock(bytes, (const unsigned char *)clean, (int)k) : -1;
    free(clean);
    if (got < 0 || (size_t)got < pad || k == 0) {
        free(bytes);
        snprintf(op->err, sizeof op->err, "base64: not valid base64 (or empty)");
        return UV_EINVAL;
    }
    size_t len = (size_t)got - pad;
    int fd = open(op->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    int rc = 0;
    if (fd < 0) {
        rc = -errno;
    } else {
        for (size_t off = 0; off < len;) {
            ssize_t w = write(fd, bytes + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                rc = -errno;
                break;
            }
            off += (size_t)w;
        }
        close(fd);
    }
    free(bytes);
    if (rc != 0)
        snprintf(op->err, sizeof op->err, "writing the upload: %s", strerror(-rc));
    return rc;
}

static void store_work(uv_work_t *w)
{
    uploads_op_t *op = w->data;
    op->status = media_store_prepare(op->u->media_root, op->err, sizeof op->err);
    if (op->status == 0 && op->stage == OP_DECODE)
        op->status = decode_to_tmp(op);
    if (op->status != 0)
        return;
    unsigned char head[16];
    size_t nhead = 0;
    int fd = open(op->tmp, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r = read(fd, head, sizeof head);
        nhead = r > 0 ? (size_t)r : 0;
        close(fd);
    }
    const char *sniffed = sniff(head, nhead);
    if (op->mime[0] == '\0')
        snprintf(op->mime, sizeof op->mime, "%s", sniffed ? sniffed : "application/octet-stream");
    op->status = media_store_put(op->u->media_root, op->tmp, op->sha256, op->rel, &op->size,
                                 op->err, sizeof op->err);
    if (op->status == 0 && op->size == 0) {
        snprintf(op->err, sizeof op->err, "the file is empty");
        op->status = UV_EINVAL;
    }
}

static void recorded(void *data, int status, const char *json, archive_err_t err,
                     const char *message)
{
    uploads_op_t *op = data;
    (void)err;
    op->call = NULL;
    if (op->cancelled)
        op_end(op, UV_ECANCELED, NULL, "cancelled");
    else if (status != 0)
        op_end(op, status, NULL, message);
    else
        op_end(op, 0, json, NULL);
}

static void store_after(uv_work_t *w, int status)
{
    uploads_op_t *op = w->data;
    if (op->cancelled) {
        op_end(op, UV_ECANCELED, NULL, "cancelled");
        return;
    }
    if (status != 0 || op->status != 0) {
        int rc = status != 0 ? status : op->status;
        op_end(op, rc, NULL, op->err[0] ? op->err : uv_strerror(rc));
        return;
    }
    if (op->name[0] == '\0') {
        const char *ext = strcmp(op->mime, "image/jpeg") == 0        ? ".jpg"
                          : strcmp(op->mime, "image/png") == 0       ? ".png"
                          : strcmp(op->mime, "application/pdf") == 0 ? ".pdf"
                          : strcmp(op->mime, "video/mp4") == 0       ? ".mp4"
                                                                     : "";
        snprintf(op->name, sizeof op->name, "upload%s", ext);
    }
    json_t *a = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s}", "sha256", op->sha256, "localPath",
                          op->rel, "kind", kind_of(op->mime), "mimeType", op->mime, "fileName",
                          op->name, "size", (json_int_t)op->size, "source", op->source);
    char *args = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    op->stage = OP_RECORD;
    int rc = args ? archive_call(op->u->ar, ARCHIVE_WRITE, "parley_upload_store", args, NULL,
                                 recorded, op, &op->call)
                  : UV_ENOMEM;
    free(args);
    if (rc != 0)
        op_end(op, rc, NULL, "the archive is busy; retry in a moment");
}

/* ---- fetching ---------------------------------------------------------------- */

static void fetched(net_req_t *r, int status)
{
    uploads_op_t *op = r->data;
    long http = r->http_status;
    char why[300];
    snprintf(why, sizeof why, "%s", r->error);
    net_req_release(r);
    if (op->cancelled || status == UV_ECANCELED) {
        op_end(op, UV_ECANCELED, NULL, "cancelled");
        return;
    }
    if (status != 0) {
        char msg[400];
        if (status == UV_EACCES)
            snprintf(msg, sizeof msg, "url refused: %s", why[0] ? why : "not an allowed address");
        else if (status == UV_E2BIG)
            snprintf(msg, sizeof msg, "url: the file is larger than the %llu MB allowed",
                     (unsigned long long)(op->u->max_bytes >> 20));
        else if (status == UV_ETIMEDOUT)
            snprintf(msg, sizeof msg, "url: the server did not answer in time");
        else
            snprintf(msg, sizeof msg, "url: %s", why[0] ? why : uv_strerror(status));
        op_end(op, status, NULL, msg);
        return;
    }
    if (http < 200 || http > 299) {
        char msg[160];
        snprintf(msg, sizeof msg, "url: the server answered HTTP %ld", http);
        op_end(op, UV_EIO, NULL, msg);
        return;
    }
    op->stage = OP_STORE;
    op->work.data = op;
    int rc = uv_queue_work(op->u->loop, &op->work, store_work, store_after);
    if (rc != 0)
        op_end(op, rc, NULL, uv_strerror(rc));
}

/* The scheme and host of url (no credentials, no path) for the record. */
static void url_source(const char *url, char *out, size_t cap)
{
    const char *p = strstr(url, "://");
    const char *host = p ? p + 3 : url;
    const char *at = strchr(host, '@');
    const char *slash = strchr(host, '/');
    if (at && (!slash || at < slash))
        host = at + 1;
    size_t n = slash ? (size_t)(slash - host) : strlen(host);
    snprintf(out, cap, "%.*s%.*s", p ? (int)(p + 3 - url) : 0, url, (int)n, host);
}

/* ---- start ------------------------------------------------------------------------ */

int uploads_put(uploads_t *u, const char *source, bool is_url, const char *file_name,
                const char *mime_type, uploads_cb cb, void *data, uploads_op_t **out, char *err,
                size_t errcap)
{
    if (u->active >= UPLOADS_MAX_ACTIVE) {
        snprintf(err, errcap, "too many uploads at once; retry in a moment");
        return UV_EBUSY;
    }
    if (is_url && u->net == NULL) {
        snprintf(err, errcap, "url: fetching is off in this daemon");
        return UV_ENOTSUP;
    }
    uploads_op_t *op = calloc(1, sizeof *op);
    if (op == NULL) {
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    op->u = u;
    op->cb = cb;
    op->data = data;
    op->is_url = is_url;
    const char *payload = source;
    if (!is_url && strncmp(source, "data:", 5) == 0) {
        /* data:[<mime>][;charset=...];base64,<data> */
        const char *comma = strchr(source, ',');
        const char *b64 = comma ? strstr(source, ";base64") : NULL;
        if (comma == NULL || b64 == NULL || b64 > comma) {
            free(op);
            snprintf(err, errcap, "base64: a data: URL must be data:<type>;base64,<data>");
            return UV_EINVAL;
        }
        size_t ml = strcspn(source + 5, ";,");
        if (ml > 0) {
            char m[sizeof op->mime];
            snprintf(m, sizeof m, "%.*s", (int)(ml < sizeof m ? ml : sizeof m - 1), source + 5);
            if (ml >= sizeof m || !mime_ok(m, sizeof m)) {
                free(op);
                snprintf(err, errcap,
                         "base64: the data: URL's media type is not type/subtype (e.g. "
                         "data:image/png;base64,...)");
                return UV_EINVAL;
            }
            snprintf(op->mime, sizeof op->mime, "%s", m);
        }
        payload = comma + 1;
    }
    if (mime_type && mime_type[0] && !mime_ok(mime_type, sizeof op->mime)) {
        free(op);
        snprintf(err, errcap,
                 "mimeType: not a media type; give type/subtype with optional parameters "
                 "(e.g. \"application/pdf\" or \"text/plain; charset=utf-8\"), ASCII without "
                 "control characters, at most %zu bytes",
                 sizeof op->mime - 1);
        return UV_EINVAL;
    }
    if (file_name && file_name[0] && !name_ok(file_name, err, errcap)) {
        free(op);
        return UV_EINVAL;
    }
    op->src = strdup(payload);
    if (op->src == NULL) {
        free(op);
        snprintf(err, errcap, "out of memory");
        return UV_ENOMEM;
    }
    if (mime_type && mime_type[0])
        snprintf(op->mime, sizeof op->mime, "%s", mime_type);
    if (file_name && file_name[0]) {
        sanitize_name(file_name, op->name, sizeof op->name);
    } else if (is_url) {
        const char *p = strrchr(payload, '/');
        char guess[UPLOADS_NAME_MAX + 1];
        snprintf(guess, sizeof guess, "%.*s", (int)strcspn(p ? p + 1 : "", "?#"), p ? p + 1 : "");
        sanitize_name(guess, op->name, sizeof op->name);
    }
    snprintf(op->tmp, sizeof op->tmp, "%s/.upload-%d-%u", u->media_root, (int)getpid(), ++u->seq);
    int rc;
    if (is_url) {
        url_source(payload, op->source, sizeof op->source);
        op->stage = OP_FETCH;
        /* The store's directory must exist before the body streams there
         * (a mkdir at most, once). */
        rc = media_store_prepare(u->media_root, err, errcap);
        if (rc == 0) {
            op->req = (net_req_t){.url = op->src,
                                  .untrusted = true,
                                  .to_file = op->tmp,
                                  .max_bytes = u->max_bytes,
                                  .cb = fetched,
                                  .data = op};
            rc = net_request(u->net, &op->req);
            if (rc != 0) {
                snprintf(err, errcap, "url %s: %s", rc == UV_EACCES ? "refused" : "failed",
                         op->req.error[0] ? op->req.error : uv_strerror(rc));
                net_req_release(&op->req);
                unlink(op->tmp);
            }
        }
    } else {
        snprintf(op->source, sizeof op->source, "base64");
        op->stage = OP_DECODE;
        op->work.data = op;
        rc = uv_queue_work(u->loop, &op->work, store_work, store_after);
        if (rc != 0)
            snprintf(err, errcap, "%s", uv_strerror(rc));
    }
    if (rc != 0) {
        free(op->src);
        free(op);
        return rc;
    }
    u->active++;
    if (out)
        *out = op;
    return 0;
}

void uploads_cancel(uploads_op_t *op)
{
    op->cancelled = true;
    if (op->stage == OP_FETCH)
        net_request_cancel(&op->req); /* fetched runs now */
    else if (op->stage == OP_RECORD && op->call)
        archive_call_cancel(op->call);
    /* On the thread pool: store_after sees the flag. */
}
