// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* TCP hooks: listeners opening and closing, resets sent and received, a
 * count of established connections closing, and a count of inbound
 * connections accepted for the preStop gate. These run in softirq or in
 * another task's context (a reset received on loopback runs in the sender's),
 * so events are attributed by the socket's own cgroup, never by current
 * alone. Each hook has a tp_btf program and a classic tracepoint twin. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "termline-events.h"
#include "termline-conn.h"
#include "termline-common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6

/* Emit resets that have no socket (refused connections, cgroup 0) even when
 * neither address is a tracked pod IP. */
const volatile __u8 resets_without_socket = 0;

/* Pod IPs (IPv4 as ::ffff:a.b.c.d) maintained by user space: a reset without
 * a socket is kept when either end is one of them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct tl_ip_key);
	__type(value, __u8);
} pod_ips SEC(".maps");

/* Established connections that closed, per tracked cgroup (not emitted one
 * by one: they are the high-rate kind). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} tcp_closed SEC(".maps");

/* The same, all tracked cgroups together since load (entries above go away
 * with their cgroup). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tcp_closed_total SEC(".maps");

/* Inbound connections accepted per tracked cgroup, for the preStop gate
 * (docs/drain.md): a counter and the time of the latest, read by user space
 * (daemon/drain/drain-conn.c) only while a gate waits. Not events:
 * connections arrive at kernel rates, and all the gate needs is "when was
 * the last one". LRU: the least recently used cgroup goes first when full. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct tl_conn_count);
} accepted SEC(".maps");

/* Reads a field of sk: a plain load where sk is the kernel's own pointer
 * to a BTF type (a tp_btf argument: direct), which the kernel makes
 * fault-safe, else a probe read (the classic twin's number). Each probe
 * read is a helper call, and inet_sock_set_state runs ~10 times per
 * connection on each end (bench/README.md). */
#define SK_READ(direct, sk, field) ((direct) ? (sk)->field : BPF_CORE_READ(sk, field))

static __always_inline __u64 sock_cgroup(const struct sock *sk, __u32 *flags, const bool direct)
{
	struct cgroup *cg = SK_READ(direct, sk, sk_cgrp_data.cgroup);

	if (cg) {
		*flags |= TL_EVF_SOCK_CGROUP;
		return direct ? cg->kn->id : BPF_CORE_READ(cg, kn, id);
	}
	return bpf_get_current_cgroup_id();
}

/* Local and remote ends from the socket's common part, valid for full,
 * request and timewait sockets alike. */
static __always_inline void sock_addrs(struct tl_ev_sock *e, const struct sock *sk)
{
	__builtin_memset(e->laddr, 0, sizeof(e->laddr));
	__builtin_memset(e->raddr, 0, sizeof(e->raddr));
	e->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (e->family == AF_INET6) {
		BPF_CORE_READ_INTO(&e->laddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&e->raddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	} else {
		BPF_CORE_READ_INTO((__u32 *)e->laddr, sk, __sk_common.skc_rcv_saddr);
		BPF_CORE_READ_INTO((__u32 *)e->raddr, sk, __sk_common.skc_daddr);
	}
	e->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	e->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
}

/* After an active reset or unhash skc_num is already 0; inet_sport keeps it. */
static __always_inline void fix_lport(struct tl_ev_sock *e, const struct sock *sk)
{
	if (!e->lport)
		e->lport = bpf_ntohs(BPF_CORE_READ((struct inet_sock *)sk, inet_sport));
}

static __always_inline struct tl_ev_sock *sock_reserve(__u16 kind, __u32 flags, __u64 cgid)
{
	struct tl_ev_sock *e = tl_reserve(sizeof(*e), kind);

	if (!e)
		return NULL;
	tl_header(&e->h, kind, sizeof(*e), flags, cgid);
	__builtin_memset(e->h.comm, 0, sizeof(e->h.comm));
	return e;
}

static __always_inline void count_closed(__u64 cgid)
{
	__u64 one = 1, *n;
	__u32 zero = 0;

	n = bpf_map_lookup_elem(&tcp_closed_total, &zero);
	if (n)
		*n += 1;
	n = bpf_map_lookup_elem(&tcp_closed, &cgid);
	if (n) {
		*n += 1;
		return;
	}
	bpf_map_update_elem(&tcp_closed, &cgid, &one, BPF_NOEXIST);
}

/* A connection from loopback or from the Pod's own address is the Pod
 * talking to itself (a sidecar forwarding to its app), not a Service's
 * traffic. */
static __always_inline int from_self(const struct sock *sk, const bool direct)
{
	__u16 family = SK_READ(direct, sk, __sk_common.skc_family);

	if (family == AF_INET) {
		__u32 d = SK_READ(direct, sk, __sk_common.skc_daddr);
		__u32 s = SK_READ(direct, sk, __sk_common.skc_rcv_saddr);

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

/* The handshake completed on the server side (the child socket going
 * SYN_RECV -> ESTABLISHED, in softirq): the accepted socket inherits its
 * listener's cgroup (sk_clone_lock copies sk_cgrp_data), so the count goes
 * to the container that listens, whoever the packet's task context is. */
static __always_inline void count_accepted(const struct sock *sk, __u64 cgid, const bool direct)
{
	struct tl_conn_count zero = {}, *c;

	if (from_self(sk, direct))
		return;
	c = bpf_map_lookup_elem(&accepted, &cgid);
	if (!c) {
		bpf_map_update_elem(&accepted, &cgid, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&accepted, &cgid);
		if (!c)
			return;
	}
	__sync_fetch_and_add(&c->count, 1);
	c->last_ns = bpf_ktime_get_boot_ns();
}

/* What a TCP state change is to the agent. */
enum state_use {
	USE_LISTENER, /* a listener opened or closed: a ring event */
	USE_CLOSED,   /* an established connection left ESTABLISHED: counted */
	USE_ACCEPTED, /* a handshake completed on the server side: counted */
};

static __always_inline int handle_set_state(const struct sock *sk, int oldstate, int newstate,
					    const bool direct)
{
	struct tl_ev_sock *e;
	enum state_use use;
	__u32 flags = 0;
	__u16 kind = 0;
	__u64 cgid;

	/* The states first: every TCP connection passes here ~10 times on
	 * each end, and most transitions are none of these (no helper call
	 * for them). */
	if (newstate == TCP_LISTEN) {
		use = USE_LISTENER;
		kind = TL_EV_LISTEN;
	} else if (oldstate == TCP_LISTEN && newstate == TCP_CLOSE) {
		/* A child socket is cloned from its listener with sk_state
		 * LISTEN and then moved to SYN_RECV (inet_csk_clone_lock),
		 * which also fires this tracepoint: only LISTEN -> CLOSE is a
		 * listener going away. */
		use = USE_LISTENER;
		kind = TL_EV_LISTEN_CLOSED;
	} else if (oldstate == TCP_ESTABLISHED) {
		use = USE_CLOSED;
	} else if (oldstate == TCP_SYN_RECV && newstate == TCP_ESTABLISHED) {
		use = USE_ACCEPTED;
	} else {
		return 0;
	}
	if (SK_READ(direct, sk, sk_protocol) != IPPROTO_TCP)
		return 0;
	cgid = sock_cgroup(sk, &flags, direct);
	if (!tl_cgroup_tracked(cgid))
		return 0;
	if (use == USE_CLOSED) {
		count_closed(cgid);
		return 0;
	}
	if (use == USE_ACCEPTED) {
		/* softirq: current's cgroup is no answer */
		if (flags & TL_EVF_SOCK_CGROUP)
			count_accepted(sk, cgid, direct);
		return 0;
	}
	e = sock_reserve(kind, flags, cgid);
	if (!e)
		return 0;
	/* Current is the task calling listen() or close() (or a timer): only
	 * name it when it belongs to the socket's cgroup. */
	if (bpf_get_current_cgroup_id() == cgid)
		tl_header_current(&e->h);
	sock_addrs(e, sk);
	fix_lport(e, sk);
	e->rport = 0;
	__builtin_memset(e->raddr, 0, sizeof(e->raddr));
	e->state = newstate;
	tl_submit(e);
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(inet_sock_set_state_btf, const struct sock *sk, const int oldstate, const int newstate)
{
	return handle_set_state(sk, oldstate, newstate, true);
}

SEC("tracepoint/sock/inet_sock_set_state")
int inet_sock_set_state_tp(struct trace_event_raw_inet_sock_set_state *ctx)
{
	if (ctx->protocol != IPPROTO_TCP)
		return 0;
	return handle_set_state((const struct sock *)ctx->skaddr, ctx->oldstate, ctx->newstate, false);
}

static __always_inline int pod_ip(const __u8 *addr, __u16 family)
{
	struct tl_ip_key k = {};

	if (family == AF_INET) {
		k.addr[10] = 0xff;
		k.addr[11] = 0xff;
		__builtin_memcpy(&k.addr[12], addr, 4);
	} else {
		__builtin_memcpy(k.addr, addr, 16);
	}
	return bpf_map_lookup_elem(&pod_ips, &k) != NULL;
}

/* The reset answers skb, so the packet's destination is the local end. */
static __always_inline int skb_addrs(struct tl_ev_sock *e, const struct sk_buff *skb)
{
	unsigned char *head = BPF_CORE_READ(skb, head);
	__u16 nh = BPF_CORE_READ(skb, network_header);
	__u16 th = BPF_CORE_READ(skb, transport_header);
	struct tcphdr tcp;
	__u8 ver;

	__builtin_memset(e->laddr, 0, sizeof(e->laddr));
	__builtin_memset(e->raddr, 0, sizeof(e->raddr));
	if (bpf_probe_read_kernel(&ver, 1, head + nh))
		return -1;
	if (ver >> 4 == 4) {
		struct iphdr ip;

		if (bpf_probe_read_kernel(&ip, sizeof(ip), head + nh))
			return -1;
		e->family = AF_INET;
		__builtin_memcpy(e->laddr, &ip.daddr, 4);
		__builtin_memcpy(e->raddr, &ip.saddr, 4);
	} else if (ver >> 4 == 6) {
		struct ipv6hdr ip6;

		if (bpf_probe_read_kernel(&ip6, sizeof(ip6), head + nh))
			return -1;
		e->family = AF_INET6;
		__builtin_memcpy(e->laddr, &ip6.daddr, 16);
		__builtin_memcpy(e->raddr, &ip6.saddr, 16);
	} else {
		return -1;
	}
	if (bpf_probe_read_kernel(&tcp, sizeof(tcp), head + th))
		return -1;
	e->lport = bpf_ntohs(tcp.dest);
	e->rport = bpf_ntohs(tcp.source);
	return 0;
}

static __always_inline int handle_reset(const struct sock *sk, const struct sk_buff *skb,
					__u16 kind)
{
	struct tl_ev_sock *e;
	const struct sock *owner = sk;
	__u32 flags = 0;
	__u64 cgid = 0;
	__u8 state = 0;

	if (sk) {
		state = BPF_CORE_READ(sk, __sk_common.skc_state);
		/* A request socket has no cgroup of its own: its listener has;
		 * a timewait socket has none at all. */
		if (state == TCP_NEW_SYN_RECV)
			owner = BPF_CORE_READ(sk, __sk_common.skc_listener);
		else if (state == TCP_TIME_WAIT)
			owner = NULL;
		if (owner)
			cgid = sock_cgroup(owner, &flags, false);
	} else if (!skb) {
		return 0;
	} else {
		flags |= TL_EVF_NO_SOCK;
	}
	/* With a cgroup the container decides; without one (no socket, or a
	 * timewait socket) the pod-IP map does, after the addresses are read. */
	if (cgid && !tl_cgroup_tracked(cgid))
		return 0;
	e = sock_reserve(kind, flags, cgid);
	if (!e)
		return 0;
	if (sk) {
		sock_addrs(e, sk);
		if (state != TCP_NEW_SYN_RECV && state != TCP_TIME_WAIT)
			fix_lport(e, sk);
	} else if (skb_addrs(e, skb)) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		return 0;
	}
	e->state = state;
	if (!cgid && !resets_without_socket &&
	    !pod_ip(e->laddr, e->family) && !pod_ip(e->raddr, e->family)) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		return 0;
	}
	tl_submit(e);
	return 0;
}

SEC("tp_btf/tcp_send_reset")
int BPF_PROG(tcp_send_reset_btf, const struct sock *sk, const struct sk_buff *skb)
{
	return handle_reset(sk, skb, TL_EV_RESET_SENT);
}

SEC("tracepoint/tcp/tcp_send_reset")
int tcp_send_reset_tp(struct trace_event_raw_tcp_send_reset *ctx)
{
	return handle_reset((const struct sock *)ctx->skaddr, (const struct sk_buff *)ctx->skbaddr,
			    TL_EV_RESET_SENT);
}

SEC("tp_btf/tcp_receive_reset")
int BPF_PROG(tcp_receive_reset_btf, struct sock *sk)
{
	return handle_reset(sk, NULL, TL_EV_RESET_RECEIVED);
}

SEC("tracepoint/tcp/tcp_receive_reset")
int tcp_receive_reset_tp(struct trace_event_raw_tcp_event_sk *ctx)
{
	return handle_reset((const struct sock *)ctx->skaddr, NULL, TL_EV_RESET_RECEIVED);
}
