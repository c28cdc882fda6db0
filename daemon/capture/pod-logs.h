/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "loop.h"

/* Tails one container's CRI log files in every Pod directory under the
 * kubelet's log root: ROOT/<namespace>_<pod>_<uid>/<container>/<restart>.log
 * (docs/http-capture.md, "Access logs"). inotify on the loop wakes it; a
 * one-second rescan catches what inotify missed (queue overflow, a
 * directory created between listing and watching). Follows rotation (the
 * kubelet renames N.log away and the runtime opens a new N.log: the old file
 * is read to its end first) and truncation (read again from the start).
 * Pods whose directory exists when the tailer starts are read from the end
 * of their files (their past is not this agent's to report); directories and
 * files that appear later are read from their beginning.
 *
 * Everything below the root is opened beneath it without following a
 * symlink (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or O_NOFOLLOW per
 * component where the kernel has no openat2): a Pod directory, container
 * directory or log file that is a symlink is refused, never read. The root
 * itself is followed. */
struct tl_pod_logs;

struct tl_pod_log_source {
	const char *ns;
	const char *pod;
	const char *uid;
	const char *container;
	const char *file;       /* path of the file the record came from */
};

/* One record (a container output line, CRI pieces joined); text is NUL
 * terminated and valid during the call only. */
typedef void (*tl_pod_log_cb)(void *userdata, const struct tl_pod_log_source *src,
			      int64_t time_ns, const char *text, size_t len, bool cut);

/* A Pod directory ("<ns>_<pod>_<uid>") or container directory
 * ("<ns>_<pod>_<uid>/<container>") below root that is a symlink: refused.
 * Called once per directory while it stays (again if it goes and comes
 * back), with the userdata of the record callback. */
typedef void (*tl_pod_log_refused_cb)(void *userdata, const char *root, const char *rel);

/* The last log file of Pod uid went away (its directory removed or
 * renamed): what the files held has been read. With the userdata of the
 * record callback. */
typedef void (*tl_pod_log_gone_cb)(void *userdata, const char *uid);

struct tl_pod_logs_config {
	const char *root;        /* --pod-logs-dir */
	const char *container;   /* the container whose output is read, e.g. "istio-proxy" */
	uint32_t max_files;      /* open files at most (and refused directories remembered); 0 = 1024 */
	uint32_t rescan_ms;      /* 0 = 1000 */
	tl_pod_log_refused_cb on_refused; /* NULL = counted only */
	tl_pod_log_gone_cb on_pod_gone;   /* NULL = not told */
};

/* The root need not exist yet (a node without Pods): it is looked for at
 * every rescan. loop may be NULL (tests drive tl_pod_logs_poll). */
int tl_pod_logs_new(const struct tl_pod_logs_config *cfg, struct tl_loop *loop, tl_pod_log_cb cb,
		    void *userdata, struct tl_pod_logs **ret);
void tl_pod_logs_free(struct tl_pod_logs *p);
/* Rescans the tree and reads everything new now. Returns records read or -errno. */
int tl_pod_logs_poll(struct tl_pod_logs *p);

/* Reads what the Pod's (API UID) open files hold beyond what was read, now
 * (its timeline is about to close). Returns records read. */
int tl_pod_logs_read_pod(struct tl_pod_logs *p, const char *uid);

struct tl_pod_logs_stats {
	uint64_t files;          /* open now */
	uint64_t records;
	uint64_t bytes;
	uint64_t rotations;
	uint64_t truncations;
	uint64_t garbage_lines;  /* lines that were not CRI lines */
	uint64_t files_refused;  /* over max_files */
	uint64_t dirs_refused;   /* symlinked Pod or container directories, once each */
	uint64_t rescans;        /* walks of the whole tree */
};
void tl_pod_logs_stats(const struct tl_pod_logs *p, struct tl_pod_logs_stats *ret);
/* Whether a log file of the Pod (API UID) is being read. */
bool tl_pod_logs_has_pod(const struct tl_pod_logs *p, const char *uid);
/* For tests: resolve as on a kernel without openat2 (O_NOFOLLOW per
 * component), process-wide. */
void tl_pod_logs_test_no_openat2(bool on);
