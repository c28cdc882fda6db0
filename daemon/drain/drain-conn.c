/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "clock.h"
#include "drain-conn.h"
#include "termline-conn.h"

/* Counts already reported, per cgroup: open addressing, sized like the
 * kernel map; when full, the table starts over (the next poll reports each
 * cgroup's whole count once more, which only delays a gate). */
#define SEEN_SLOTS 16384
/* The kernel map's size (bpf/net.bpf.c, accepted) and how many entries one
 * batch lookup reads. */
#define CONN_MAP_MAX 8192
#define CONN_BATCH 256
#ifndef ENOTSUPP
#define ENOTSUPP 524 /* the kernel's, not in userspace errno.h */
#endif

struct seen {
	uint64_t cgroup_id; /* 0 = empty */
	uint64_t count;
};

struct tl_drain_conn {
	int map_fd;
	const struct tl_clock *clock;
	struct seen *seen;
	size_t nseen;
	bool no_batch;
};

int tl_drain_conn_new(int map_fd, const struct tl_clock *clock, struct tl_drain_conn **ret)
{
	struct tl_drain_conn *c;

	if (map_fd < 0)
		return -EBADF;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->seen = calloc(SEEN_SLOTS, sizeof(*c->seen));
	if (!c->seen) {
		free(c);
		return -ENOMEM;
	}
	c->clock = clock;
	c->map_fd = map_fd;
	*ret = c;
	return 0;
}

void tl_drain_conn_free(struct tl_drain_conn *c)
{
	if (!c)
		return;
	free(c->seen);
	free(c);
}

static struct seen *seen_slot(struct tl_drain_conn *c, uint64_t id)
{
	size_t i = (size_t)((id * 0x9E3779B97F4A7C15ULL) >> 50) % SEEN_SLOTS;

	for (size_t n = 0; n < SEEN_SLOTS; n++, i = (i + 1) % SEEN_SLOTS) {
		if (c->seen[i].cgroup_id == id)
			return &c->seen[i];
		if (!c->seen[i].cgroup_id) {
			if (c->nseen >= SEEN_SLOTS * 3 / 4) {
				memset(c->seen, 0, SEEN_SLOTS * sizeof(*c->seen));
				c->nseen = 0;
				return seen_slot(c, id);
			}
			c->seen[i].cgroup_id = id;
			c->nseen++;
			return &c->seen[i];
		}
	}
	return NULL;
}

static int report(struct tl_drain_conn *c, uint64_t key, const struct tl_conn_count *v,
		  tl_drain_conn_cb cb, void *ud)
{
	struct seen *s;

	if (!key)
		return 0;
	s = seen_slot(c, key);
	if (!s)
		return 0;
	if (v->count < s->count)
		s->count = 0; /* evicted from the LRU and counted afresh */
	if (v->count == s->count)
		return 0;
	cb(ud, key, v->count - s->count, tl_clock_boot_to_real(c->clock, v->last_ns));
	s->count = v->count;
	return 1;
}

/* One lookup per key: kernels without batch operations on this map. */
static int poll_by_key(struct tl_drain_conn *c, tl_drain_conn_cb cb, void *ud)
{
	uint64_t key, next;
	void *prev = NULL;
	int reported = 0;

	/* Bounded by the map's size: bpf_map_get_next_key restarts from the
	 * first key when the previous one was evicted meanwhile. */
	for (unsigned n = 0; n < CONN_MAP_MAX && bpf_map_get_next_key(c->map_fd, prev, &next) == 0; n++) {
		struct tl_conn_count v;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(c->map_fd, &key, &v) == 0)
			reported += report(c, key, &v, cb, ud);
	}
	return reported;
}

int tl_drain_conn_poll(struct tl_drain_conn *c, tl_drain_conn_cb cb, void *ud)
{
	uint64_t keys[CONN_BATCH], token = 0;
	struct tl_conn_count vals[CONN_BATCH];
	bool first = true;
	int reported = 0;

	if (c->no_batch)
		return poll_by_key(c, cb, ud);
	/* A few syscalls for the whole map instead of two per cgroup: this
	 * runs every TL_DRAIN_TICK_MS while a gate waits. */
	for (unsigned rounds = 0; rounds < CONN_MAP_MAX / CONN_BATCH + 1; rounds++) {
		__u32 n = CONN_BATCH;
		int r = bpf_map_lookup_batch(c->map_fd, first ? NULL : &token, &token, keys, vals, &n, NULL);
		int err = r < 0 ? errno : 0;

		first = false;
		for (__u32 i = 0; i < n && (r == 0 || err == ENOENT); i++)
			reported += report(c, keys[i], &vals[i], cb, ud);
		if (r == 0)
			continue;
		if (err == ENOENT)
			break;
		if (err == EINVAL || err == ENOSPC || err == ENOTSUPP || err == EOPNOTSUPP) {
			c->no_batch = true;
			return reported + poll_by_key(c, cb, ud);
		}
		return -err;
	}
	return reported;
}
