/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
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
