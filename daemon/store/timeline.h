/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "event.h"
#include "loop.h"
#include "pod-meta.h"

/* Per-Pod timelines: one per Pod UID seen on this node. A timeline opens at
 * the first event or metadata for its UID, stays open for the Pod's life,
 * and closes linger_s after "pod.deleted" (late resets and log lines still
 * land). Closing writes STATE/timelines/NS/NAME_UID.json atomically; Pods
 * whose namespace/name never became known (--no-api) are written to
 * STATE/timelines/_unknown/UID.json. Open timelines are journaled under
 * STATE/journal/ and replayed by tl_timelines_new().
 *
 * Memory per timeline is bounded, and the termination is what the budget
 * protects. Before termination: up to max_events entries everything is kept;
 * past it API lifecycle facts are kept up to 2 * max_events and everything
 * else (http.request, kernel events such as a long-lived Pod's probe execs)
 * is folded into "events.aggregated" entries per type, source, container and
 * second (when no new entry fits, the latest one of that kind is widened:
 * its intervalMs grows). Termination (the deletion request, or a SIGTERM or
 * SIGKILL) starts a fresh budget: max_events entries of anything, lifecycle
 * events up to 2 * max_events, the rest folded; past that, dropped (except
 * the first pod.deleted, which ends the timeline). Folded and dropped events
 * are counted in the document's "loss" and make it "complete": false. An
 * agent restart while a timeline
 * is open is recorded too (loss.agentRestarts, recorder.gaps).
 *
 * Closing does not block the loop: the document is written from a
 * snapshot of the timeline (its compact state; the record arena is shared,
 * not copied) one 64 KiB chunk per loop iteration into a temp file, which
 * is then synced and renamed. Until then the timeline is "closing":
 * listed, counted and served (from memory, the very document being
 * written) as open. Events and metadata that arrive meanwhile are recorded
 * and journaled as usual: once the document is on disk they are counted
 * as late, like events after a close; if the write fails they are in the
 * timeline, whose close is retried.
 *
 * Every way a timeline opens has a way to close (docs/architecture.md,
 * "Closing"): pod.deleted (or, without the API, the Pod's last container
 * cgroup removed); tl_timelines_end() for what the caller learns
 * otherwise (its log directory or its cgroups gone, nothing else
 * vouching for it); tl_timelines_close_missing() after a Pod LIST; the
 * idle close (idle_close_s without an event, and no source vouches for
 * the Pod); and at max_open, the least recently active timeline closes to
 * make room for a new Pod. Those closes say why in the document
 * ("closeReason"), and are counted in
 * termline_timelines_evicted_total{reason}. */

/* Why a timeline closes when its Pod's end was not recorded: the
 * document's closeReason (docs/timeline-format.md). */
enum tl_close_reason {
	TL_CLOSE_LOGS_REMOVED = 1,  /* "logsRemoved" */
	TL_CLOSE_CGROUPS_REMOVED,   /* "cgroupsRemoved" */
	TL_CLOSE_UNKNOWN_TO_API,    /* "unknownToApi" */
	TL_CLOSE_IDLE,              /* "idle" */
	TL_CLOSE_OPEN_LIMIT,        /* "openLimit" */
};

/* Provenance written into every document ("recorder"). Strings are copied. */
struct tl_recorder {
	const char *agent_version;
	const char *node;
	const char *kernel;
	const char *config_digest;
	const char *const *probes; /* NULL-terminated, may be NULL */
	int64_t recording_since_ns; /* realtime; 0 = now */
};

struct tl_findings_summary;

/* A timeline whose document is on disk (tl_timelines_config.closed).
 * Strings and summary are valid during the call only. */
struct tl_closed_info {
	const char *uid;
	const char *ns, *name;               /* NULL: unknown (an _unknown/ document) */
	const char *path;                    /* the document */
	const char *owner_kind, *owner_name; /* the Pod's controller owner; NULL: none */
	int64_t deletion_ns;                 /* 0: no deletion request recorded */
	bool complete;
	/* What its findings come to (findings-summary.h); NULL when the
	 * document has none (no findings helper, or it failed). */
	const struct tl_findings_summary *summary;
};

struct tl_timelines_config {
	const char *state_dir;
	uint32_t linger_s;        /* 0 closes on the next loop iteration */
	uint32_t max_events;      /* 0 = default 20000 */
	uint64_t retention_bytes; /* closed documents; 0 = unlimited */
	uint32_t retention_hours; /* 0 = unlimited */
	uint32_t fsync_ms;        /* journal fsync batching; 0 = default 200. Each tick
				   * syncs for at most 5 ms, the rest at the next. */
	uint32_t max_open;        /* open timelines at most; 0 = default 1024. At it,
				   * the least recently active one is closed for a
				   * new Pod (closeReason "openLimit"); with 64 such
				   * closes (or a quarter of max_open, if more) still
				   * in progress, new Pods are refused and counted
				   * (termline_timelines_refused_total). */
	/* A timeline with neither event nor metadata for this long, whose
	 * Pod vouched() does not vouch for, is closed (closeReason "idle").
	 * 0: never. Checked every quarter of it (1 s to 60 s). */
	uint32_t idle_close_s;
	/* Whether some source still vouches for the Pod (its cgroups, its
	 * log directory, the API): a Pod vouched for is not closed idle.
	 * NULL: none vouches. */
	bool (*vouched)(void *ud, const char *uid);
	void *vouched_ud;
	uint32_t journal_fds;     /* journal files held open at once; 0 = default 128 */
	struct tl_recorder recorder;
	/* tl_timelines_free() finishes documents still being written for at
	 * most this long; 0 = default 5000. A document not finished then is
	 * given up and its timeline stays journaled: the next start closes it
	 * again. */
	uint32_t close_wait_ms;
	/* termline-findings, which writes a closed document's findings off
	 * the loop (docs/http-api.md): NULL finds it next to this
	 * program or in the libexec directory; "" writes documents without
	 * findings. */
	const char *findings_helper;
	/* Called with the Pod's UID as its timeline starts to close, on the
	 * loop: a source that holds events of the Pod back (the HTTP capture
	 * waits for the proxy's log record of a request; the access log is
	 * read on the next wake-up) hands them over now, through the usual
	 * tl_timelines_add(), so that they land in the document instead of
	 * being counted late. NULL: nothing to ask. */
	void (*before_close)(void *ud, const char *uid);
	void *before_close_ud;
	/* Called once per timeline, on the loop, once its document is on
	 * disk and the timeline closed (events for its UID are late from
	 * then on): the place for whatever follows a closed timeline (the
	 * OTLP export, the per-workload metrics). Also for a timeline
	 * replayed after a restart when it closes then; never for the
	 * documents a start finds already written. NULL: nothing to tell. */
	void (*closed)(void *ud, const struct tl_closed_info *info);
	void *closed_ud;
	/* The documents closed from now on wait for the export: each is
	 * marked so beside it until tl_timelines_exported() (docs/export.md);
	 * tl_timelines_unexported() lists those still waiting, also after a
	 * restart. */
	bool export_marks;
	/* Tests only (NULL in termlined): asked before each chunk of a
	 * document; false holds the close in progress. */
	bool (*writer_hook)(void *ud);
	void *writer_hook_ud;
};

struct tl_timelines;

/* Creates the state directories, loads the index of closed documents,
 * replays every journal (open timelines survive a restart) and arms the
 * linger, fsync and retention timers on loop. */
int tl_timelines_new(const struct tl_timelines_config *cfg, struct tl_loop *loop,
		     struct tl_timelines **ret);
/* Flushes the journals (fsync) and frees; open timelines stay journaled.
 * Accepts NULL. */
void tl_timelines_free(struct tl_timelines *t);

/* Copies ev into the timeline of ev->pod_uid. Events with an empty pod_uid
 * are ignored (returns 0; the caller counts them); events for a Pod whose
 * timeline has already closed are counted as late and ignored. -EINVAL for a
 * malformed UID, -ENOMEM. */
int tl_timelines_add(struct tl_timelines *t, const struct tl_event *ev);
/* The Pod's metadata from the API side (pod-meta.h); replaces the previous
 * metadata of that UID (opening the timeline if needed) when a field
 * differs, and is then journaled. The store keeps a reference: meta must
 * not be changed afterwards. */
int tl_timelines_set_pod_meta(struct tl_timelines *t, const char *uid, const struct tl_pod_meta *meta);
/* A Pod LIST completed (started at before_ns, realtime; 0: any time):
 * every open timeline without a deletion, opened before it, whose UID
 * exists() denies starts its linger with that closeReason (no event is
 * invented; the document shows the gap). With the API, after each LIST
 * (TL_CLOSE_UNKNOWN_TO_API): after a restart the Pods deleted while the
 * agent was down, at any time a Pod the API never reported (a cgroup or
 * log directory of no Pod). Without it, at the start, the replayed
 * timelines whose Pods have neither cgroups nor a log directory left
 * (TL_CLOSE_CGROUPS_REMOVED). Returns how many. */
int tl_timelines_close_missing(struct tl_timelines *t, bool (*exists)(void *ud, const char *uid),
			       void *ud, int64_t before_ns, enum tl_close_reason reason);
/* The Pod of uid is gone as far as the caller knows (its log directory,
 * its cgroups: reason): its open timeline starts its linger with that
 * closeReason. 1 when it did, 0 when no open timeline of uid had not
 * ended yet, -EINVAL for a reason out of range. */
int tl_timelines_end(struct tl_timelines *t, const char *uid, enum tl_close_reason reason);
/* The document of uid was exported (or can never be): it waits no more.
 * 0 or -ENOENT (no such closed document, or removed by retention). */
int tl_timelines_exported(struct tl_timelines *t, const char *uid);
/* The closed documents that wait for the export (export_marks), newest
 * first, at most max: cb(ud, info) for each (info->summary is NULL: a
 * summary is not kept), until cb returns < 0. Returns how many were
 * given, or cb's negative return. */
int tl_timelines_unexported(struct tl_timelines *t, size_t max,
			    int (*cb)(void *ud, const struct tl_closed_info *info), void *ud);
/* Ring-buffer drops cannot be attributed: every open timeline is charged. */
void tl_timelines_note_kernel_loss(struct tl_timelines *t, uint64_t dropped);
/* fsync every journal now (shutdown). 0 or the first -errno. */
int tl_timelines_flush(struct tl_timelines *t);
/* Applies retention to closed documents now (also runs on a timer). */
int tl_timelines_retention_run(struct tl_timelines *t);

/* What GET /v1/timelines selects (docs/http-api.md). Strings are matched
 * exactly; NULL matches anything. since/until (ns, 0 = unbounded, both
 * inclusive) are matched on the deletion request's time, else on the
 * timeline's start. */
struct tl_list_filter {
	const char *ns, *owner_kind, *owner_name;
	int64_t since_ns, until_ns;
};

/* What the store says of one timeline in a list. Strings are valid during
 * the callback only. */
struct tl_timeline_info {
	const char *ns, *name;                /* NULL: unknown */
	const char *uid;
	bool open;                            /* open (closing included) or closed */
	size_t events, findings;              /* findings: 0 while open */
	const char *owner_kind, *owner_name;  /* NULL: none */
	int64_t deletion_ns;                  /* 0: none */
	int64_t started_ns;
	bool complete;
	int64_t failed_requests;              /* -1: not known (open, or no findings helper) */
};

/* Calls cb for every timeline f selects (NULL: all), closed ones first;
 * a negative return of cb stops and is returned, else how many. */
int tl_timelines_foreach(struct tl_timelines *t, const struct tl_list_filter *f,
			 int (*cb)(void *ud, const struct tl_timeline_info *info), void *ud);
/* The newest timeline of namespace/name (uid: that one; NULL = newest) as a
 * serialized document in *ret (malloc'd, caller frees). -ENOENT unknown.
 * Builds the whole document: for tests and tools; the HTTP server streams
 * with tl_timelines_open_doc. */
int tl_timelines_get(struct tl_timelines *t, const char *ns, const char *name, const char *uid,
		     char **ret, size_t *ret_len);

/* Serving a document without blocking the loop or holding it whole: an
 * open timeline is copied in its compact form (a memcpy, ~1 ms at 40k
 * events) and written in 64 KiB chunks as the client reads; a closed one
 * is read from its file. At most 16 readers at once: -EBUSY past that
 * (answer 503), -ENOENT unknown. The reader must be freed before the
 * store. */
struct tl_doc_reader;
int tl_timelines_open_doc(struct tl_timelines *t, const char *ns, const char *name,
			  const char *uid, struct tl_doc_reader **ret);
/* Up to max bytes of the document into buf: > 0 bytes, 0 at the end, or
 * -errno. */
ssize_t tl_doc_read(struct tl_doc_reader *r, char *buf, size_t max);
void tl_doc_reader_free(struct tl_doc_reader *r); /* accepts NULL */

size_t tl_timelines_open_count(const struct tl_timelines *t);
/* Pods refused since start because max_open timelines were open. */
uint64_t tl_timelines_refused(const struct tl_timelines *t);
/* Runs the idle close now (also on its timer): how many timelines it
 * ended. */
int tl_timelines_idle_run(struct tl_timelines *t);
/* Heap bytes held by open timelines (bench-timeline's figure). */
size_t tl_timelines_memory(const struct tl_timelines *t);
