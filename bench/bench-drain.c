/* SPDX-License-Identifier: Apache-2.0 */
/* What the preStop gate adds to the agent (docs/drain.md):
 *  - per event through the sink: tl_drain_agent_observe() for kinds it
 *    ignores (most of them) and for the facts it keeps (inbound http.request
 *    at request rates, endpoint changes);
 *  - per tick while waits are pending: evaluating every pending wait is
 *    what on_tick does besides reading the kernel counters; measured here as
 *    tl_drain_evaluate() over PODS Pods.
 * Prints ns per call (wall clock, best of 5 runs on a shared machine); for
 * instruction counts run it under valgrind --tool=callgrind.
 *
 * usage: bench-drain [EVENTS] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-util.h"
#include "clock.h"
#include "drain-agent.h"
#include "drain.h"
#include "event.h"
#include "loop.h"

#define PODS 110 /* the kubelet's default Pod limit per node */
#define RUNS 5

static void fill_uid(char *buf, unsigned i)
{
	snprintf(buf, TL_UID_MAX, "0d7a%04x-0000-4000-8000-%012x", i & 0xffff, i);
}

static double per_call(uint64_t ns, uint64_t n)
{
	return n ? (double)ns / (double)n : 0;
}

int main(int argc, char **argv)
{
	struct tl_drain_agent_config dc = { 0 };
	struct tl_drain_agent *d = NULL;
	struct tl_loop *loop = NULL;
	struct tl_event ignored, request, endpoint;
	struct tl_drain_state st[PODS];
	uint64_t events = 2000000, best[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX };
	unsigned evals = 0;
	static char uids[PODS][TL_UID_MAX];
	char uid[TL_UID_MAX];
	int r = 1;

	if (argc > 1 && bench_parse_u64(argv[1], 1000, 1000000000ULL, &events) < 0) {
		fprintf(stderr, "usage: bench-drain [EVENTS]\n");
		return 2;
	}
	if (tl_loop_new(&loop) < 0 ||
	    tl_drain_agent_new(&dc, loop, &d) < 0) {
		fprintf(stderr, "bench-drain: setup failed\n");
		goto out;
	}
	if (tl_event_init_kind(&ignored, TL_KIND_PROCESS_EXEC, TL_SRC_KERNEL, 1) < 0 ||
	    tl_event_init_kind(&request, TL_KIND_HTTP_REQUEST, TL_SRC_KERNEL, 1) < 0 ||
	    tl_event_init_kind(&endpoint, TL_KIND_ENDPOINT_CONDITION, TL_SRC_API, 1) < 0 ||
	    tl_event_set_text(&request, TL_F_HTTP_DIRECTION, "inbound") < 0 ||
	    tl_event_set_text(&endpoint, TL_F_EP_SLICE, "web-abcde") < 0 ||
	    tl_event_set_text(&endpoint, TL_F_EP_SERVICE, "web") < 0 ||
	    tl_event_set_i(&endpoint, TL_F_EP_READY, false) < 0 ||
	    tl_event_set_i(&endpoint, TL_F_EP_SERVING, true) < 0 ||
	    tl_event_set_i(&endpoint, TL_F_EP_TERMINATING, true) < 0) {
		fprintf(stderr, "bench-drain: events\n");
		goto out;
	}
	for (unsigned i = 0; i < PODS; i++) {
		fill_uid(uid, i);
		memcpy(endpoint.pod_uid, uid, TL_UID_MAX);
		endpoint.time_ns = tl_now_real_ns();
		tl_drain_agent_observe(d, &endpoint);
		tl_drain_state_init(&st[i]);
		tl_drain_fact_deletion(&st[i], endpoint.time_ns);
		tl_drain_fact_endpoint(&st[i], "web-abcde", "web", false, true, true, endpoint.time_ns);
		tl_drain_fact_endpoint(&st[i], "admin-12345", "admin", false, false, true, endpoint.time_ns);
	}
	for (unsigned i = 0; i < PODS; i++)
		fill_uid(uids[i], i);
	for (int run = 0; run < RUNS; run++) {
		uint64_t t0 = bench_now_ns(), t1, t2, t3;
		int64_t now = tl_now_real_ns();
		struct tl_drain_verdict v;

		/* the Pod changes with every event, as on a busy node; the
		 * memcpy is the sink's own attribution, not the gate's */
		for (uint64_t i = 0; i < events; i++) {
			memcpy(ignored.pod_uid, uids[i % PODS], TL_UID_MAX);
			tl_drain_agent_observe(d, &ignored);
		}
		t1 = bench_now_ns();
		for (uint64_t i = 0; i < events; i++) {
			memcpy(request.pod_uid, uids[i % PODS], TL_UID_MAX);
			request.time_ns = now + (int64_t)i;
			tl_drain_agent_observe(d, &request);
		}
		t2 = bench_now_ns();
		for (uint64_t i = 0; i < events; i++) {
			tl_drain_evaluate(&st[i % PODS], now + 2000000000LL, 1000000000LL, &v);
			evals += v.unmet == TL_DRAIN_MET;
		}
		t3 = bench_now_ns();
		if (t1 - t0 < best[0])
			best[0] = t1 - t0;
		if (t2 - t1 < best[1])
			best[1] = t2 - t1;
		if (t3 - t2 < best[2])
			best[2] = t3 - t2;
	}
	printf("bench-drain: %llu calls each, best of %d runs, %d Pods\n", (unsigned long long)events, RUNS,
	       PODS);
	printf("  observe, a kind the gate ignores:      %6.1f ns/event\n", per_call(best[0], events));
	printf("  observe, an inbound http.request:      %6.1f ns/event\n", per_call(best[1], events));
	printf("  evaluate one wait (2 slices):          %6.1f ns/wait\n", per_call(best[2], events));
	printf("  a tick with %d pending waits:          %6.2f us (every %d ms while waits are pending)\n",
	       TL_DRAIN_DEFAULT_WAITERS, per_call(best[2], events) * TL_DRAIN_DEFAULT_WAITERS / 1000.0,
	       TL_DRAIN_TICK_MS);
	if (evals == 0)
		printf("  (no evaluation drained: check the setup)\n");
	r = 0;
out:
	tl_event_clear(&ignored);
	tl_event_clear(&request);
	tl_event_clear(&endpoint);
	tl_drain_agent_free(d);
	tl_loop_free(loop);
	return r;
}
