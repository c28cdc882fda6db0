/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* Reads a whole file of at most max bytes into a NUL-terminated buffer
 * (*ret, malloc'd; *ret_len may be NULL). Files named by users and peers
 * (config, kubeconfig, tokens, documents) all go through here so that every
 * one of them has a size limit. 0, -EFBIG past max, -EISDIR, or -errno. */
int tl_read_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* Writes all of p (retrying short writes and EINTR). 0, -EIO when write()
 * makes no progress, or -errno; *ret_done (may be NULL) gets the bytes
 * written, also on failure, so a caller can cut back a partial record. */
int tl_write_all(int fd, const void *p, size_t len, size_t *ret_done);

/* Files written whole and then put in place: a temp file in the target's
 * directory, ".tl-XXXXXX.tmp" (a short name of its own: one derived from
 * the target passed NAME_MAX for long names, and a target named ".x" looked
 * like a temp file), made durable and renamed. */
#define TL_FILE_TMP_PREFIX ".tl-"
#define TL_FILE_TMP_SUFFIX ".tmp"
bool tl_file_is_temp(const char *name);
/* A new temp file in dir (created, one level, if missing): its path into
 * tmp (size bytes) and its descriptor (O_CLOEXEC), or -errno. */
int tl_file_temp(const char *dir, char *tmp, size_t size);
/* The temp file written through fd made durable and put in place: mode
 * 0644, fdatasync, close (fd is closed in every case), rename to path,
 * fsync of dir (the rename must survive a power cut too). *renamed says
 * whether tmp is now path. 0 or -errno. */
int tl_file_commit(int fd, const char *tmp, const char *path, const char *dir, bool *renamed);
/* data to DIR/FILE through a temp file: on error no partial FILE exists
 * and the temp file is removed. 0 or -errno. */
int tl_file_write_atomic(const char *dir, const char *file, const char *data, size_t len);
