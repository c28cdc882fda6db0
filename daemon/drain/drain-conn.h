/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Inbound connections per cgroup, counted in the kernel (bpf/conn.bpf.c)
 * and read on demand: the connection facts of the drained condition
 * (docs/drain.md). */
struct tl_drain_conn;

enum tl_drain_conn_variant {
	TL_DRAIN_CONN_AUTO,       /* tp_btf, else the classic tracepoint */
	TL_DRAIN_CONN_TP_BTF,
	TL_DRAIN_CONN_TRACEPOINT,
};

/* Loads and attaches the program. err gets one line on failure. */
int tl_drain_conn_open(enum tl_drain_conn_variant v, struct tl_drain_conn **ret, char *err,
		       size_t errlen);
/* tl_drain_conn_open(TL_DRAIN_CONN_AUTO, ...) */
int tl_drain_conn_new(struct tl_drain_conn **ret, char *err, size_t errlen);
/* "inet_sock_set_state:tp_btf" or "inet_sock_set_state:tracepoint". */
const char *tl_drain_conn_probe(const struct tl_drain_conn *c);
void tl_drain_conn_free(struct tl_drain_conn *c);

/* Calls cb for every cgroup whose count grew since the previous poll, with
 * how many are new and the time of the latest (UTC ns). Returns how many
 * cgroups were reported, or -errno. */
typedef void (*tl_drain_conn_cb)(void *ud, uint64_t cgroup_id, uint64_t new_count, int64_t last_ns);
int tl_drain_conn_poll(struct tl_drain_conn *c, tl_drain_conn_cb cb, void *ud);
