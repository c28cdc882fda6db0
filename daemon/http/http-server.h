/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drain-agent.h"
#include "loop.h"
#include "timeline.h"

/* The agent's read-only HTTP API on libmicrohttpd, driven by the one epoll
 * loop (MHD's epoll fd is registered in tl_loop; no MHD thread):
 * /healthz, /readyz, /metrics, /v1/timelines, /v1/timelines/NS/NAME[?uid=],
 * and the preStop gate's long-poll /v1/pods/UID/drained (docs/drain.md).
 * Other methods get 405; connections, their memory (hence request line and
 * headers), the time a header may take and idle time are limited, and
 * some slots are kept for this host's own addresses (docs/hostile-peers.md). */
struct tl_http_config {
	const char *listen; /* "ADDR:PORT" (IPv4, or [IPv6]:PORT); port 0 = any */
	bool (*ready)(void *ud); /* NULL = always ready */
	void *ud;
	/* Answers GET /v1/pods/{uid}/drained (docs/drain.md); NULL = 404. */
	struct tl_drain_agent *drain;
};

struct tl_http;

/* err gets one line on failure (bad address, bind failure). */
int tl_http_new(const struct tl_http_config *cfg, struct tl_loop *loop, struct tl_timelines *t,
		struct tl_http **ret, char *err, size_t errlen);
/* The bound port (useful with port 0). */
uint16_t tl_http_port(const struct tl_http *h);
void tl_http_free(struct tl_http *h);
