/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "loop.h"
#include "termline-http.h"

/* The kernel half of HTTP capture (bpf/http.bpf.c): loaded once, attached
 * and detached as capture windows open and close (attached programs cost
 * every process on the node that uses a socket, or every syscall for the
 * sys_exit variants: docs/http-capture.md). Its own
 * ring buffer, tracked-cgroup set and drop counters. */
struct tl_http_bpf;

struct tl_http_bpf_config {
	uint32_t prefix_bytes;   /* 1..TL_HTTP_PREFIX_MAX; 0 = TL_HTTP_PREFIX_DEFAULT */
	uint32_t ringbuf_bytes;  /* power of two >= 4096; 0 = 4 MiB */
	/* Which hooks: NULL or "auto" (the first that loads of "sock",
	 * "rdonly_cast", "probe_read"), else that one only (tests and benches;
	 * docs/http-capture.md, "Hooks"). */
	const char *variant;
	/* The drain timer's slow period in ms; 0 = 25 (tests lengthen it to
	 * see the programs' wake-ups drain the ring alone). */
	uint32_t drain_ms;
};

/* One ring record: data holds rec->len bytes (DATA records). */
typedef void (*tl_http_rec_cb)(void *userdata, const struct tl_http_rec *rec, const uint8_t *data);

/* Opens and loads, not attached. -errno and one line in err. */
int tl_http_bpf_new(const struct tl_http_bpf_config *cfg, tl_http_rec_cb cb, void *userdata,
		    struct tl_http_bpf **ret, char *err, size_t errlen);
void tl_http_bpf_free(struct tl_http_bpf *b);
/* The hooks loaded: "sock" (socket send/receive tracepoints and the TCP
 * socket's destruction), "rdonly_cast" or "probe_read" (raw sys_exit, the
 * fd walk by plain loads or by probe reads). */
const char *tl_http_bpf_variant(const struct tl_http_bpf *b);

int tl_http_bpf_attach(struct tl_http_bpf *b);
/* Drains the ring, then detaches. */
void tl_http_bpf_detach(struct tl_http_bpf *b);
bool tl_http_bpf_attached(const struct tl_http_bpf *b);

/* The ring's drain timer in the loop (25 ms while the records come
 * slowly, shorter as they come faster) and its fd, readable when the
 * programs wake the agent (each time the records written reach another
 * half of the ring). */
int tl_http_bpf_attach_loop(struct tl_http_bpf *b, struct tl_loop *loop);
/* The drain timer's next period, after one of period_ms in which drained
 * bytes of a ring of ring_bytes were drained: the period in which that rate
 * fills a quarter of the ring, from 1 ms to slow_ms. */
uint64_t tl_http_drain_period_ms(uint64_t period_ms, uint64_t drained, uint64_t ring_bytes, uint64_t slow_ms);
/* Consumes what is in the ring now: records or -errno. */
int tl_http_bpf_drain(struct tl_http_bpf *b);

int tl_http_bpf_track_cgroup(struct tl_http_bpf *b, uint64_t cgroup_id);
int tl_http_bpf_untrack_cgroup(struct tl_http_bpf *b, uint64_t cgroup_id);

/* Records lost to a full ring, all kinds. */
uint64_t tl_http_bpf_dropped(struct tl_http_bpf *b);
/* The sock variant's sockets that hold a state now (a head going on in the
 * next call, a lost record not yet said): 0 once they are spent or their
 * sockets gone; for tests. */
uint32_t tl_http_bpf_sock_states(const struct tl_http_bpf *b);
