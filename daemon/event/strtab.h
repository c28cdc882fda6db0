/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Interned strings of one timeline: each distinct string (comm, file name,
 * condition, ...) is held once and events carry its id. Ids are dense and
 * assigned in order of first use, so a journal replays them by position.
 * Append-only: ids stay valid for the table's life. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits per table: a peer that sends endless distinct strings is refused
 * (-E2BIG) rather than allowed to grow the agent. */
#define TL_STRTAB_MAX_STRINGS (1u << 20)
#define TL_STRTAB_MAX_BYTES (64u << 20)
#define TL_STRTAB_STR_MAX 65535

struct tl_strtab;

int tl_strtab_new(struct tl_strtab **ret);
void tl_strtab_free(struct tl_strtab *t); /* accepts NULL */
/* A deep copy (for a snapshot served while the original grows). */
int tl_strtab_clone(const struct tl_strtab *t, struct tl_strtab **ret);
/* The id of s (len bytes, may contain no NUL), adding it if new. Returns
 * the id (>= 0) or -ENOMEM / -E2BIG. */
int64_t tl_strtab_intern(struct tl_strtab *t, const char *s, size_t len);
/* NUL-terminated string of id, NULL when out of range; *len optional. */
const char *tl_strtab_get(const struct tl_strtab *t, uint32_t id, size_t *len);
uint32_t tl_strtab_count(const struct tl_strtab *t);
/* Heap bytes held (for the memory figures). */
size_t tl_strtab_memory(const struct tl_strtab *t);
