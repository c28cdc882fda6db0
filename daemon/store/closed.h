/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The closed documents of a store: their index (built at start from
 * STATE/timelines, added to as timelines close) and retention by age and
 * bytes. What a list entry says of a document (owner, deletion, events,
 * findings, failed requests, complete) is kept beside the documents in
 * STATE/closed.idx, a cache of records written as timelines close: a
 * start parses only the documents the cache does not describe (written
 * by an older agent, or changed since). The record also says whether the
 * document waits for the OTLP export: a start exports those again. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"

struct tl_metric;

/* Whether a document is exported (OTLP, docs/export.md). */
enum closed_export {
	CLOSED_EXPORT_NONE = 0, /* not meant to be (closed with the export off, or
				 * known only from its file) */
	CLOSED_EXPORT_PENDING,  /* closed with the export on, not sent yet */
	CLOSED_EXPORT_DONE,     /* sent (or never sendable) */
};

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
	uint8_t export;                /* enum closed_export */
};

struct closed_index {
	struct closed *v;
	size_t n, cap;
	uint64_t bytes;       /* of every document listed */
	char *dir;            /* STATE/timelines */
	char *cache;          /* STATE/closed.idx */
	size_t cache_records; /* in the file (stale ones included) */
	struct tl_metric *errors; /* failed writes of the cache */
	uint64_t parsed;      /* documents the last scan parsed */
};

/* An empty index of the documents under dir, with its cache at cache
 * (NULL: none). 0 or -ENOMEM. */
int closed_init(struct closed_index *x, const char *dir, const char *cache,
		struct tl_metric *errors);
/* Copies c's strings; c->mtime_ns and c->bytes must be the file's (the
 * cache is checked against them). Appends c to the cache. 0 or -ENOMEM. */
int closed_add(struct closed_index *x, const struct closed *c);
struct closed *closed_find(struct closed_index *x, const char *uid);
/* The document of uid is exported (or now waits to be): the record says
 * so, appended to the cache. 0 or -ENOENT. */
int closed_set_export(struct closed_index *x, const char *uid, enum closed_export e);
/* The documents waiting for the export, newest first, at most max: their
 * indexes into x->v in ret[] (max long). Returns how many. */
size_t closed_pending_export(const struct closed_index *x, size_t max, size_t *ret);
void closed_free(struct closed_index *x);

/* Adds every document under the index's directory (NS/FILE.json), from
 * the cache when it describes the file (same size and mtime), else parsed;
 * removes the temp files a crash left; rewrites the cache when it was
 * not exact. 0 or -errno (the directory unreadable). */
int closed_scan(struct closed_index *x);

/* Removes the oldest documents while one is older than hours (0: no
 * limit) or the documents and extra_bytes (the open timelines' journals,
 * which use the same disk) pass max_bytes (0: no limit). A failed removal
 * counts in errors and stops. 0 or the first -errno. */
int closed_retention(struct closed_index *x, uint32_t hours, uint64_t max_bytes,
		     uint64_t extra_bytes, int64_t now_ns, struct tl_metric *errors);
