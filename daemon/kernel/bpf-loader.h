/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "event.h"
#include "loop.h"

/* The kernel half: loads the process and net BPF objects (tp_btf programs,
 * classic tracepoints where tp_btf is missing), keeps the set of tracked
 * cgroups and pod IPs, and hands ring-buffer records, decoded into typed
 * events by decode.c, to the sink. */
struct tl_bpf;

struct tl_clock;

struct tl_bpf_config {
	uint32_t ringbuf_bytes;        /* rounded up to a power of two, >= 4096; 0 = TL_DEFAULT_RINGBUF_KIB */
	uint64_t signal_mask;          /* bit (signo - 1); 0 = TL_SIGNALS_DEFAULT (signals.h) */
	bool resets_without_socket;    /* also emit socket-less resets of non-pod addresses */
	bool force_classic;            /* classic tracepoints even where tp_btf works (tests) */
	/* BOOTTIME -> UTC, re-sampled by its owner; read at each record. NULL:
	 * the records' times stay BOOTTIME (tests that do not look). */
	const struct tl_clock *clock;
};

/* Opens, probes, configures, loads and attaches. On failure returns -errno
 * and writes one line to err (missing privileges, missing kernel BTF, the
 * program that failed to load). */
int tl_bpf_new(const struct tl_bpf_config *cfg, struct tl_bpf **ret, char *err, size_t errlen);
/* Detaches and frees; accepts NULL. Call before freeing the loop. */
void tl_bpf_free(struct tl_bpf *b);

/* Puts the ring buffer into the loop (its fd plus a 10 ms drain timer, since
 * the programs only wake the consumer once a quarter of the ring is full).
 * Each record is handed to emit. Once per bpf object. */
int tl_bpf_attach_loop(struct tl_bpf *b, struct tl_loop *loop, const struct tl_emitter *emit);
/* Consumes everything in the ring now and publishes the counters as metrics.
 * Returns the number of records or -errno. */
int tl_bpf_drain(struct tl_bpf *b);

/* Only tracked cgroups (cgroup v2 ids: the directory's inode) produce events. */
int tl_bpf_track_cgroup(struct tl_bpf *b, uint64_t cgroup_id);
/* -ENOENT when it was not tracked. */
int tl_bpf_untrack_cgroup(struct tl_bpf *b, uint64_t cgroup_id);
/* Pod IPs ("10.1.2.3", "fd00::5"): resets without a socket that involve one
 * are recorded (cgroup 0; the sink attributes them by IP). -EINVAL for a bad
 * address, -ENOENT on untrack of an unknown one. */
int tl_bpf_track_ip(struct tl_bpf *b, const char *ip);
int tl_bpf_untrack_ip(struct tl_bpf *b, const char *ip);

/* Records lost to a full ring, all kinds together and by event type
 * ("process.signal", ...; 0 for an unknown type). */
uint64_t tl_bpf_dropped_total(struct tl_bpf *b);
uint64_t tl_bpf_dropped(struct tl_bpf *b, const char *type);
/* Established TCP connections that closed in a tracked cgroup (counted, not
 * emitted), for one cgroup or (cgroup_id 0) all since load. */
uint64_t tl_bpf_tcp_closed(struct tl_bpf *b, uint64_t cgroup_id);

/* The map of inbound connections accepted per tracked cgroup
 * (struct tl_conn_count by cgroup id, bpf/net.bpf.c), counted for the
 * preStop gate and read by daemon/drain/drain-conn.c. Owned by b. */
int tl_bpf_accepted_map_fd(struct tl_bpf *b);
/* "hook:variant" of one attached hook ("inet_sock_set_state:tp_btf"),
 * NULL when there is no such hook. */
const char *tl_bpf_probe_of(struct tl_bpf *b, const char *hook);
/* Run time of each loaded program (kernel.bpf_stats_enabled, or an fd from
 * bpf_enable_stats(BPF_STATS_RUN_TIME) held open, must be on for the
 * counts to move): the producer's cost per hook. Fills up to max entries,
 * returns how many or -errno. */
struct tl_bpf_prog_stat {
	char name[64];
	uint64_t run_ns, run_cnt;
};
int tl_bpf_prog_stats(struct tl_bpf *b, struct tl_bpf_prog_stat *out, size_t max);

/* The attached hooks as "hook:variant" ("signal_generate:tp_btf"), NULL
 * terminated; owned by b. */
const char *const *tl_bpf_probe_names(struct tl_bpf *b);
