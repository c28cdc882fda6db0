/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#pragma once
/* A set of tracked cgroup ids that BPF programs search with plain loads, the
 * first check of every hook (docs/architecture.md, "Tracked cgroups"): open
 * addressing by a hash of the id, an id in one of TL_CG_PROBES slots from its
 * home, 0 an empty slot (a search ends there), TL_CG_GONE a removed id's (a
 * search goes on past it). One writer, user space, through a mmapped map
 * (the HTTP object's .bss, the kernel-event objects' shared array), one
 * aligned 8-byte store per change: a program sees an id or not, never half
 * of one, and no id of the table is ever out of a search's reach. Each
 * object keeps every id in a hash map as well; an id that found no slot in
 * its window is only there, and while the table's spilled count is not 0
 * the programs look in the map for the ids the table does not have. The table replaced that
 * map's lookup, ~100 ns a call under nginx (bench/README.md). */
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TL_CG_SHIFT 12
#define TL_CG_SLOTS (1u << TL_CG_SHIFT)
#define TL_CG_PROBES 8
#define TL_CG_GONE (~0ULL)

struct tl_cg_table {
	__u64 slots[TL_CG_SLOTS];
	__u32 spilled; /* tracked ids in the hash map only (user space counts) */
	__u32 pad;
};

static inline __u32 tl_cg_home(__u64 cgroup_id)
{
	return (__u32)((cgroup_id * 0x9E3779B97F4A7C15ULL) >> (64 - TL_CG_SHIFT));
}

/* The programs' search: 1 the id is there, 0 it is not, -1 its window is
 * full of others (then only the hash map can say, when spilled is set). */
static inline __attribute__((always_inline)) int tl_cg_find(const __u64 *slots, __u64 cgroup_id)
{
	__u32 home = tl_cg_home(cgroup_id);

#ifdef __bpf__
#pragma unroll
#endif
	for (__u32 i = 0; i < TL_CG_PROBES; i++) {
		__u64 v = *(const volatile __u64 *)&slots[(home + i) & (TL_CG_SLOTS - 1)];

		if (v == 0)
			return 0;
		if (v == cgroup_id)
			return 1;
	}
	return -1;
}

#ifndef __bpf__
#include <errno.h>
#include <stdbool.h>
#include <bpf/bpf.h>

#define TL_CG_SLOT(i) ((i) & (TL_CG_SLOTS - 1))

/* 1 placed, 0 there already, -ENOSPC no free slot in the id's window,
 * -EINVAL for 0 and TL_CG_GONE (no id). */
static inline int tl_cg_table_add(__u64 *slots, __u64 cgroup_id)
{
	__u32 home = tl_cg_home(cgroup_id), free_at = TL_CG_PROBES;

	if (cgroup_id == 0 || cgroup_id == TL_CG_GONE)
		return -EINVAL;
	for (__u32 i = 0; i < TL_CG_PROBES; i++) {
		__u64 v = __atomic_load_n(&slots[TL_CG_SLOT(home + i)], __ATOMIC_RELAXED);

		if (v == cgroup_id)
			return 0;
		if ((v == 0 || v == TL_CG_GONE) && free_at == TL_CG_PROBES)
			free_at = i;
		if (v == 0)
			break;
	}
	if (free_at == TL_CG_PROBES)
		return -ENOSPC;
	__atomic_store_n(&slots[TL_CG_SLOT(home + free_at)], cgroup_id, __ATOMIC_RELEASE);
	return 1;
}

/* true when the id was there. */
static inline bool tl_cg_table_remove(__u64 *slots, __u64 cgroup_id)
{
	__u32 home = tl_cg_home(cgroup_id), at;

	if (cgroup_id == 0 || cgroup_id == TL_CG_GONE)
		return false;
	for (at = 0; at < TL_CG_PROBES; at++) {
		__u64 v = __atomic_load_n(&slots[TL_CG_SLOT(home + at)], __ATOMIC_RELAXED);

		if (v == cgroup_id)
			break;
		if (v == 0)
			return false;
	}
	if (at == TL_CG_PROBES)
		return false;
	at = TL_CG_SLOT(home + at);
	__atomic_store_n(&slots[at], TL_CG_GONE, __ATOMIC_RELEASE);
	/* A removed id's slot followed by an empty one can be empty too: no
	 * id's search crosses an empty slot, so none goes on past this one.
	 * And so on backwards, or the removed ones would fill the table. */
	while (__atomic_load_n(&slots[TL_CG_SLOT(at + 1)], __ATOMIC_RELAXED) == 0 &&
	       __atomic_load_n(&slots[at], __ATOMIC_RELAXED) == TL_CG_GONE) {
		__atomic_store_n(&slots[at], 0, __ATOMIC_RELEASE);
		at = TL_CG_SLOT(at + TL_CG_SLOTS - 1);
	}
	return true;
}

/* The tracked set as the loaders keep it: map_fd (cgroup id -> 1) holds
 * every id, t those it could place. 0: tracked (already, or now). */
static inline int tl_cg_track(int map_fd, struct tl_cg_table *t, __u64 cgroup_id)
{
	__u8 one = 1, v;

	if (cgroup_id == 0 || cgroup_id == TL_CG_GONE)
		return -EINVAL;
	if (bpf_map_lookup_elem(map_fd, &cgroup_id, &v) == 0)
		return 0;
	if (bpf_map_update_elem(map_fd, &cgroup_id, &one, BPF_NOEXIST) < 0)
		return -errno;
	/* The map first: a spilled id is looked up there. */
	if (tl_cg_table_add(t->slots, cgroup_id) == -ENOSPC)
		__atomic_store_n(&t->spilled, t->spilled + 1, __ATOMIC_RELEASE);
	return 0;
}

/* 0, or -ENOENT when the id was not tracked. */
static inline int tl_cg_untrack(int map_fd, struct tl_cg_table *t, __u64 cgroup_id)
{
	__u8 v;

	if (bpf_map_lookup_elem(map_fd, &cgroup_id, &v) < 0)
		return -errno;
	/* The table first: while the map still has the id, a program that
	 * misses it in the table may find it there, never the reverse. */
	if (!tl_cg_table_remove(t->slots, cgroup_id) && t->spilled > 0)
		__atomic_store_n(&t->spilled, t->spilled - 1, __ATOMIC_RELEASE);
	return bpf_map_delete_elem(map_fd, &cgroup_id) < 0 ? -errno : 0;
}
#endif
