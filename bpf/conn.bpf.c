// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Inbound connections accepted per cgroup, for the preStop gate
 * (docs/drain.md): a counter and the time of the latest, read by user space
 * only while a gate waits. Not events: connections arrive at kernel rates,
 * and all the gate needs is "when was the last one".
 *
 * The hook is the handshake completing on the server side, the child socket
 * going SYN_RECV -> ESTABLISHED. It runs in softirq, so the Pod is found
 * through the socket's own cgroup, which an accepted socket inherits from
 * its listener (sk_clone_lock copies sk_cgrp_data): the container that
 * listens, whoever the packet's task context is. Connections from loopback
 * or from the Pod's own address are the Pod talking to itself (a sidecar
 * forwarding to its app) and are not counted. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "termline-conn.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6

/* cgroup id -> counter. LRU: every listening cgroup of the node may appear;
 * the least recently used goes first when it is full. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct tl_conn_count);
} accepted SEC(".maps");

static __always_inline int from_self(const struct sock *sk)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	if (family == AF_INET) {
		__u32 d = BPF_CORE_READ(sk, __sk_common.skc_daddr);
		__u32 s = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);

		/* network order: the first byte is the lowest */
		return (d & 0xff) == 127 || d == s;
	}
	if (family == AF_INET6) {
		__u32 d[4], s[4];

		BPF_CORE_READ_INTO(&d, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr32);
		BPF_CORE_READ_INTO(&s, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32);
		if (d[0] == 0 && d[1] == 0 && d[2] == 0 && d[3] == bpf_htonl(1))
			return 1; /* ::1 */
		if (d[0] == 0 && d[1] == 0 && d[2] == bpf_htonl(0xffff) && (d[3] & 0xff) == 127)
			return 1; /* ::ffff:127.x.x.x */
		return d[0] == s[0] && d[1] == s[1] && d[2] == s[2] && d[3] == s[3];
	}
	return 1; /* not IP: not a Service's traffic */
}

static __always_inline int count_accept(const struct sock *sk, int oldstate, int newstate)
{
	struct tl_conn_count zero = {}, *c;
	struct cgroup *cg;
	__u64 cgid;

	if (oldstate != TCP_SYN_RECV || newstate != TCP_ESTABLISHED)
		return 0;
	if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP || from_self(sk))
		return 0;
	cg = BPF_CORE_READ(sk, sk_cgrp_data.cgroup);
	if (!cg)
		return 0;
	cgid = BPF_CORE_READ(cg, kn, id);
	c = bpf_map_lookup_elem(&accepted, &cgid);
	if (!c) {
		bpf_map_update_elem(&accepted, &cgid, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&accepted, &cgid);
		if (!c)
			return 0;
	}
	__sync_fetch_and_add(&c->count, 1);
	c->last_ns = bpf_ktime_get_boot_ns();
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(conn_accepted, const struct sock *sk, const int oldstate, const int newstate)
{
	return count_accept(sk, oldstate, newstate);
}

/* The classic tracepoint twin, where tp_btf cannot attach: the socket
 * comes as an address, read through CO-RE all the same. */
SEC("tracepoint/sock/inet_sock_set_state")
int conn_accepted_tp(struct trace_event_raw_inet_sock_set_state *ctx)
{
	return count_accept((const struct sock *)ctx->skaddr, ctx->oldstate, ctx->newstate);
}
