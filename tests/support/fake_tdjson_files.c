/* fake_tdjson_files: the files of fake_tdjson (see fake_tdjson.c for the
 * library and its script, fake_tdjson_chats.c for chats and sending):
 * documents sent from a local file, downloadFile and deleteFile. Everything
 * here runs under the library's mutex.
 *
 * - sendMessage with inputMessageDocument {document: inputFileLocal {path},
 *   caption}: as TDLib, the path is resolved first (realpath; unresolvable:
 *   400 "Can't find real file path") and the file read, and named, by the
 *   resolved path; it is read whole when the message is sent (unreadable:
 *   400 "fake_tdjson: cannot read <path>: <why>"); its bytes are kept as
 *   <database_directory>/fake_sent/<n> and a line {n, path, real, name,
 *   size, caption} is appended to <database_directory>/fake_sent.jsonl
 *   (name: the resolved path's last component). The message's content is messageDocument
 *   {document: {file_name, mime_type, document: file {id, size, remote {id
 *   "sent-<n>", unique_id "sent-u-<n>"}}}, caption}.
 * - downloadFile {file_id}: the file object of that id in the client's
 *   messages (script history: messageDocument, messagePhoto, ... with file
 *   objects {id, size, remote {id, unique_id}}); unknown: 404 "File not
 *   found". The script's download_errors {"<file id>": {code, message}}
 *   answers that error instead. Otherwise a file of `size` bytes (byte i is
 *   remote.unique_id[i % its length]) is written as <database_directory>/
 *   files/<id>, two updateFile {file} are sent (half downloaded, then
 *   complete), then the answer: the file with local {path,
 *   is_downloading_completed: true, downloaded_size}. With the script's
 *   download_ms, a download takes that long: updateFile each quarter, the
 *   answer at the end; downloadFile of a file being downloaded joins it
 *   (answered when it ends, as TDLib does). The number of downloads is
 *   counted in <database_directory>/fake_downloads.
 * - deleteFile {file_id}: removes that local file; ok. */
#include "fake_tdjson_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The largest file the fake reads or writes. */
#define FAKE_FILE_MAX (64u * 1024 * 1024)

static json_int_t g_sent;

/* The file object of id in o (deep), or NULL. */
static json_t *file_find(json_t *o, json_int_t id)
{
    if (json_is_array(o)) {
        size_t i;
        json_t *v;
        json_array_foreach(o, i, v)
        {
            json_t *hit = file_find(v, id);
            if (hit)
                return hit;
        }
        return NULL;
    }
    if (!json_is_object(o))
        return NULL;
    if (!strcmp(fake__str_of(o, "@type"), "file") &&
        json_integer_value(json_object_get(o, "id")) == id)
        return o;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        json_t *hit = file_find(v, id);
        if (hit)
            return hit;
    }
    return NULL;
}

static json_t *client_file(fake_client_t *c, json_int_t id)
{
    size_t i;
    json_t *rec;
    json_array_foreach(c->chats, i, rec)
    {
        json_t *hit = file_find(json_object_get(rec, "msgs"), id);
        if (hit)
            return hit;
    }
    return NULL;
}

static char *sub_path(fake_client_t *c, const char *dir, json_int_t n)
{
    char *d = fake__path_in(c->db_dir, dir);
    mkdir(d, 0700);
    char name[32];
    snprintf(name, sizeof name, "%lld", (long long)n);
    char *p = fake__path_in(d, name);
    free(d);
    return p;
}

json_t *fake__document_content(fake_client_t *c, json_t *imc, json_t *extra)
{
    json_t *doc = json_object_get(imc, "document");
    const char *path = fake__str_of(doc, "path");
    if (strcmp(fake__str_of(doc, "@type"), "inputFileLocal") != 0 || !*path) {
        fake__answer_error(c, extra, 400, "fake_tdjson: only inputFileLocal documents are sent");
        return NULL;
    }
    /* TDLib resolves the path first and reads, and names, what it found. */
    char *real = realpath(path, NULL);
    if (!real) {
        fake__answer_error(c, extra, 400, "Can't find real file path");
        return NULL;
    }
    FILE *in = fopen(real, "rb");
    char *buf = malloc(FAKE_FILE_MAX);
    size_t n = in && buf ? fread(buf, 1, FAKE_FILE_MAX, in) : 0;
    int err = in ? (ferror(in) ? EIO : 0) : errno;
    if (in)
        fclose(in);
    if (err || !buf) {
        free(buf);
        fake__answer_error(c, extra, 400, "fake_tdjson: cannot read %s: %s", real,
                           strerror(err ? err : ENOMEM));
        free(real);
        return NULL;
    }
    json_int_t k = ++g_sent;
    char *keep = sub_path(c, "fake_sent", k);
    FILE *out = fopen(keep, "wb");
    if (out) {
        fwrite(buf, 1, n, out);
        fclose(out);
    }
    free(keep);
    free(buf);
    const char *name = strrchr(real, '/') + 1;
    const char *caption = fake__str_of(json_object_get(imc, "caption"), "text");
    char *log = fake__path_in(c->db_dir, "fake_sent.jsonl");
    FILE *lf = fopen(log, "a");
    json_t *line = json_pack("{s:I,s:s,s:s,s:s,s:I,s:s}", "n", k, "path", path, "real", real,
                             "name", name, "size", (json_int_t)n, "caption", caption);
    if (lf) {
        char *text = json_dumps(line, JSON_COMPACT);
        fprintf(lf, "%s\n", text ? text : "{}");
        free(text);
        fclose(lf);
    }
    json_decref(line);
    free(log);
    char rid[32], uid[32];
    snprintf(rid, sizeof rid, "sent-%lld", (long long)k);
    snprintf(uid, sizeof uid, "sent-u-%lld", (long long)k);
    json_t *content = json_pack(
        "{s:s,s:{s:s,s:s,s:s,s:{s:s,s:I,s:I,s:I,s:{s:s,s:s,s:s,s:b,s:I}}},s:{s:s,s:s,s:[]}}",
        "@type", "messageDocument", "document", "@type", "document", "file_name", name, "mime_type",
        "application/octet-stream", "document", "@type", "file", "id", 100000 + k, "size",
        (json_int_t)n, "expected_size", (json_int_t)n, "remote", "@type", "remoteFile", "id", rid,
        "unique_id", uid, "is_uploading_completed", 1, "uploaded_size", (json_int_t)n, "caption",
        "@type", "formattedText", "text", caption, "entities");
    free(real);
    return content;
}

static json_t *file_state(json_t *f, const char *path, json_int_t got, bool done)
{
    json_t *o = json_deep_copy(f);
    json_object_set_new(o, "local",
                        json_pack("{s:s,s:s,s:b,s:b,s:b,s:I,s:I}", "@type", "localFile", "path",
                                  done ? path : "", "can_be_downloaded", 1, "is_downloading_active",
                                  !done, "is_downloading_completed", done, "downloaded_size", got,
                                  "downloaded_prefix_size", got));
    return o;
}

static void count_download(fake_client_t *c)
{
    char *p = fake__path_in(c->db_dir, "fake_downloads");
    long n = 0;
    FILE *f = fopen(p, "r");
    if (f) {
        if (fscanf(f, "%ld", &n) != 1)
            n = 0;
        fclose(f);
    }
    f = fopen(p, "w");
    if (f) {
        fprintf(f, "%ld\n", n + 1);
        fclose(f);
    }
    free(p);
}

/* Downloads running (download_ms): "client:file id" -> when they end. */
static json_t *g_running;

static void write_file(const char *path, json_int_t size, const char *uid)
{
    FILE *out = fopen(path, "wb");
    size_t ul = strlen(uid);
    for (json_int_t i = 0; out && i < size; i++)
        fputc(uid[i % (json_int_t)ul], out);
    if (out)
        fclose(out);
}

static void h_download_file(fake_client_t *c, json_t *req, json_t *extra)
{
    json_int_t id = json_integer_value(json_object_get(req, "file_id"));
    json_t *f = client_file(c, id);
    if (!f) {
        fake__answer_error(c, extra, 404, "File not found");
        return;
    }
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)id);
    json_t *e = json_object_get(json_object_get(fake__script, "download_errors"), key);
    if (e) {
        fake__answer_error(c, extra, (int)json_integer_value(json_object_get(e, "code")), "%s",
                           fake__str_of(e, "message"));
        return;
    }
    json_int_t size = json_integer_value(json_object_get(f, "size"));
    const char *uid = fake__str_of(json_object_get(f, "remote"), "unique_id");
    if (size < 0 || size > (json_int_t)FAKE_FILE_MAX || !*uid) {
        fake__answer_error(c, extra, 400, "fake_tdjson: the file's size or unique_id is unusable");
        return;
    }
    char *path = sub_path(c, "files", id);
    json_int_t ms = fake__script_int("download_ms", 0);
    if (ms <= 0) {
        count_download(c);
        write_file(path, size, uid);
        fake__update(c, json_pack("{s:s,s:o}", "@type", "updateFile", "file",
                                  file_state(f, path, size / 2, false)));
        fake__update(c, json_pack("{s:s,s:o}", "@type", "updateFile", "file",
                                  file_state(f, path, size, true)));
        fake__answer(c, extra, file_state(f, path, size, true));
        free(path);
        return;
    }
    /* A download that takes download_ms: progress each quarter, the answer
     * at the end; asked again meanwhile, it is joined (answered when that
     * one ends). */
    if (!g_running)
        g_running = json_object();
    char rkey[48];
    snprintf(rkey, sizeof rkey, "%d:%lld", c->id, (long long)id);
    uint64_t now = fake__now_ms();
    json_int_t due = json_integer_value(json_object_get(g_running, rkey));
    if (due <= (json_int_t)now) {
        count_download(c);
        write_file(path, size, uid);
        due = (json_int_t)now + ms;
        json_object_set_new(g_running, rkey, json_integer(due));
        for (int q = 1; q <= 3; q++)
            fake__out_push(c->id,
                           json_pack("{s:s,s:o}", "@type", "updateFile", "file",
                                     file_state(f, path, size * q / 4, false)),
                           (uint64_t)(ms * q / 4), false, true);
    }
    json_t *answer = file_state(f, path, size, true);
    if (extra)
        json_object_set(answer, "@extra", extra);
    fake__out_push(c->id, answer, (uint64_t)(due - (json_int_t)now), false, true);
    free(path);
}

static void h_delete_file(fake_client_t *c, json_t *req, json_t *extra)
{
    char *path = sub_path(c, "files", json_integer_value(json_object_get(req, "file_id")));
    unlink(path);
    free(path);
    fake__answer_ok(c, extra);
}

const fake_method_t fake__file_methods[] = {
    {"downloadFile", h_download_file, true},
    {"deleteFile", h_delete_file, true},
};
const size_t fake__file_methods_len = sizeof fake__file_methods / sizeof fake__file_methods[0];
