/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#pragma once
/* Wire structs shared by the BPF programs and termlined. Only __u8..__u64
 * and fixed arrays; explicit padding (always zeroed by the producer); sizes
 * asserted in user space. Every record starts with struct tl_ev_header and
 * its size field covers the whole record, so user space can reject a record
 * whose kind and size disagree. */
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TL_COMM_LEN 16
#define TL_FILENAME_LEN 256

enum tl_ev_kind {
	TL_EV_SIGNAL_GENERATE = 1,  /* process.signal */
	TL_EV_SIGNAL_DELIVER = 2,   /* process.signal_delivered */
	TL_EV_EXEC = 3,             /* process.exec */
	TL_EV_EXIT = 4,             /* process.exit */
	TL_EV_LISTEN = 5,           /* socket.listen */
	TL_EV_LISTEN_CLOSED = 6,    /* socket.listen_closed */
	TL_EV_RESET_SENT = 7,       /* tcp.reset_sent */
	TL_EV_RESET_RECEIVED = 8,   /* tcp.reset_received */
	TL_EV_KIND_MAX = 9,         /* size of the per-kind drop counter array */
};

/* Signal filter mask: bit (signo - 1). */
#define TL_SIG_BIT(sig) (1ULL << ((sig) - 1))
/* The default set is TL_SIGNALS_DEFAULT (daemon/core/signals.h), from
 * <signal.h> constants, which BPF programs cannot include: the loader always
 * sets the filter. */

/* tl_ev_header.flags */
#define TL_EVF_GROUP 0x1    /* signal: sent to the whole thread group */
#define TL_EVF_NO_SOCK 0x2  /* reset: no socket; addresses from the packet, cgroup 0 */
#define TL_EVF_SOCK_CGROUP 0x4 /* cgroup_id taken from the socket, not from current */

struct tl_ev_header {
	__u16 kind;
	__u16 size;           /* whole record, header included */
	__u32 flags;
	__u64 ktime_ns;       /* CLOCK_BOOTTIME */
	__u64 cgroup_id;      /* cgroup v2 inode the event is attributed to */
	__u32 pid;            /* thread id of the subject (signal: the target) */
	__u32 tgid;           /* process id of the subject */
	__u8 comm[TL_COMM_LEN];
};

struct tl_ev_signal {
	struct tl_ev_header h; /* subject = target (generate) or receiver (deliver) */
	__u32 signo;
	__u32 result;         /* enum trace_signal_result; deliver: 0 */
	__u32 sender_pid;
	__u32 sender_tgid;
	__u8 sender_comm[TL_COMM_LEN];
};

struct tl_ev_exec {
	struct tl_ev_header h;
	__u32 old_pid;
	__u32 _pad0;
	__u8 filename[TL_FILENAME_LEN];
};

struct tl_ev_exit {
	struct tl_ev_header h;
	__u32 exit_code;      /* task->exit_code: (code << 8) | signal | 0x80 core */
	__u32 _pad0;
};

/* Listener and reset records. Addresses are in network byte order; an IPv4
 * address sits in the first 4 bytes, the rest zero. Ports in host order. */
struct tl_ev_sock {
	struct tl_ev_header h;
	__u16 family;         /* AF_INET or AF_INET6 */
	__u16 lport;
	__u16 rport;
	__u16 state;          /* reset: socket state (0 without socket); listen: new state */
	__u8 laddr[16];
	__u8 raddr[16];
};

/* Key of the pod-IP map: IPv4 as ::ffff:a.b.c.d so both families share it. */
struct tl_ip_key {
	__u8 addr[16];
};
