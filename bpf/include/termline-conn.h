/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#pragma once
/* Shared with user space (daemon/drain/drain-conn.c): inbound connections
 * accepted per cgroup v2 id, for the drained condition (docs/drain.md). */
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct tl_conn_count {
	__u64 count;   /* connections that completed the handshake */
	__u64 last_ns; /* CLOCK_BOOTTIME of the latest */
};
