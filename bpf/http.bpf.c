// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* HTTP/1.x on a tracked Pod's own TCP sockets. Three variants, the first the
 * kernel loads is used (docs/http-capture.md, "Hooks"):
 * - sock: tp_btf programs on the kernel's socket send and receive
 *   tracepoints, which hand over the socket and the result, and on the TCP
 *   socket's destruction for the connection's end; nothing runs at other
 *   syscalls. The call and its buffer come from the task's saved user
 *   registers; a connection has a state (in the socket's own storage) only
 *   while a head goes on in its next call or a record of it was lost.
 * - rdonly_cast / probe_read: one tp_btf program on raw_syscalls/sys_exit:
 *   the syscall number and arguments come from the saved user registers,
 *   the return value says how many bytes moved, fd -> file -> TCP socket is
 *   walked (read-only casts, or a probe read per hop before 6.2). Every
 *   process on the node pays for it at each syscall exit while it is
 *   attached (bench/README.md, "HTTP capture").
 * Checks go from the cheapest to the dearest and everything that is not
 * ours returns at once. Only a bounded prefix of a buffer that starts an
 * HTTP/1.x message (or continues a head split across writes) is copied;
 * bodies never are. x86_64 syscall numbers. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "termline-http.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define NR_READ 0
#define NR_WRITE 1
#define NR_CLOSE 3
#define NR_READV 19
#define NR_WRITEV 20
#define NR_SENDTO 44
#define NR_RECVFROM 45
#define NR_SENDMSG 46
#define NR_RECVMSG 47

#define ECONNRESET 104
#define EPIPE 32
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define IPPROTO_TCP 6
#define SOCK_STREAM 1
#define MSG_PEEK 2

/* Bytes copied from a buffer that starts a message; set before load. */
const volatile __u32 prefix_len = TL_HTTP_PREFIX_DEFAULT;
/* A record that takes the ring's producer position across a multiple of
 * this (a power of two; 0: never) wakes user space; set before load. */
const volatile __u64 wake_bytes = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
} http_events SEC(".maps");

/* The tracked cgroups (termline-cgtab.h), written by user space through the
 * mmapped .bss; http_cgroups holds them all. */
struct tl_cg_table http_cg;
/* The sock variant's sockets with a state in their storage: one holds a
 * mark (a head that goes on in the next read or write on a side, a record
 * lost to a full ring) and goes when the marks are spent or with the
 * socket. While no socket has one, the records of whole heads look at no per-socket state at all:
 * the storage is a chain of cold lines, ~125 ns a lookup under nginx
 * (bench/README.md). Never less than the storages that exist: counted up
 * by the program that creates one, down by the one that deletes it or
 * sees its socket destroyed. A socket destroyed while the programs are
 * detached stays counted, which only costs lookups. */
__u32 http_marked;

/* cgroup v2 id -> 1: the Pods' containers, written by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} http_cgroups SEC(".maps");

/* struct sock address -> what this connection is. LRU: a connection whose
 * close we never see (its process died) ages out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct tl_http_conn);
} http_conns SEC(".maps");

/* The sock variant's connection state: the socket's own storage, freed
 * with it (no lookup by address, no aging, no delete). */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tl_http_conn);
} http_sk_conns SEC(".maps");

/* (tgid << 32 | fd) -> struct sock address, for connections with HTTP seen:
 * at close's exit the fd is gone, so the socket is found here. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, __u64);
} http_fds SEC(".maps");

/* Failed ring-buffer writes per record kind; summed over CPUs by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TL_HTTP_REC_KIND_MAX);
	__type(key, __u32);
	__type(value, __u64);
} http_drops SEC(".maps");

#define W(a, b, c, d) ((__u32)(a) | (__u32)(b) << 8 | (__u32)(c) << 16 | (__u32)(d) << 24)

enum start { START_NONE, START_REQUEST, START_RESPONSE, START_NOT_HTTP, START_H2 };

static __always_inline enum start classify(const __u8 *h, __u64 n)
{
	__u32 w = W(h[0], h[1], h[2], h[3]);

	if ((h[0] == 0x16 || h[0] == 0x17) && h[1] == 0x03)
		return START_NOT_HTTP;
	if (w == W('P', 'R', 'I', ' '))
		return START_H2;
	if (w == W('H', 'T', 'T', 'P'))
		return n >= 7 && h[4] == '/' && h[5] == '1' && h[6] == '.' ? START_RESPONSE : START_NONE;
	switch (w) {
	case W('G', 'E', 'T', ' '):
	case W('P', 'O', 'S', 'T'):
	case W('P', 'U', 'T', ' '):
	case W('H', 'E', 'A', 'D'):
	case W('D', 'E', 'L', 'E'):
	case W('P', 'A', 'T', 'C'):
	case W('O', 'P', 'T', 'I'):
	case W('C', 'O', 'N', 'N'):
	case W('T', 'R', 'A', 'C'):
		return START_REQUEST;
	}
	return START_NONE;
}

/* Marks a pointer read as a plain number as a read-only pointer to a
 * kernel type, so its fields are plain loads (which the kernel makes
 * fault-safe) instead of one bpf_probe_read_kernel() helper call each. The
 * verifier turns the call into a register move. Kernels >= 6.2; where it is
 * missing the program variant using it does not load and the one made of
 * probe reads is loaded instead (daemon/capture/http-bpf.c). */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* The file behind fd in the current task, read from the fd array, or NULL.
 * The fd table walk is bounded by its max_fds. The task, its files and fd
 * table are BTF pointers read with plain loads; the fd array holds pointers
 * to pointers, which stay numbers: one probe read. */
static __always_inline struct file *fd_file(__u64 fd)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct fdtable *fdt = t->files->fdt;
	struct file *f = NULL;

	if (!fdt || fd >= fdt->max_fds)
		return NULL;
	if (bpf_probe_read_kernel(&f, sizeof(f), &fdt->fd[fd]) < 0)
		return NULL;
	return f;
}

/* The TCP socket behind fd, or NULL; cast: through bpf_rdonly_cast()
 * (plain loads), else each hop a probe read (bench/README.md). */
static __always_inline struct sock *fd_sock(__u64 fd, const bool cast)
{
	struct file *f = fd_file(fd);
	struct socket *so;
	struct sock *sk;

	if (!f)
		return NULL;
	if (cast) {
		f = bpf_rdonly_cast(f, bpf_core_type_id_kernel(struct file));
		if ((f->f_inode->i_mode & S_IFMT) != S_IFSOCK)
			return NULL;
		so = bpf_rdonly_cast(f->private_data, bpf_core_type_id_kernel(struct socket));
		sk = so->sk;
		if (!sk || sk->sk_protocol != IPPROTO_TCP || sk->sk_type != SOCK_STREAM)
			return NULL;
		return sk;
	}
	if ((BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return NULL;
	so = (struct socket *)BPF_CORE_READ(f, private_data);
	sk = BPF_CORE_READ(so, sk);
	if (!sk || BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP ||
	    BPF_CORE_READ(sk, sk_type) != SOCK_STREAM)
		return NULL;
	return sk;
}

static __always_inline void count_drop(__u32 kind)
{
	__u64 *n = bpf_map_lookup_elem(&http_drops, &kind);

	if (n)
		*n += 1;
}

/* A wake-up per record costs several microseconds, and asking the ring
 * how full it is (its consumer's position, a line user space writes) cost
 * ~30-60 ns a record here (bench/README.md). User space drains on a timer
 * whose period follows the rate it finds (daemon/capture/http-bpf.c), and
 * first whenever it needs the records up to now. A burst faster than the
 * timer's last period expected is caught here: the record that takes the
 * producer's position (a line this CPU has just written, in its reserve)
 * across a multiple of wake_bytes wakes user space. With two CPUs
 * reserving at once both may see the crossing (two wake-ups) or, rarely,
 * neither (the timer drains then). taken: what the record takes of the
 * ring (TL_HTTP_RING_TAKEN). */
static __always_inline __u64 submit_flags(__u64 taken)
{
	__u64 pos;

	if (!wake_bytes)
		return BPF_RB_NO_WAKEUP;
	pos = bpf_ringbuf_query(&http_events, BPF_RB_PROD_POS);
	return (pos ^ (pos - taken)) >= wake_bytes ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* conn: the connection's state, to mark a loss on and to say one happened.
 * Returns false when the record did not fit in the ring. */
static __always_inline bool emit_small(__u16 kind, __u64 cgid, __u64 sk, __s32 err,
				       struct tl_http_conn *conn)
{
	struct tl_http_rec *r = bpf_ringbuf_reserve(&http_events, sizeof(*r), 0);
	__u64 id = bpf_get_current_pid_tgid();

	if (!r) {
		count_drop(kind);
		if (conn)
			conn->lost = 1;
		return false;
	}
	r->kind = kind;
	r->flags = conn && conn->lost ? TL_HTTP_RF_LOST : 0;
	if (conn)
		conn->lost = 0;
	r->len = 0;
	r->ktime_ns = bpf_ktime_get_boot_ns();
	r->cgroup_id = cgid;
	r->sock = sk;
	r->pid = (__u32)id;
	r->tgid = id >> 32;
	r->total = 0;
	r->err = err;
	__builtin_memset(r->peer_addr, 0, sizeof(r->peer_addr));
	r->peer_port = r->local_port = r->family = r->pad = 0;
	bpf_ringbuf_submit(r, submit_flags(TL_HTTP_RING_TAKEN(sizeof(*r))));
	return true;
}

/* A DATA record reserved in the ring at a size class that holds cp bytes
 * (the verifier wants a constant size; the record says its own length),
 * the bytes copied from the user buffer straight into it: no scratch
 * buffer and no second copy. Returns 0, -1 when the ring is full, -2 when
 * the buffer cannot be read (nothing is sent then). *tail: the last four
 * bytes copied, when there are four. */
static __always_inline int emit_data(const struct tl_http_rec *h, const __u8 *buf, __u64 cp,
				     const __u32 cap, __u32 *tail)
{
	struct tl_http_rec *r;
	__u8 *d;

	if (cp > cap)
		cp = cap;
	r = bpf_ringbuf_reserve(&http_events, sizeof(*r) + cap, 0);
	if (!r)
		return -1;
	d = (__u8 *)(r + 1);
	if (bpf_probe_read_user(d, cp, buf) < 0) {
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		return -2;
	}
	__builtin_memcpy(r, h, sizeof(*r));
	r->len = (__u32)cp;
	if (cp >= 4)
		*tail = W(d[cp - 4], d[cp - 3], d[cp - 2], d[cp - 1]);
	bpf_ringbuf_submit(r, submit_flags(TL_HTTP_RING_TAKEN(sizeof(*r) + cap)));
	return 0;
}

/* The user buffer of a read/write-like call and its length. */
static __always_inline const __u8 *user_buf(long nr, struct pt_regs *regs, __u64 *len)
{
	struct iovec iov = {};
	const struct iovec *iovp;
	/* Both loaded up front, from regs only: a load the compiler shares
	 * between regs and the stack copies below is refused by the verifier. */
	__u64 si = regs->si, dx = regs->dx;

	barrier_var(si);
	barrier_var(dx);
	switch (nr) {
	case NR_READ:
	case NR_WRITE:
	case NR_RECVFROM:
	case NR_SENDTO:
		*len = dx;
		return (const __u8 *)si;
	case NR_READV:
	case NR_WRITEV:
		/* The first iovec: where a message's head is. */
		if (dx < 1)
			return NULL;
		iovp = (const struct iovec *)si;
		break;
	default: {
		struct user_msghdr msg;

		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)si) < 0 ||
		    msg.msg_iovlen < 1)
			return NULL;
		iovp = msg.msg_iov;
	}
	}
	if (bpf_probe_read_user(&iov, sizeof(iov), iovp) < 0)
		return NULL;
	*len = iov.iov_len;
	return iov.iov_base;
}

/* The side of a call whose buffer user_buf() knows: IO_READ, IO_WRITE, or
 * IO_NONE for any other syscall. */
enum io_side { IO_NONE, IO_READ, IO_WRITE };

static __always_inline enum io_side io_side(long nr)
{
	switch (nr) {
	case NR_READ:
	case NR_READV:
	case NR_RECVFROM:
	case NR_RECVMSG:
		return IO_READ;
	case NR_WRITE:
	case NR_WRITEV:
	case NR_SENDTO:
	case NR_SENDMSG:
		return IO_WRITE;
	}
	return IO_NONE;
}

/* Does a call that returned ret say anything: bytes moved, a read's end of
 * stream, or the connection's failure? */
static __always_inline bool io_result(long ret, bool is_read)
{
	return ret > 0 || (ret == 0 && is_read) || ret == -ECONNRESET || ret == -EPIPE;
}

/* Most often one load: an untracked process's id meets an empty slot, a
 * tracked one's its own id. */
static __always_inline bool cgroup_tracked(__u64 cgid)
{
	int r = tl_cg_find(http_cg.slots, cgid);

	if (r >= 0)
		return r;
	return *(volatile __u32 *)&http_cg.spilled && bpf_map_lookup_elem(&http_cgroups, &cgid) != NULL;
}

/* A record's name for the connection: the socket's address where the
 * state is kept by it (by_fd), else its cookie. */
static __always_inline __u64 rec_key(struct sock *sk, const bool by_fd)
{
	return by_fd ? (__u64)sk : bpf_get_socket_cookie(sk);
}

/* The cgroup v2 id of the socket's own cgroup (where it was made; an
 * accepted one's is its listener's), 0 when it has none. */
static __always_inline __u64 sk_cgroup_id(struct sock *sk)
{
	struct cgroup *cg = sk->sk_cgrp_data.cgroup;

	return cg ? cg->kn->id : 0;
}

/* The socket's remote end (and local port) into a record: loads from the
 * socket's common part, the line the kernel has just used for this call.
 * direct: sk is a pointer the verifier knows (a tp_btf argument or a
 * read-only cast), else each field is a probe read. */
#define SKC(direct, sk, f) ((direct) ? (sk)->__sk_common.f : BPF_CORE_READ(sk, __sk_common.f))
static __always_inline void rec_peer(struct tl_http_rec *h, const struct sock *sk, const bool direct)
{
	__u16 family = SKC(direct, sk, skc_family);

	if (family == TL_HTTP_AF_INET6) {
		if (direct)
			__builtin_memcpy(h->peer_addr, sk->__sk_common.skc_v6_daddr.in6_u.u6_addr8, 16);
		else
			BPF_CORE_READ_INTO(&h->peer_addr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	} else if (family == TL_HTTP_AF_INET) {
		__u32 a = SKC(direct, sk, skc_daddr);

		__builtin_memcpy(h->peer_addr, &a, 4);
	} else {
		return;
	}
	h->family = family;
	h->peer_port = __builtin_bswap16(SKC(direct, sk, skc_dport));
	h->local_port = SKC(direct, sk, skc_num);
	h->flags |= TL_HTTP_RF_PEER;
}

/* sock variant: a state for sk, created (and counted) or the one there. */
static __always_inline struct tl_http_conn *sk_conn_make(struct sock *sk)
{
	struct tl_http_conn *c =
		bpf_sk_storage_get(&http_sk_conns, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);

	/* (NULL when it exists already: another thread made it since the
	 * caller looked) */
	if (c) {
		__sync_fetch_and_add(&http_marked, 1);
		return c;
	}
	return bpf_sk_storage_get(&http_sk_conns, sk, NULL, 0);
}

/* sock variant: a state with no mark left goes, and is counted down. conn
 * is not to be used after. */
static __always_inline void sk_conn_settle(struct sock *sk, struct tl_http_conn *conn)
{
	if (conn->state != TL_HTTP_CONN_H2 && !conn->lost && !conn->cont[0] && !conn->cont[1] &&
	    bpf_sk_storage_delete(&http_sk_conns, sk) == 0)
		__sync_fetch_and_add(&http_marked, -1);
}

/* ---- HTTP/2: the frame layer of a connection, without its bodies ----
 *
 * A connection is HTTP/2 once a call starts with the client preface, or
 * with frames the program can check (every frame header of the call
 * plausible, the call ending where a frame ends: a server's SETTINGS
 * written before it read the preface, a connection first seen
 * mid-stream). From there each direction's frames are followed call by
 * call: frame headers are copied, and the payloads the agent reads
 * (HEADERS, CONTINUATION, PUSH_PROMISE, RST_STREAM, SETTINGS, GOAWAY, each
 * bounded), never DATA's or any other: those are only counted (skip), so
 * that user space keeps frame sync (docs/http-capture.md, "HTTP/2"). A
 * call's frames are walked by bpf_loop(), a step per frame header or
 * payload piece (and per iovec); a call with more than it allows, or a
 * buffer the program cannot read, ends the direction's following (said in
 * the record) until a call it can check again. The TCP sequence number of
 * each call's first byte must be where the last call followed ended: bytes
 * moved by calls the programs do not see (while detached or untracked,
 * sendfile, io_uring) end the following too, and say the loss. */

#define H2_HDR 9
#define H2_SEG ((__u32)sizeof(struct tl_h2_seg))
/* One record's data; a call's frames that do not fit go on in the next. */
#define H2_DATA TL_HTTP_PREFIX_MAX
/* Bytes copied by one step: a step always fits in a record. */
#define H2_STEP_COPY 1024
/* Steps of one call: frame headers, payload pieces and iovecs. */
#define H2_STEPS 1024
/* Of a payload, what is copied: a header block up to the largest frame a
 * peer sends without raising SETTINGS_MAX_FRAME_SIZE, SETTINGS (real ones
 * hold a few parameters), RST_STREAM's code, GOAWAY's ids, code and the
 * debug data user space keeps. */
#define H2_COPY_BLOCK 16384
#define H2_COPY_SETTINGS 256
#define H2_COPY_GOAWAY (8 + 64)
#define H2_NO_SEG 0xffffffffU
/* x made at most max on the register the next use takes: the compiler
 * otherwise tests a copy, or an expression of it, the verifier cannot
 * relate to the value used. */
#define H2_BOUND(x, max)                  \
	do {                              \
		barrier_var(x);           \
		if ((x) > (max))          \
			(x) = (max);      \
		barrier_var(x);           \
	} while (0)

/* A call being walked, built in per-CPU memory (the 512-byte stack holds
 * none of it): the direction's state, where the walk is in the call's
 * buffers, the record in progress. */
struct h2_walk {
	struct tl_h2_side s;
	__u64 ptr;      /* user address of the next byte */
	__u64 piece;    /* bytes left in the current buffer (iovec) */
	__u64 iov;      /* user address of the next struct iovec */
	__u32 n_iov;    /* iovecs after the current one */
	__u32 left;     /* bytes of the call not walked yet */
	__u32 out;      /* bytes of rec's data written */
	__u32 seg;      /* offset of the open segment's header, H2_NO_SEG none */
	__u32 seg_skip; /* the open segment's fields, written when it closes */
	__u32 seg_copy;
	__u32 pend;     /* skipped bytes not yet in a segment */
	__u32 frames;
	__u64 busy;     /* a call is being walked here (h2_io) */
	__u8 seg_flags;
	__u8 check;     /* a check walk: headers only, nothing copied */
	__u8 bad;
	__u8 pad;
	__u8 hb[24];    /* the frame header being read ([0, 9)) */
	struct tl_http_rec rec;
	__u8 data[H2_DATA + 64];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct h2_walk);
} http_h2_walk SEC(".maps");


/* A frame header a peer following RFC 9113 sends with the default
 * SETTINGS_MAX_FRAME_SIZE (daemon/capture/h2-frame.c, tl_h2_frame_plausible,
 * with DATA bounded too): a known type, its flags, its stream rule, its
 * fixed length. What a call is checked against before it is taken as
 * frames. */
static __always_inline bool h2_plausible(__u32 len, __u8 type, __u8 flags, __u32 sid)
{
	bool s0 = sid == 0;

	if (len > 16384)
		return false;
	switch (type) {
	case 0x0: /* DATA */
		return !s0 && !(flags & ~0x09);
	case 0x1: /* HEADERS */
		return !s0 && !(flags & ~0x2d);
	case 0x2: /* PRIORITY */
		return !s0 && len == 5 && !flags;
	case 0x3: /* RST_STREAM */
		return !s0 && len == 4 && !flags;
	case 0x4: /* SETTINGS */
		return s0 && (flags == 0x1 ? len == 0 : !flags && len % 6 == 0);
	case 0x5: /* PUSH_PROMISE */
		return !s0 && !(flags & ~0x0c) && len >= 4;
	case 0x6: /* PING */
		return s0 && len == 8 && !(flags & ~0x01);
	case 0x7: /* GOAWAY */
		return s0 && len >= 8 && !flags;
	case 0x8: /* WINDOW_UPDATE */
		return len == 4 && !flags;
	case 0x9: /* CONTINUATION */
		return !s0 && !(flags & ~0x04);
	}
	return false;
}

/* What of a frame's payload is copied. */
static __always_inline __u32 h2_copy_of(__u8 type, __u32 len)
{
	__u32 cap;

	switch (type) {
	case 0x1: /* HEADERS */
	case 0x5: /* PUSH_PROMISE */
	case 0x9: /* CONTINUATION */
		cap = H2_COPY_BLOCK;
		break;
	case 0x3: /* RST_STREAM */
		cap = 4;
		break;
	case 0x4: /* SETTINGS */
		cap = H2_COPY_SETTINGS;
		break;
	case 0x7: /* GOAWAY */
		cap = H2_COPY_GOAWAY;
		break;
	default:
		return 0;
	}
	return len < cap ? len : cap;
}

static __always_inline struct h2_walk *h2_scratch(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&http_h2_walk, &zero);
}

/* The open segment's header into the record. */
static __always_inline void h2_seg_close(struct h2_walk *w)
{
	__u64 at = w->seg;
	struct tl_h2_seg *g;

	if (at > H2_DATA - H2_SEG)
		return;
	H2_BOUND(at, H2_DATA - H2_SEG);
	g = (struct tl_h2_seg *)(w->data + at);
	g->skip = w->seg_skip;
	g->copy = (__u16)w->seg_copy;
	g->flags = w->seg_flags;
	g->pad = 0;
	w->seg = H2_NO_SEG;
}

/* The record so far into the ring; with extra (TL_HTTP_RF_H2_OFF) even
 * empty. A record that does not fit is counted, and the direction says the
 * loss in its next record and starts a segment there at its next frame. */
static __always_inline void h2_flush(struct h2_walk *w, __u16 extra)
{
	__u32 out;
	__u64 size, pos;
	long rc;

	h2_seg_close(w);
	out = w->out;
	if (!out && !extra)
		return;
	w->rec.len = out;
	w->rec.flags |= extra | (w->s.flags & TL_H2S_LOST ? TL_HTTP_RF_LOST : 0);
	/* (a bound the verifier sees on the register it passes) */
	size = out;
	H2_BOUND(size, H2_DATA);
	size += sizeof(w->rec);
	/* (the position before this record: submit_flags() reads the one
	 * after it) */
	pos = wake_bytes ? bpf_ringbuf_query(&http_events, BPF_RB_PROD_POS) : 0;
	rc = bpf_ringbuf_output(&http_events, &w->rec, size,
				wake_bytes && ((pos ^ (pos + TL_HTTP_RING_TAKEN(size))) >= wake_bytes)
					? BPF_RB_FORCE_WAKEUP
					: BPF_RB_NO_WAKEUP);
	if (rc < 0) {
		count_drop(TL_HTTP_REC_H2);
		w->s.flags |= TL_H2S_LOST | TL_H2S_SYNC;
	} else {
		w->s.flags &= ~TL_H2S_LOST;
	}
	/* The peer goes with the first record only. */
	w->rec.flags &= ~(TL_HTTP_RF_PEER | TL_HTTP_RF_LOST);
	w->out = 0;
	w->seg = H2_NO_SEG;
}

/* Skipped bytes not yet said go before what comes next: into the open
 * segment (copy then skip), or a segment of their own. */
static __always_inline void h2_pend_out(struct h2_walk *w)
{
	__u32 off;

	if (!w->pend)
		return;
	if (w->seg == H2_NO_SEG) {
		off = w->out;
		if (off > H2_DATA - H2_SEG) {
			h2_flush(w, 0);
			off = 0;
		}
		w->seg = off;
		w->seg_copy = 0;
		w->seg_skip = 0;
		w->seg_flags = 0;
		w->out = off + H2_SEG;
	}
	w->seg_skip += w->pend;
	w->pend = 0;
}

/* Room for c (1..H2_STEP_COPY) copied bytes at the end of a segment that
 * takes them (a new one after skipped bytes, or to start with sync):
 * their offset in data. */
static __always_inline __u32 h2_room(struct h2_walk *w, bool sync)
{
	__u32 off;

	h2_pend_out(w);
	off = w->out;
	if (w->seg != H2_NO_SEG && !sync && !w->seg_skip) {
		if (off <= H2_DATA - H2_STEP_COPY)
			return off;
		h2_flush(w, 0);
		off = 0;
	} else {
		h2_seg_close(w);
		if (off > H2_DATA - H2_SEG - H2_STEP_COPY) {
			h2_flush(w, 0);
			off = 0;
		}
	}
	w->seg = off;
	w->seg_copy = 0;
	w->seg_skip = 0;
	w->seg_flags = sync ? TL_H2_SEG_SYNC : 0;
	return off + H2_SEG;
}

/* c bytes of the user's buffer at src into the record. */
static __always_inline int h2_put(struct h2_walk *w, __u64 src, __u32 c, bool sync)
{
	__u64 off = h2_room(w, sync), n = c;

	if (off > H2_DATA - H2_STEP_COPY || c > H2_STEP_COPY || c == 0)
		return -1;
	H2_BOUND(off, H2_DATA - H2_STEP_COPY);
	H2_BOUND(n, H2_STEP_COPY);
	if (bpf_probe_read_user(w->data + off, n, (const void *)src) < 0)
		return -1;
	w->out = (__u32)(off + n);
	w->seg_copy += c;
	return 0;
}

static __always_inline void h2_advance(struct h2_walk *w, __u32 k)
{
	w->ptr += k;
	w->piece -= k;
	w->left -= k;
}

/* One step of a call's walk (bpf_loop's callback): the next iovec, part
 * of a frame header, or part of a payload. 1 ends the walk. */
static long h2_step(__u32 i, void *ctx)
{
	struct h2_walk *w = h2_scratch();
	__u64 avail;

	if (!w || w->bad || !w->left)
		return 1;
	if (!w->piece) {
		struct iovec v;

		if (!w->n_iov || bpf_probe_read_user(&v, sizeof(v), (const void *)w->iov) < 0) {
			w->bad = 1;
			return 1;
		}
		w->iov += sizeof(v);
		w->n_iov--;
		w->ptr = (__u64)v.iov_base;
		w->piece = v.iov_len;
		return 0;
	}
	avail = w->piece < w->left ? w->piece : w->left;
	if (!w->s.left) {
		/* a frame header, maybe split across buffers or calls */
		__u32 hn = w->s.hn, k;
		bool sync;

		if (hn >= H2_HDR) {
			w->bad = 1;
			return 1;
		}
		k = H2_HDR - hn;
		if (k > avail)
			k = (__u32)avail;
		sync = hn == 0 && (w->s.flags & TL_H2S_SYNC);
		if (bpf_probe_read_user(&w->hb[hn], k, (const void *)w->ptr) < 0 ||
		    (!w->check && h2_put(w, w->ptr, k, sync) < 0)) {
			w->bad = 1;
			return 1;
		}
		if (sync && !w->check)
			w->s.flags &= ~TL_H2S_SYNC;
		h2_advance(w, k);
		if (hn + k < H2_HDR) {
			w->s.hn = hn + k;
			return 0;
		}
		{
			__u32 len = (__u32)w->hb[0] << 16 | (__u32)w->hb[1] << 8 | w->hb[2];
			__u32 sid = ((__u32)w->hb[5] & 0x7f) << 24 | (__u32)w->hb[6] << 16 |
				    (__u32)w->hb[7] << 8 | w->hb[8];

			if (w->check && !h2_plausible(len, w->hb[3], w->hb[4], sid)) {
				w->bad = 1;
				return 1;
			}
			w->s.hn = 0;
			w->s.left = len;
			w->s.copy = (__u16)h2_copy_of(w->hb[3], len);
			w->frames++;
		}
		return 0;
	}
	{
		__u32 k = w->s.left < avail ? w->s.left : (__u32)avail;

		if (w->s.copy) {
			__u32 c = k < w->s.copy ? k : w->s.copy;

			if (c > H2_STEP_COPY)
				c = H2_STEP_COPY;
			if (!w->check && h2_put(w, w->ptr, c, false) < 0) {
				w->bad = 1;
				return 1;
			}
			w->s.copy -= c;
			k = c;
		} else if (!w->check) {
			w->pend += k;
		}
		w->s.left -= k;
		h2_advance(w, k);
	}
	return 0;
}

/* Where the bytes of read/write-like call nr are: one buffer, or an iovec
 * array the walk reads as it goes. false when none. */
static __always_inline bool h2_source(struct h2_walk *w, long nr, struct pt_regs *regs, long ret)
{
	__u64 si = regs->si, dx = regs->dx;

	barrier_var(si);
	barrier_var(dx);
	w->left = ret > 0x7fffffffL ? 0x7fffffffU : (__u32)ret;
	w->ptr = 0;
	w->piece = 0;
	w->iov = 0;
	w->n_iov = 0;
	switch (nr) {
	case NR_READ:
	case NR_WRITE:
	case NR_RECVFROM:
	case NR_SENDTO:
		w->ptr = si;
		w->piece = dx;
		return true;
	case NR_READV:
	case NR_WRITEV:
		w->iov = si;
		w->n_iov = dx > 1024 ? 1024 : (__u32)dx;
		return true;
	default: {
		struct user_msghdr msg;

		if (bpf_probe_read_user(&msg, sizeof(msg), (void *)si) < 0)
			return false;
		w->iov = (__u64)msg.msg_iov;
		w->n_iov = msg.msg_iovlen > 1024 ? 1024 : (__u32)msg.msg_iovlen;
		return true;
	}
	}
}

/* Does the call hold whole frames the program can check (see above)?
 * The walk's check mode, from a frame start. */
static __always_inline bool h2_check(struct h2_walk *w, long nr, struct pt_regs *regs, long ret)
{
	if (!h2_source(w, nr, regs, ret))
		return false;
	__builtin_memset(&w->s, 0, sizeof(w->s));
	w->check = 1;
	w->bad = 0;
	w->frames = 0;
	bpf_loop(H2_STEPS, h2_step, NULL, 0);
	w->check = 0;
	return !w->bad && !w->left && !w->s.left && !w->s.hn && w->frames;
}

/* Does the call's first buffer start with the client preface? */
static __always_inline bool h2_preface_first(long nr, struct pt_regs *regs, __u32 n)
{
	__u8 head[4] = {};
	const __u8 *buf;
	__u64 len = 0;

	if (n < 4)
		return false;
	buf = user_buf(nr, regs, &len);
	if (!buf || len < 4 || bpf_probe_read_user(head, 4, buf) < 0)
		return false;
	return W(head[0], head[1], head[2], head[3]) == W('P', 'R', 'I', ' ');
}

/* The TCP sequence number after the call's last byte: copied_seq after a
 * read, write_seq after a write (both moved before the socket's
 * tracepoints and the syscall's exit). direct: sk can be cast to a
 * read-only pointer (bpf_rdonly_cast), else probe reads. */
static __always_inline __u32 h2_tcp_seq(struct sock *sk, bool is_read, const bool direct)
{
	struct tcp_sock *tp;

	if (direct) {
		tp = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
		return is_read ? tp->copied_seq : tp->write_seq;
	}
	tp = (struct tcp_sock *)sk;
	return is_read ? BPF_CORE_READ(tp, copied_seq) : BPF_CORE_READ(tp, write_seq);
}

/* The peer's FIN was received: a read that reached it moved copied_seq one
 * past its data (tcp_recvmsg counts the FIN), and bytes_received counts
 * it too. */
#define RCV_SHUTDOWN 1
static __always_inline __u32 h2_fin_read(struct sock *sk, bool is_read, const bool direct)
{
	if (!is_read)
		return 0;
	return ((direct ? sk->sk_shutdown : BPF_CORE_READ(sk, sk_shutdown)) & RCV_SHUTDOWN) ? 1 : 0;
}

/* Did a read of n bytes start at the first byte the peer ever sent on the
 * connection? bytes_received counts the data that reached rcv_nxt (the
 * handshake's SYN is not among it), rcv_nxt - copied_seq is what is still
 * unread: what this read took began at bytes_received - unread - n.
 * rcv_nxt is read first: data arriving meanwhile makes the answer no,
 * never a wrong yes. */
static __always_inline bool h2_read_from_start(struct sock *sk, __u32 n, const bool direct)
{
	struct tcp_sock *tp;
	__u32 rcv_nxt, copied;
	__u64 received;

	if (direct) {
		tp = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
		rcv_nxt = tp->rcv_nxt;
		barrier();
		received = tp->bytes_received;
		copied = tp->copied_seq;
	} else {
		tp = (struct tcp_sock *)sk;
		rcv_nxt = BPF_CORE_READ(tp, rcv_nxt);
		received = BPF_CORE_READ(tp, bytes_received);
		copied = BPF_CORE_READ(tp, copied_seq);
	}
	return received - (__u32)(rcv_nxt - copied) == n ||
	       received - (__u32)(rcv_nxt - copied) == n + h2_fin_read(sk, true, direct);
}

/* Did a write of n bytes start at the first byte the process ever wrote on
 * the connection? What was written is what was acknowledged
 * (bytes_acked) and what is not yet (write_seq - snd_una). Exact for an
 * accepted connection (its SYN's sequence number is not in bytes_acked);
 * the side that connected counts its SYN there too and is never taken
 * here (its first write is the client preface, taken as such). snd_una is
 * read first: an acknowledgement arriving meanwhile makes the answer no,
 * never a wrong yes. */
static __always_inline bool h2_write_from_start(struct sock *sk, __u32 n, const bool direct)
{
	struct tcp_sock *tp;
	__u32 snd_una, write_seq;
	__u64 acked;

	if (direct) {
		tp = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
		snd_una = tp->snd_una;
		barrier();
		acked = tp->bytes_acked;
		write_seq = tp->write_seq;
	} else {
		tp = (struct tcp_sock *)sk;
		snd_una = BPF_CORE_READ(tp, snd_una);
		acked = BPF_CORE_READ(tp, bytes_acked);
		write_seq = BPF_CORE_READ(tp, write_seq);
	}
	return acked + (__u32)(write_seq - snd_una) == n;
}

/* A call of an HTTP/2 connection (conn: its state, which this call may
 * have just made): the direction's frames in the call into records.
 * checked: the call was checked as whole frames already (the connection
 * starts here). sk_key: the records' name for the connection. */
static __always_inline int h2_io(struct pt_regs *regs, long nr, long ret, bool is_read, __u64 cgid,
				 struct sock *sk, __u64 sk_key, struct tl_http_conn *conn, bool checked,
				 const bool direct)
{
	struct h2_walk *w = h2_scratch();
	__u32 seq, n = ret > 0x7fffffffL ? 0x7fffffffU : (__u32)ret;
	__u64 id = bpf_get_current_pid_tgid();
	__u16 extra = 0;

	/* The memory is this CPU's: a program run that preempted another one
	 * here (a kernel with full preemption) leaves the call unwalked; the
	 * sequence numbers then say its bytes were not seen. */
	if (!w || __sync_lock_test_and_set(&w->busy, 1))
		return 0;
	/* fixed offsets: an index from a flag is pointer arithmetic the
	 * verifier refuses */
	if (is_read)
		__builtin_memcpy(&w->s, &conn->h2[0], sizeof(w->s));
	else
		__builtin_memcpy(&w->s, &conn->h2[1], sizeof(w->s));
	__builtin_memcpy(w->hb, w->s.hbuf, sizeof(w->s.hbuf));
	seq = h2_tcp_seq(sk, is_read, direct);
	/* (a read that reached the peer's FIN ends one past its data) */
	if ((w->s.flags & TL_H2S_ON) && seq - n != w->s.seq &&
	    seq - n - h2_fin_read(sk, is_read, direct) != w->s.seq)
		w->s.flags = (w->s.flags & TL_H2S_SEEN) | TL_H2S_LOST;
	w->out = 0;
	w->seg = H2_NO_SEG;
	w->bad = 0;
	w->check = 0;
	w->frames = 0;
	if (checked) {
		w->s.flags |= TL_H2S_ON | TL_H2S_SYNC;
	} else if (!(w->s.flags & TL_H2S_ON)) {
		__u8 flags = w->s.flags;

		if (!(flags & TL_H2S_SEEN) && h2_preface_first(nr, regs, n)) {
			/* the client preface: 24 bytes copied like a payload */
			__builtin_memset(&w->s, 0, sizeof(w->s));
			w->s.left = TL_HTTP_H2_PREFACE_LEN;
			w->s.copy = TL_HTTP_H2_PREFACE_LEN;
			w->s.flags = TL_H2S_ON | (flags & TL_H2S_LOST);
		} else if (!(flags & TL_H2S_SEEN) && (is_read ? h2_read_from_start(sk, n, direct)
							      : h2_write_from_start(sk, n, direct))) {
			/* the direction's first bytes (a client reading the
			 * server's SETTINGS, a server writing them): frames
			 * from here, however the call ends */
			__builtin_memset(&w->s, 0, sizeof(w->s));
			w->s.flags = TL_H2S_ON | (flags & TL_H2S_LOST);
		} else if (h2_check(w, nr, regs, ret)) {
			__builtin_memset(&w->s, 0, sizeof(w->s));
			w->s.flags = TL_H2S_ON | TL_H2S_SYNC | (flags & TL_H2S_LOST);
		} else {
			w->s.flags = flags | TL_H2S_SEEN;
			goto done;
		}
	}
	w->s.flags |= TL_H2S_SEEN;
	w->pend = w->s.skip;
	w->rec.kind = TL_HTTP_REC_H2;
	w->rec.flags = is_read ? TL_HTTP_RF_READ : 0;
	w->rec.len = 0;
	w->rec.ktime_ns = bpf_ktime_get_boot_ns();
	w->rec.cgroup_id = cgid;
	w->rec.sock = sk_key;
	w->rec.pid = (__u32)id;
	w->rec.tgid = id >> 32;
	w->rec.total = n;
	w->rec.err = 0;
	__builtin_memset(w->rec.peer_addr, 0, sizeof(w->rec.peer_addr));
	w->rec.peer_port = w->rec.local_port = w->rec.family = w->rec.pad = 0;
	/* A connection first seen here names its peer (one before the
	 * programs were attached has no OPEN record). */
	if (checked || !(conn->h2[0].flags & TL_H2S_SEEN) || !(conn->h2[1].flags & TL_H2S_SEEN))
		rec_peer(&w->rec, sk, direct);
	if (!h2_source(w, nr, regs, ret)) {
		w->bad = 1;
	} else {
		bpf_loop(H2_STEPS, h2_step, NULL, 0);
	}
	if (w->bad || w->left) {
		/* lost track of the frames: said, and followed again from a
		 * call that can be checked */
		w->s.flags &= ~(TL_H2S_ON | TL_H2S_SYNC);
		w->pend = 0;
		extra = TL_HTTP_RF_H2_OFF;
	}
	/* Skipped bytes are said once a copy follows them, or the frame they
	 * end has ended (its END_STREAM), or the record goes anyway: a call
	 * inside a long payload sends nothing. */
	if (w->pend && (w->out || !w->s.left || extra))
		h2_pend_out(w);
	h2_flush(w, extra);
	w->s.skip = w->pend;
	__builtin_memcpy(w->s.hbuf, w->hb, sizeof(w->s.hbuf));
done:
	w->s.seq = seq;
	if (is_read)
		__builtin_memcpy(&conn->h2[0], &w->s, sizeof(w->s));
	else
		__builtin_memcpy(&conn->h2[1], &w->s, sizeof(w->s));
	/* A loss not yet said is said by the connection's end (or error)
	 * too, if no record of its direction comes first: what the lost
	 * record held of the open streams is unknown. */
	conn->lost = ((conn->h2[0].flags | conn->h2[1].flags) & TL_H2S_LOST) ? 1 : 0;
	*(volatile __u64 *)&w->busy = 0;
	return 0;
}

/* A tracked socket's call that starts HTTP/2 (the client preface, or,
 * with check, frames checked as whole: see above): the connection's
 * state, made or turned to HTTP/2, then the call's frames. */
static __always_inline int h2_start(struct pt_regs *regs, long nr, long ret, bool is_read, __u64 cgid,
				    struct sock *sk, struct tl_http_conn *conn, __u64 fd, const bool by_fd,
				    const bool direct, bool check)
{
	__u64 sk_key = rec_key(sk, by_fd);
	struct tl_http_conn fresh = {};
	__u8 lost;

	if (check) {
		struct h2_walk *w = h2_scratch();
		bool ok;

		if (!w || __sync_lock_test_and_set(&w->busy, 1))
			return 0;
		ok = h2_check(w, nr, regs, ret);
		*(volatile __u64 *)&w->busy = 0;
		if (!ok)
			return 0;
	}
	if (!conn) {
		if (by_fd) {
			__u64 fd_key = (bpf_get_current_pid_tgid() & 0xffffffff00000000ULL) | (__u32)fd;

			fresh.state = TL_HTTP_CONN_H2;
			if (bpf_map_update_elem(&http_conns, &sk_key, &fresh, BPF_ANY) < 0)
				return 0;
			bpf_map_update_elem(&http_fds, &fd_key, &sk_key, BPF_ANY);
			conn = bpf_map_lookup_elem(&http_conns, &sk_key);
		} else {
			conn = sk_conn_make(sk);
		}
		if (!conn)
			return 0;
	}
	/* A loss the connection held (HTTP/1 records) is said by its first
	 * HTTP/2 record of each direction. */
	lost = conn->lost ? TL_H2S_LOST : 0;
	__builtin_memset(conn->h2, 0, sizeof(conn->h2));
	conn->h2[0].flags = conn->h2[1].flags = lost;
	conn->state = TL_HTTP_CONN_H2;
	conn->cont[0] = conn->cont[1] = 0;
	conn->lost = 0;
	return h2_io(regs, nr, ret, is_read, cgid, sk, sk_key, conn, check, direct);
}

/* A read-like (is_read) or write-like call nr of a tracked process on the
 * TCP socket sk returned ret; regs: its saved user registers.
 * by_fd (the sys_exit variants): sk is a number or a read-only pointer; the
 * state is in http_conns under its address, the record's key; the hook
 * sees the close() of fd, not the socket's end, so the fd is kept to find
 * the socket again then. Else (the sock variant) sk is the kernel's own
 * pointer: the state is in the socket's storage and the record's key is
 * its cookie, which no later socket reuses, and only a socket with a mark
 * has one (http_marked). conn: the state the caller found, or NULL. */
static __always_inline int on_io(struct pt_regs *regs, long nr, long ret, bool is_read, __u64 cgid,
				 struct sock *sk, struct tl_http_conn *conn, __u64 fd, const bool by_fd,
				 const bool direct)
{
	__u64 sk_key, fd_key = 0, buflen = 0, n, cp;
	struct tl_http_conn fresh = {};
	const __u8 *buf;
	__u32 tail = 0;
	__u8 head[12] = {};
	enum start st;
	__u8 lost = 0;

	if (ret <= 0) {
		/* The end of a connection that carried HTTP, or its failure:
		 * pending requests will get no answer. */
		if (by_fd) {
			if (conn && (conn->state == TL_HTTP_CONN_HTTP || conn->state == TL_HTTP_CONN_H2))
				emit_small(ret == 0 ? TL_HTTP_REC_EOF : TL_HTTP_REC_ERROR, cgid, (__u64)sk,
					   (__s32)ret, conn);
			return 0;
		}
		/* sock: the end is said when the socket is destroyed, a failure
		 * now (a reset the process read is no longer in the socket
		 * then), for any tracked socket: user space knows which
		 * carried HTTP. Failures are rare. */
		if (ret == 0)
			return 0;
		if (emit_small(TL_HTTP_REC_ERROR, cgid, bpf_get_socket_cookie(sk), (__s32)ret, conn)) {
			if (conn)
				sk_conn_settle(sk, conn);
		} else if (!conn) {
			conn = sk_conn_make(sk);
			if (conn)
				conn->lost = 1;
		}
		return 0;
	}
	if (conn && conn->state == TL_HTTP_CONN_NOT_HTTP)
		return 0;
	if (conn && conn->state == TL_HTTP_CONN_H2)
		return h2_io(regs, nr, ret, is_read, cgid, sk, rec_key(sk, by_fd), conn, false, direct);
	sk_key = rec_key(sk, by_fd);
	buf = user_buf(nr, regs, &buflen);
	if (!buf)
		return 0;
	n = (__u64)ret < buflen ? (__u64)ret : buflen;
	if (n >= H2_HDR)
		bpf_probe_read_user(head, H2_HDR, buf);
	else if (n >= 8)
		bpf_probe_read_user(head, 8, buf);
	else if (n >= 4)
		bpf_probe_read_user(head, 4, buf);
	st = n >= 4 ? classify(head, n) : START_NONE;
	/* (sock: no state is kept for it, the first bytes of each call
	 * say it again for about what a state's lookup costs) */
	if (st == START_H2)
		return h2_start(regs, nr, ret, is_read, cgid, sk, conn, fd, by_fd, direct, false);
	/* Frames a connection first seen mid-stream (or a server's SETTINGS
	 * ahead of the preface) starts with: checked as whole first. */
	if (st == START_NONE && n >= H2_HDR && !(conn && (is_read ? conn->cont[0] : conn->cont[1])) &&
	    h2_plausible((__u32)head[0] << 16 | (__u32)head[1] << 8 | head[2], head[3], head[4],
			 ((__u32)head[5] & 0x7f) << 24 | (__u32)head[6] << 16 | (__u32)head[7] << 8 | head[8]))
		return h2_start(regs, nr, ret, is_read, cgid, sk, conn, fd, by_fd, direct, true);
	if (st == START_NOT_HTTP) {
		if (!conn && by_fd) {
			fresh.state = TL_HTTP_CONN_NOT_HTTP;
			bpf_map_update_elem(&http_conns, &sk_key, &fresh, BPF_ANY);
		}
		return 0;
	}
	if (st == START_NONE && !(conn && (is_read ? conn->cont[0] : conn->cont[1])))
		return 0;

	cp = n < prefix_len ? n : prefix_len;
	if (cp > TL_HTTP_PREFIX_MAX)
		cp = TL_HTTP_PREFIX_MAX;
	if (cp == 0)
		return 0;
	{
		__u64 id = bpf_get_current_pid_tgid();
		struct tl_http_rec h = {
			.kind = TL_HTTP_REC_DATA,
			/* After a loss user space cannot pair what it holds
			 * for this connection any more: it is told, and
			 * starts over. */
			.flags = (is_read ? TL_HTTP_RF_READ : 0) | (st == START_NONE ? TL_HTTP_RF_CONT : 0) |
				 (conn && conn->lost ? TL_HTTP_RF_LOST : 0),
			.ktime_ns = bpf_ktime_get_boot_ns(),
			.cgroup_id = cgid,
			.sock = sk_key,
			.pid = (__u32)id,
			.tgid = id >> 32,
			.total = ret > 0xffffffffL ? 0xffffffffU : (__u32)ret,
		};
		int rc;

		/* The peer once per request: a connection opened before the
		 * programs were attached has no OPEN record to name it, and
		 * a per-connection mark would cost a storage lookup at each
		 * record (the socket's lines are hot here, the loads are
		 * not). */
		if (st == START_REQUEST)
			rec_peer(&h, sk, direct);
		/* Heads are a few hundred bytes: most records take the
		 * smallest class. */
		if (cp <= 256)
			rc = emit_data(&h, buf, cp, 256, &tail);
		else if (cp <= 512)
			rc = emit_data(&h, buf, cp, 512, &tail);
		else if (cp <= 1024)
			rc = emit_data(&h, buf, cp, 1024, &tail);
		else if (cp <= 2048)
			rc = emit_data(&h, buf, cp, 2048, &tail);
		else
			rc = emit_data(&h, buf, cp, TL_HTTP_PREFIX_MAX, &tail);
		if (rc == -2)
			return 0;
		if (rc < 0) {
			count_drop(TL_HTTP_REC_DATA);
			lost = 1;
		}
		if (by_fd)
			fd_key = (id & 0xffffffff00000000ULL) | (__u32)fd;
	}
	/* A head that the whole copied buffer holds without its blank line
	 * goes on in the next read or write on this side (not known when
	 * the record was lost: the loss mark makes user space start over). */
	{
		__u8 cont = 0;

		if (!lost && cp == n && cp >= 4)
			cont = tail != W('\r', '\n', '\r', '\n');
		/* sock: a state only for a mark to keep. */
		if (!by_fd && !conn && (lost || cont))
			conn = sk_conn_make(sk);
		/* Fixed offsets: an index computed from a flag turns into
		 * pointer arithmetic the verifier refuses. */
		if (!conn) {
			if (!by_fd)
				return 0;
			fresh.state = TL_HTTP_CONN_HTTP;
			fresh.lost = lost;
			if (is_read)
				fresh.cont[0] = cont;
			else
				fresh.cont[1] = cont;
			bpf_map_update_elem(&http_conns, &sk_key, &fresh, BPF_ANY);
		} else {
			conn->state = TL_HTTP_CONN_HTTP;
			conn->lost = lost;
			if (is_read)
				conn->cont[0] = cont;
			else
				conn->cont[1] = cont;
			if (!by_fd) {
				sk_conn_settle(sk, conn);
				return 0;
			}
		}
	}
	/* The fd of a known connection is known already (a hash update per
	 * record would be the dearest step here); dup()ed fds of it are not
	 * followed to their close. */
	if (by_fd && !conn)
		bpf_map_update_elem(&http_fds, &fd_key, &sk_key, BPF_ANY);
	return 0;
}

/* The sys_exit variants' body, for both fd walks (fd_sock). */
static __always_inline int on_sys_exit(struct pt_regs *regs, long ret, const bool cast)
{
	/* regs is a BTF pointer: a plain load, not a helper call, because
	 * this line runs at every syscall exit on the node. */
	long nr = regs->orig_ax;
	enum io_side side = io_side(nr);
	struct tl_http_conn *conn;
	bool is_read = side == IO_READ;
	__u64 cgid, fd, sk_key;
	struct sock *sk;

	if (side == IO_NONE) {
		__u64 *skp, fd_key;

		if (nr != NR_CLOSE || ret != 0)
			return 0;
		fd_key = (bpf_get_current_pid_tgid() & 0xffffffff00000000ULL) |
			 (__u32)regs->di;
		skp = bpf_map_lookup_elem(&http_fds, &fd_key);
		if (!skp)
			return 0;
		sk_key = *skp;
		bpf_map_delete_elem(&http_fds, &fd_key);
		conn = bpf_map_lookup_elem(&http_conns, &sk_key);
		if (!conn)
			return 0;
		if ((conn->state != TL_HTTP_CONN_HTTP && conn->state != TL_HTTP_CONN_H2) ||
		    emit_small(TL_HTTP_REC_CLOSE, bpf_get_current_cgroup_id(), sk_key, 0, conn)) {
			bpf_map_delete_elem(&http_conns, &sk_key);
			return 0;
		}
		/* The close did not fit in the ring: user space still holds
		 * this connection's unanswered requests under the socket's
		 * address, which the next socket allocated there reuses. Keep
		 * only the loss mark, so that socket's first record tells user
		 * space to drop them instead of pairing them with its answers. */
		conn->state = 0;
		conn->cont[0] = conn->cont[1] = 0;
		conn->lost = 1;
		__builtin_memset(conn->h2, 0, sizeof(conn->h2));
		return 0;
	}
	if (!io_result(ret, is_read))
		return 0;
	cgid = bpf_get_current_cgroup_id();
	if (!cgroup_tracked(cgid))
		return 0;
	fd = regs->di;
	sk = fd_sock(fd, cast);
	if (!sk)
		return 0;
	sk_key = (__u64)sk;
	return on_io(regs, nr, ret, is_read, cgid, sk, bpf_map_lookup_elem(&http_conns, &sk_key), fd, true,
		     cast);
}

/* The socket variant's body: the kernel's own socket send and receive
 * tracepoints (sock_sendmsg_nosec, sock_recvmsg_nosec; kernels >= 6.3) give
 * the socket and the result, so nothing runs at the node's other syscalls
 * and there is no fd walk; the call and its buffer come from the task's
 * saved user registers. What is followed is a socket of a tracked cgroup
 * (the cgroup it was made in; an accepted one has its listener's), the
 * same cgroup its records and its end are said with; which process
 * calls does not matter. Calls whose buffer is not where user_buf() looks
 * (sendfile, recvmmsg, io_uring, the kernel's own sockets) say nothing but
 * the end of a connection. */
static __always_inline int on_sock_io(struct sock *sk, int ret, int flags, bool is_read)
{
	struct tl_http_conn *conn = NULL;
	struct pt_regs *regs;
	__u64 cgid;
	long nr;

	/* (a read's end of stream says nothing here: the socket's
	 * destruction does) */
	if (!(ret > 0 || ret == -ECONNRESET || ret == -EPIPE) || (is_read && (flags & MSG_PEEK)))
		return 0;
	if (sk->sk_protocol != IPPROTO_TCP || sk->sk_type != SOCK_STREAM)
		return 0;
	/* The socket's cgroup, not the caller's: two loads from the socket
	 * the kernel has just used, where the caller's takes three from the
	 * task (~35 ns less a call, bench/README.md). The table answers for
	 * every socket on the node, most often from a line that is the same
	 * at each of its calls. */
	cgid = sk_cgroup_id(sk);
	if (!cgroup_tracked(cgid))
		return 0;
	/* The socket's storage only while some socket has a mark. */
	if (*(volatile __u32 *)&http_marked)
		conn = bpf_sk_storage_get(&http_sk_conns, sk, NULL, 0);
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	nr = regs->orig_ax;
	if (ret > 0 && io_side(nr) != (is_read ? IO_READ : IO_WRITE))
		return 0;
	return on_io(regs, nr, ret, is_read, cgid, sk, conn, 0, false, true);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(http_sock_recv, struct sock *sk, int ret, int flags)
{
	return on_sock_io(sk, ret, flags, true);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(http_sock_send, struct sock *sk, int ret, int flags)
{
	return on_sock_io(sk, ret, flags, false);
}

/* The socket variant's end of a connection: the socket is destroyed once the
 * process closed it and TCP is done with it, after the last read or write
 * it could make. Any context, the process's or a softirq's: the cgroup is
 * the socket's own (an accepted one has its listener's). Said for every
 * tracked TCP socket, HTTP or not (user space forgets what it does not
 * know), as no state says which carried HTTP. A reset the process never
 * read is said with it. A close that does not fit in the ring leaves user
 * space's pending requests to its idle expiry (the cookie is never
 * reused). */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(http_tcp_destroy, struct sock *sk)
{
	struct tl_http_conn *conn = NULL;
	__u64 cgid;

	if (*(volatile __u32 *)&http_marked) {
		conn = bpf_sk_storage_get(&http_sk_conns, sk, NULL, 0);
		if (conn)
			__sync_fetch_and_add(&http_marked, -1);
	}
	cgid = sk_cgroup_id(sk);
	if (!cgroup_tracked(cgid))
		return 0;
	emit_small(TL_HTTP_REC_CLOSE, cgid, bpf_get_socket_cookie(sk),
		   sk->sk_err == ECONNRESET ? -ECONNRESET : 0, conn);
	return 0;
}

/* A connection of a tracked cgroup is established: accepted (the child
 * socket going SYN_RECV -> ESTABLISHED, in softirq; it has its listener's
 * cgroup, sk_clone_lock copies sk_cgrp_data) or connected (SYN_SENT ->
 * ESTABLISHED). One OPEN record names it, its peer and the moment: the
 * connection's start, and an accepted connection that never carries a
 * whole request is still seen. The state tests come first: every TCP
 * connection on the node passes here ~10 times on each end. by_cookie:
 * the sock variant's key (the cookie, generated here for the records that
 * follow), else the socket's address (the sys_exit variants'). */
static __always_inline int on_state(const struct sock *sk, int oldstate, int newstate,
				    const bool by_cookie)
{
	struct tl_http_rec *r;
	__u64 cgid, key;

	if (newstate != TCP_ESTABLISHED || (oldstate != TCP_SYN_RECV && oldstate != TCP_SYN_SENT))
		return 0;
	if (sk->sk_protocol != IPPROTO_TCP)
		return 0;
	cgid = sk_cgroup_id((struct sock *)sk);
	if (!cgroup_tracked(cgid))
		return 0;
	key = by_cookie ? bpf_get_socket_cookie((struct sock *)sk) : (__u64)sk;
	r = bpf_ringbuf_reserve(&http_events, sizeof(*r), 0);
	if (!r) {
		count_drop(TL_HTTP_REC_OPEN);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->kind = TL_HTTP_REC_OPEN;
	r->flags = oldstate == TCP_SYN_RECV ? TL_HTTP_RF_ACCEPTED : 0;
	r->ktime_ns = bpf_ktime_get_boot_ns();
	r->cgroup_id = cgid;
	r->sock = key;
	rec_peer(r, sk, true);
	bpf_ringbuf_submit(r, submit_flags(TL_HTTP_RING_TAKEN(sizeof(*r))));
	return 0;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(http_open, const struct sock *sk, const int oldstate, const int newstate)
{
	return on_state(sk, oldstate, newstate, true);
}

/* The sys_exit variants' twin: their records name a connection by its
 * socket's address. */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(http_open_by_sk, const struct sock *sk, const int oldstate, const int newstate)
{
	return on_state(sk, oldstate, newstate, false);
}

/* Loaded where the kernel has bpf_rdonly_cast() (>= 6.2). */
SEC("tp_btf/sys_exit")
int BPF_PROG(http_sys_exit, struct pt_regs *regs, long ret)
{
	return on_sys_exit(regs, ret, true);
}

/* The same with probe reads: older kernels. */
SEC("tp_btf/sys_exit")
int BPF_PROG(http_sys_exit_probed, struct pt_regs *regs, long ret)
{
	return on_sys_exit(regs, ret, false);
}

/* Cost-comparison twins, never loaded by termlined (autoload off): the
 * classic per-syscall tracepoints a stash-based variant would hook (enter
 * to keep the arguments, exit for the result) for the same nine syscalls,
 * doing the first check a real one does (tracked cgroup), then returning.
 * bench/bench-http-capture loads them to measure what each hook choice
 * costs processes that are not tracked (bench/README.md, "HTTP capture"). */
#define CLASSIC_TWIN(name)                                                             \
	SEC("tracepoint/syscalls/sys_enter_" #name)                                    \
	int twin_enter_##name(void *ctx)                                               \
	{                                                                              \
		__u64 cgid = bpf_get_current_cgroup_id();                              \
		return bpf_map_lookup_elem(&http_cgroups, &cgid) != NULL;              \
	}                                                                              \
	SEC("tracepoint/syscalls/sys_exit_" #name)                                     \
	int twin_exit_##name(void *ctx)                                                \
	{                                                                              \
		__u64 cgid = bpf_get_current_cgroup_id();                              \
		return bpf_map_lookup_elem(&http_cgroups, &cgid) != NULL;              \
	}
CLASSIC_TWIN(read)
CLASSIC_TWIN(write)
CLASSIC_TWIN(readv)
CLASSIC_TWIN(writev)
CLASSIC_TWIN(recvfrom)
CLASSIC_TWIN(sendto)
CLASSIC_TWIN(recvmsg)
CLASSIC_TWIN(sendmsg)
CLASSIC_TWIN(close)

/* The floor: an empty program on the same hook, never loaded by termlined.
 * What any tp_btf sys_exit program costs every syscall on the node before
 * it does anything (bench/bench-http-capture, variant "empty"). */
SEC("tp_btf/sys_exit")
int BPF_PROG(http_floor_sys_exit, struct pt_regs *regs, long ret)
{
	return 0;
}
