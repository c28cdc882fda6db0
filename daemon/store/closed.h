/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The closed documents of a store: their index (built at start from
 * STATE/timelines, added to as timelines close) and retention by age and
 * bytes. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"

struct tl_metric;

/* One closed document. */
struct closed {
	char *ns, *name; /* NULL: unknown (an _unknown/ document) */
	char uid[TL_UID_MAX];
	char *path;
	uint64_t bytes;
	int64_t mtime_ns, started_ns;
	size_t events, findings;
	char *owner_kind, *owner_name; /* NULL: none */
	int64_t deletion_ns;           /* 0: none */
	int64_t failed;                /* failed requests; -1: not known */
	bool complete;
};

struct closed_index {
	struct closed *v;
	size_t n, cap;
	uint64_t bytes; /* of every document listed */
};

/* Copies c's strings. 0 or -ENOMEM. */
int closed_add(struct closed_index *x, const struct closed *c);
struct closed *closed_find(struct closed_index *x, const char *uid);
void closed_free(struct closed_index *x);

/* Adds every document under dir (STATE/timelines/NS/FILE.json) and
 * removes the temp files a crash left there. 0 or -errno (dir unreadable). */
int closed_scan(struct closed_index *x, const char *dir);

/* Removes the oldest documents while one is older than hours (0: no
 * limit) or the documents and extra_bytes (the open timelines' journals,
 * which use the same disk) pass max_bytes (0: no limit). A failed removal
 * counts in errors and stops. 0 or the first -errno. */
int closed_retention(struct closed_index *x, uint32_t hours, uint64_t max_bytes,
		     uint64_t extra_bytes, int64_t now_ns, struct tl_metric *errors);
