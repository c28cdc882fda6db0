/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#pragma once
/* Wire records of http.bpf.c: what a tracked process read from or wrote to
 * a TCP socket when it starts (or continues the head of) an HTTP/1.x
 * message, the HTTP/2 frames of a connection (headers and the payloads the
 * agent reads, never DATA), plus the connection's end. Only __u8..__u64 and fixed arrays;
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
	/* HTTP/2 frames of one read or write (or of a part of it: a call whose
	 * frames do not fit in one record takes several, in order): data is a
	 * sequence of segments, each a struct tl_h2_seg and its copied bytes
	 * (docs/http-capture.md, "HTTP/2"). total: the bytes the call moved. */
	TL_HTTP_REC_H2 = 6,
	TL_HTTP_REC_KIND_MAX = 7,
};

/* tl_http_rec.flags */
#define TL_HTTP_RF_READ 0x1     /* the process read the bytes (else wrote them) */
#define TL_HTTP_RF_CONT 0x2     /* copied because the last head on this side did not end */
#define TL_HTTP_RF_LOST 0x4     /* records of this connection were lost (ring full) before this one */
#define TL_HTTP_RF_PEER 0x8     /* the peer fields are set (OPEN, and DATA that starts a request) */
#define TL_HTTP_RF_ACCEPTED 0x10 /* OPEN: the handshake completed on the listening side */
/* H2: after this record the program stopped following this direction's
 * frames (too many in one call, a buffer it could not read): what user
 * space holds of the direction is lost; it is followed again from a call
 * that starts at a frame the program can check. With TL_HTTP_RF_LOST on an
 * H2 record: bytes of this direction before it were not delivered (a
 * record lost to a full ring, or bytes the program did not see). */
#define TL_HTTP_RF_H2_OFF 0x20

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
 * holds a mark, cont or lost, or follows HTTP/2 (http_sk_conns,
 * docs/http-capture.md). */
#define TL_HTTP_CONN_HTTP 1     /* an HTTP/1.x message was seen */
#define TL_HTTP_CONN_NOT_HTTP 2 /* TLS: never copy again */
#define TL_HTTP_CONN_H2 3       /* HTTP/2: its frames are followed (h2[]) */

/* An HTTP/2 record's data: segments of the direction's byte stream, in
 * order. Each says: copy bytes of the stream follow this header, then skip
 * bytes of it were not copied (the rest of a frame's payload the agent
 * does not read: DATA, PING, WINDOW_UPDATE, or past what is kept of a
 * header block). Skipped bytes are always inside one frame's payload. */
struct tl_h2_seg {
	__u32 skip;
	__u16 copy;
	__u8 flags;           /* TL_H2_SEG_* */
	__u8 pad;
};
/* The copied bytes start at a frame header where the program began (or
 * began again) to follow the direction's frames: user space takes it as a
 * frame start. */
#define TL_H2_SEG_SYNC 0x1

/* One direction of an HTTP/2 connection as the program follows it: where
 * the next frame header is in the byte stream, what of the current frame is
 * still to copy, and the TCP sequence number after the last byte it saw (a
 * call that does not start there means bytes went by unseen). */
struct tl_h2_side {
	__u32 left;           /* payload bytes of the current frame still to come */
	__u32 seq;            /* copied_seq (reads) or write_seq (writes) after the last call */
	__u32 skip;           /* skipped bytes of the current frame not yet said in a record */
	__u16 copy;           /* of left, the first ones to copy */
	__u8 hn;              /* bytes of the next frame header seen (the last call ended inside it) */
	__u8 flags;           /* TL_H2S_* */
	__u8 hbuf[8];         /* those bytes */
};
/* The client preface, followed as a payload of its own ahead of the frames. */
#define TL_HTTP_H2_PREFACE_LEN 24
#define TL_H2S_ON 0x1         /* following: left, copy, hn and seq are right */
#define TL_H2S_LOST 0x2       /* bytes of the direction were not delivered: the next record says so */
#define TL_H2S_SYNC 0x4       /* the next frame header starts a TL_H2_SEG_SYNC segment */
#define TL_H2S_SEEN 0x8       /* a call of this direction was seen (the preface is only first) */

struct tl_http_conn {
	__u8 state;
	__u8 cont[2];         /* [read, write]: a head on that side continues */
	__u8 lost;            /* a record of this connection did not fit in the ring */
	__u8 pad[4];
	struct tl_h2_side h2[2]; /* [read, write], TL_HTTP_CONN_H2 only */
};
