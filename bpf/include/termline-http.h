/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#pragma once
/* Wire records of http.bpf.c: what a tracked process read from or wrote to
 * a TCP socket when it starts (or continues the head of) an HTTP/1.x
 * message, plus the connection's end. Only __u8..__u64 and fixed arrays;
 * explicit padding, zeroed; sizes asserted in user space. A record is
 * struct tl_http_rec followed by len bytes of data (the ring holds the
 * header and the copied prefix only, never the whole buffer). */
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "termline-cgtab.h"

/* Largest prefix the program can copy; --http-prefix-bytes picks up to this. */
#define TL_HTTP_PREFIX_MAX 4096
#define TL_HTTP_PREFIX_DEFAULT 2048
/* What a record of size bytes takes of the ring: the ring's 8-byte header
 * and the record rounded up to 8 (the drain period and the wake-ups count
 * in these). */
#define TL_HTTP_RING_TAKEN(size) (8 + (((size) + 7) & ~7ULL))

enum tl_http_rec_kind {
	TL_HTTP_REC_DATA = 1,   /* data[len] is the prefix of total bytes */
	TL_HTTP_REC_ERROR = 2,  /* a read or write failed with -err (ECONNRESET, EPIPE) */
	TL_HTTP_REC_EOF = 3,    /* a read returned 0: the peer closed its side (the last record) */
	/* The connection's end: close() of its fd by this process (sys_exit
	 * variants) or the socket's destruction (sock variant: err is
	 * -ECONNRESET for a reset the process never read). */
	TL_HTTP_REC_CLOSE = 4,
	/* The connection was established while the programs were attached
	 * (inet_sock_set_state to ESTABLISHED): accepted (TL_HTTP_RF_ACCEPTED)
	 * or connected; the peer fields are set. Its time is the
	 * connection's start. */
	TL_HTTP_REC_OPEN = 5,
	TL_HTTP_REC_KIND_MAX = 6,
};

/* tl_http_rec.flags */
#define TL_HTTP_RF_READ 0x1     /* the process read the bytes (else wrote them) */
#define TL_HTTP_RF_CONT 0x2     /* copied because the last head on this side did not end */
#define TL_HTTP_RF_LOST 0x4     /* records of this connection were lost (ring full) before this one */
#define TL_HTTP_RF_PEER 0x8     /* the peer fields are set (OPEN, and DATA that starts a request) */
#define TL_HTTP_RF_ACCEPTED 0x10 /* OPEN: the handshake completed on the listening side */

#define TL_HTTP_AF_INET 2
#define TL_HTTP_AF_INET6 10

struct tl_http_rec {
	__u16 kind;
	__u16 flags;
	__u32 len;            /* bytes of data that follow */
	__u64 ktime_ns;       /* CLOCK_BOOTTIME */
	__u64 cgroup_id;
	/* The connection's key: the struct sock's address (sys_exit variants)
	 * or the socket's cookie (sock variant, never reused). */
	__u64 sock;
	__u32 pid;
	__u32 tgid;
	__u32 total;          /* bytes the syscall moved (clamped to 2^32-1) */
	__s32 err;            /* ERROR: the syscall's -errno */
	/* With TL_HTTP_RF_PEER: the connection's two ends, from the socket.
	 * Only records that start a request (one per request) and OPEN carry
	 * them: a connection opened before the programs were attached has no
	 * OPEN, and its first request names the peer. */
	__u8 peer_addr[16];   /* network order; IPv4 in the first 4 bytes */
	__u16 peer_port;      /* host order */
	__u16 local_port;     /* host order */
	__u16 family;         /* TL_HTTP_AF_INET or TL_HTTP_AF_INET6; 0 without a peer */
	__u16 pad;
};

/* Per-connection state the program keeps: the sys_exit variants' for every
 * connection they follow (http_conns), the sock variant's only while it
 * holds a mark, cont or lost (http_sk_conns, docs/http-capture.md). */
#define TL_HTTP_CONN_HTTP 1     /* an HTTP/1.x message was seen */
#define TL_HTTP_CONN_NOT_HTTP 2 /* TLS or HTTP/2: never copy again */

struct tl_http_conn {
	__u8 state;
	__u8 cont[2];         /* [read, write]: a head on that side continues */
	__u8 lost;            /* a record of this connection did not fit in the ring */
	__u8 pad[4];
};
