/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Inbound connections per cgroup, counted in the kernel by the agent's TCP
 * program (bpf/net.bpf.c, map "accepted": tl_bpf_accepted_map_fd()) and
 * read on demand: the connection facts of the drained condition
 * (docs/drain.md). */
struct tl_drain_conn;

/* A reader of the map map_fd (not owned: it must outlive the reader); the
 * counters' times are BOOTTIME, turned to UTC with clock (re-sampled by
 * its owner, read at each poll). */
struct tl_clock;
int tl_drain_conn_new(int map_fd, const struct tl_clock *clock, struct tl_drain_conn **ret);
void tl_drain_conn_free(struct tl_drain_conn *c);

/* Calls cb for every cgroup whose count grew since the previous poll, with
 * how many are new and the time of the latest (UTC ns). Returns how many
 * cgroups were reported, or -errno. */
typedef void (*tl_drain_conn_cb)(void *ud, uint64_t cgroup_id, uint64_t new_count, int64_t last_ns);
int tl_drain_conn_poll(struct tl_drain_conn *c, tl_drain_conn_cb cb, void *ud);
