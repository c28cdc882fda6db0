/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The store's large growable buffers (each timeline's record arena and
 * event index): malloc'd up to MEM_BIG_MIN bytes, an anonymous mapping of
 * their own past it, grown with mremap (mem.c says why). */
#include <stddef.h>

#define MEM_BIG_MIN (64u * 1024)

/* p grown to hold need bytes (its first used bytes kept), *cap updated; or
 * NULL with p untouched. */
void *mem_grow(void *p, size_t *cap, size_t used, size_t need);
/* cap: what mem_grow gave (or less, by less than one element). Accepts
 * NULL. */
void mem_free(void *p, size_t cap);
/* A new buffer holding a copy of n bytes of p; *cap as mem_grow's. */
void *mem_dup(const void *p, size_t n, size_t *cap);
