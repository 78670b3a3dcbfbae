/* backup_manifest: what `parleyd backup` writes beside the copies it makes
 * and `parleyd restore` checks before it uses them. A backup directory
 * holds
 *   pg/                 the embedded cluster as pg_basebackup made it
 *                       (plain format, WAL included, PostgreSQL's own
 *                       backup_manifest with a checksum of every file)
 *   media/              the media store, copied
 *   mcp-state.key, credentials.key, telegram/
 *                       the keys parleyd made itself and the Telegram
 *                       accounts' directories, when the data directory
 *                       has them (backup_items)
 *   parley-backup.json  this manifest, written last: a directory without
 *                       it is no complete backup
 * The manifest says its format and version, when and by which parleyd it
 * was made, the PostgreSQL major version, which items it holds and the
 * counts (files, bytes) of the cluster and the media store, which restore
 * compares with what it finds. Every function here does blocking file
 * I/O: call it on the thread pool, never on the loop. */
#ifndef PARLEY_APP_BACKUP_MANIFEST_H
#define PARLEY_APP_BACKUP_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BACKUP_MANIFEST_NAME  "parley-backup.json"
#define BACKUP_FORMAT         "parley-backup"
#define BACKUP_FORMAT_VERSION 1
#define BACKUP_MANIFEST_MAX   (64 * 1024) /* bytes of a manifest restore reads */
#define BACKUP_PG_DIR         "pg"
#define BACKUP_MEDIA_DIR      "media"
#define BACKUP_ITEMS          4
#define BACKUP_ERR_MAX        1536 /* a message naming a path (up to 1,024 bytes) */

/* The data directory's entries a backup copies besides the cluster, by
 * name (the first is the media store). */
extern const char *const backup_items[BACKUP_ITEMS];

typedef struct backup_count_s {
    uint64_t files;
    uint64_t bytes;
} backup_count_t;

typedef struct backup_manifest_s {
    int version;
    char parleyd[32];    /* the version that made it */
    char created[32];    /* UTC, ISO 8601 */
    char pg_version[16]; /* PG_VERSION of the cluster: its major version */
    char data_dir[1024]; /* where it was made from (for people) */
    bool has[BACKUP_ITEMS];
    backup_count_t pg, media;
} backup_manifest_t;

/* Counts the regular files under dir and their bytes, without following
 * symbolic links; a missing dir counts nothing. With drop_partial (a copy
 * of the media store), the files at dir's top whose name starts with a
 * dot are removed and not counted: media_store's files still being
 * written when they were copied (".incoming-PID-*", ".download-PID-*";
 * stored files are xx/SHA256). Returns 0 or a negative errno code with
 * err. */
int backup_count_tree(const char *dir, bool drop_partial, backup_count_t *out, char *err,
                      size_t errcap);

/* Writes m as DIR/parley-backup.json (through a temporary file, renamed
 * when complete and flushed). Returns 0 or a negative errno code with err. */
int backup_manifest_write(const char *dir, const backup_manifest_t *m, char *err, size_t errcap);

/* Reads and checks DIR/parley-backup.json: its format, a version this
 * parleyd reads, every field. Returns 0, or UV_ENOENT (no manifest: not
 * a backup, or one that did not finish), UV_EINVAL (not one this parleyd
 * reads) or another negative code, with err saying what to do. */
int backup_manifest_read(const char *dir, backup_manifest_t *m, char *err, size_t errcap);

#endif
