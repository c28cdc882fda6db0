/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#pragma once
/* Maps and helpers every termline BPF object shares. Both objects declare the
 * same maps; user space creates them with the first object and hands the fds
 * to the second (bpf_map__reuse_fd), so there is one ring, one tracked-cgroup
 * set and one drop counter array. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "termline-events.h"
#include "termline-cgtab.h"

/* Resized from the configuration before load. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* cgroup v2 id -> 1, written by user space as containers come and go. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} tracked_cgroups SEC(".maps");

/* Failed ring-buffer reserves per event kind; summed over CPUs by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TL_EV_KIND_MAX);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* The same set as a table the programs search with plain loads (one element,
 * mmapped and written by user space; termline-cgtab.h): the hash map above
 * answers only for ids the table could not place. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tl_cg_table);
} tracked_table SEC(".maps");

static __always_inline int tl_cgroup_tracked(__u64 cgid)
{
	__u32 zero = 0;
	struct tl_cg_table *t;
	int r;

	if (!cgid)
		return 0;
	/* (an array's lookup is inlined by the verifier: no helper call) */
	t = bpf_map_lookup_elem(&tracked_table, &zero);
	if (!t)
		return 0;
	r = tl_cg_find(t->slots, cgid);
	if (r >= 0)
		return r;
	return *(volatile __u32 *)&t->spilled && bpf_map_lookup_elem(&tracked_cgroups, &cgid) != NULL;
}

static __always_inline void *tl_reserve(__u32 size, __u32 kind)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e) {
		__u64 *n = bpf_map_lookup_elem(&drops, &kind);

		if (n)
			*n += 1;
	}
	return e;
}

/* Submits without waking the consumer (it drains on a short timer) unless a
 * quarter of the ring is already filled: waking on every record costs several
 * microseconds per event (bench/README.md, bench-kernel-events). */
static __always_inline void tl_submit(void *e)
{
	__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	__u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);

	bpf_ringbuf_submit(e, avail > size / 4 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

static __always_inline void tl_header(struct tl_ev_header *h, __u16 kind, __u16 size,
				      __u32 flags, __u64 cgid)
{
	h->kind = kind;
	h->size = size;
	h->flags = flags;
	h->ktime_ns = bpf_ktime_get_boot_ns();
	h->cgroup_id = cgid;
	h->pid = 0;
	h->tgid = 0;
}

static __always_inline __u64 tl_task_cgroup(struct task_struct *t)
{
	return BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
}

/* Fills the header's subject from a task (not necessarily current). */
static __always_inline void tl_header_task(struct tl_ev_header *h, struct task_struct *t)
{
	h->pid = BPF_CORE_READ(t, pid);
	h->tgid = BPF_CORE_READ(t, tgid);
	__builtin_memset(h->comm, 0, sizeof(h->comm));
	bpf_probe_read_kernel_str(h->comm, sizeof(h->comm), &t->comm);
}

static __always_inline void tl_header_current(struct tl_ev_header *h)
{
	__u64 id = bpf_get_current_pid_tgid();

	h->pid = (__u32)id;
	h->tgid = id >> 32;
	bpf_get_current_comm(h->comm, sizeof(h->comm));
}
