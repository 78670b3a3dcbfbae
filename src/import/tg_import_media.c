/* tg_import_media: the files of an imported Telegram chat copied into the
 * media store (see tg_import_media.h). */
#include "import/tg_import_media.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "archive/media_store.h"
#include "util/beneath.h"
#include "util/log.h"

#define TM_TAG "import"

/* What a refused file's code means, for the media row and the warning. */
static const char *beneath_why(int rc)
{
    switch (rc) {
    case -EPERM:
    case -EXDEV:
    case -EISDIR:
        return "the path leaves the export folder";
    case -ELOOP:
    case -ENOTDIR:
        return "a symbolic link: files are read only inside the export folder, never through a "
               "link";
    case -EINVAL:
        return "not a regular file";
    case -ENOENT:
        return "not in the export folder";
    default:
        return NULL;
    }
}

void tg_import_media_copy(json_t *batch, const char *export_dir, const char *media_root,
                          const char *path)
{
    size_t i;
    json_t *row;
    json_array_foreach(batch, i, row)
    {
        const char *rel = json_string_value(json_object_get(row, "export_path"));
        json_int_t msg = json_integer_value(json_object_get(row, "message_id"));
        char err[512], sha[65], stored[MEDIA_STORE_REL_MAX];
        uint64_t size = 0;
        int fd = rel && rel[0] ? beneath_open_read(export_dir, rel, 0, &size) : -EISDIR;
        if (fd < 0) {
            const char *why = beneath_why(fd);
            bool missing = fd == -ENOENT;
            if (why == NULL) {
                snprintf(err, sizeof err, "%s", strerror(-fd));
                why = err;
            }
            if (!missing)
                log_warn(TM_TAG, "%s: message %lld: file \"%.300s\": %s; not stored", path,
                         (long long)msg, rel ? rel : "", why);
            json_object_set_new(row, "state", json_string(missing ? "unavailable" : "error"));
            json_object_set_new(row, "error", json_string(why));
            continue;
        }
        int rc = media_store_put_fd(media_root, fd, rel, sha, stored, &size, err, sizeof err);
        close(fd);
        if (rc != 0) {
            json_object_set_new(row, "state", json_string("error"));
            json_object_set_new(row, "error", json_string(err));
            continue;
        }
        json_object_set_new(row, "state", json_string("done"));
        json_object_set_new(row, "sha256", json_string(sha));
        json_object_set_new(row, "local_path", json_string(stored));
        json_object_set_new(row, "size", json_integer((json_int_t)size));
    }
}

void tg_import_media_count(const json_t *batch, tg_import_stats_t *st)
{
    size_t i;
    const json_t *row;
    json_array_foreach(batch, i, row)
    {
        const char *state = json_string_value(json_object_get(row, "state"));
        if (state && strcmp(state, "done") == 0)
            st->files_stored++;
        else if (state && strcmp(state, "unavailable") == 0)
            st->files_missing++;
        else
            st->files_refused++;
    }
}
