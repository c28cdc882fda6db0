/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stddef.h>

/* Reads a whole file of at most max bytes into a NUL-terminated buffer
 * (*ret, malloc'd; *ret_len may be NULL). Files named by users and peers
 * (config, kubeconfig, tokens, documents) all go through here so that every
 * one of them has a size limit. 0, -EFBIG past max, -EISDIR, or -errno. */
int tl_read_file(const char *path, size_t max, char **ret, size_t *ret_len);
