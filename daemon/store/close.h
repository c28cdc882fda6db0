/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Writing one timeline's document without blocking the loop: from a
 * snapshot of its state, one 64 KiB chunk per loop iteration into a temp
 * file (the writes on the store's worker thread), then termline-findings
 * (a child: the findings need the whole document parsed) or the worker
 * makes it durable and renames it into place. The outcome comes back
 * through one done(ud, result) callback, on the loop; a close job never
 * frees, unlinks or re-arms a timeline: its caller does, in done. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "document.h"
#include "findings-summary.h"
#include "state.h"

struct tl_loop;
struct tl_fsworker;
struct tl_metric;

/* What every close of a store needs; owned by the store, it outlives its
 * jobs. */
struct close_ctx {
	struct tl_loop *loop;
	struct tl_fsworker *fsw;
	const struct doc_recorder *rec;
	const char *findings_helper;    /* NULL: documents keep empty findings */
	bool (*writer_hook)(void *ud);  /* tests: false holds the job before a chunk */
	void *writer_hook_ud;
	struct tl_metric *disk_errors;  /* failures of the job's detached file calls */
};

struct close_result {
	int err;                     /* 0: the document is in place at path */
	const char *path;
	uint64_t bytes;
	const struct tl_state *snap; /* what the document holds */
	bool summarized;             /* termline-findings wrote the findings: */
	struct tl_findings_summary summary; /* ... what they come to */
};

struct close_job;
typedef void (*close_done_fn)(void *ud, const struct close_result *r);

/* Starts writing s's document (a snapshot is taken now) to path, a file
 * of dir. done(ud, result) is called once, from the loop; it may free the
 * job. 0, -ENOMEM, or -errno of the loop's timer. */
int close_start(const struct close_ctx *ctx, const struct tl_state *s, const char *dir,
		const char *path, close_done_fn done, void *ud, struct close_job **ret);
/* Runs one step now (shutdown, with the worker drained): > 0 while the job
 * goes on, else done has been called. */
int close_step(struct close_job *j);
/* The job waits for the findings helper (or a test's hook): a caller
 * stepping it should sleep a little between steps. */
bool close_waiting(const struct close_job *j);
/* The state being written. */
const struct tl_state *close_snapshot(const struct close_job *j);
/* Frees a finished job, or gives a running one up (its temp file goes;
 * only once no chunk is on the worker: after a drain). Accepts NULL. */
void close_free(struct close_job *j);

/* The findings helper: configured ("" turns it off: NULL), else next to
 * this program or in the libexec directory; NULL (and a warning) when
 * not found. 0 or -ENOMEM. */
int close_find_helper(const char *configured, char **ret);
