/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <microhttpd.h>

#include "event.h"
#include "loop.h"

/* The agent side of the preStop gate (docs/drain.md): keeps the drained
 * condition (drain.h) of every Pod the agent hears about, fed from the
 * events passing through the agent's sink and from the kernel's connection
 * counters, and answers GET /v1/pods/{uid}/drained?quiet=D&timeout=D as a
 * long-poll on the loop: the MHD connection is suspended, and resumed from
 * the loop's timer when the Pod is drained (200) or the timeout passes
 * (504), or dropped as soon as its client goes. */
struct tl_drain_agent;

struct tl_drain_agent_config {
	/* Both Pods and EndpointSlices listed once: before that, a missing
	 * slice proves nothing (answer 503). NULL = always. */
	bool (*synced)(void *ud);
	/* Whether the API knows this Pod (404 otherwise). NULL = all known. */
	bool (*pod_known)(void *ud, const char *uid);
	/* Called on every tick while a wait is pending, before the waits are
	 * evaluated: the place to read kernel counters (drain-conn.h). */
	void (*poll)(void *ud);
	/* Called when a wait starts for a Pod no endpoint fact was seen for:
	 * the first LIST after an agent restart reports no change, so the
	 * slices held now are fed in (tl_drain_agent_endpoint). NULL = none. */
	void (*seed)(void *ud, const char *uid);
	void *ud;
	/* drain.wait_started / drain.wait_ended go here (the agent's sink). */
	struct tl_emitter emit;
	unsigned max_waiters; /* 0 = TL_DRAIN_DEFAULT_WAITERS */
};

#define TL_DRAIN_DEFAULT_WAITERS 48
/* Pods whose facts are kept; beyond, the least recently changed one with no
 * pending wait is forgotten. */
#define TL_DRAIN_MAX_PODS 512
#define TL_DRAIN_DEFAULT_QUIET_MS 1000
#define TL_DRAIN_DEFAULT_TIMEOUT_MS 30000
#define TL_DRAIN_MAX_TIMEOUT_MS (3600 * 1000)
/* How often pending waits are re-evaluated (and kernel counters read). */
#define TL_DRAIN_TICK_MS 50

int tl_drain_agent_new(const struct tl_drain_agent_config *cfg, struct tl_loop *loop,
		       struct tl_drain_agent **ret);
/* Pending waits must have been released (tl_drain_agent_release_all). */
void tl_drain_agent_free(struct tl_drain_agent *d);

/* Facts: every recorded event (others are ignored), and inbound
 * connections counted by the kernel for a Pod. */
void tl_drain_agent_observe(struct tl_drain_agent *d, const struct tl_event *ev);
void tl_drain_agent_connection(struct tl_drain_agent *d, const char *uid, uint64_t count,
			       int64_t last_ns);
/* An endpoint's state as listed now (a seed), observed at time t. */
void tl_drain_agent_endpoint(struct tl_drain_agent *d, const char *uid, const char *slice,
			     const char *service, bool ready, bool serving, bool terminating, int64_t t);
/* Whether some wait is pending (the kernel counters need reading). */
unsigned tl_drain_agent_waiters(const struct tl_drain_agent *d);
/* Pods whose facts are kept now: those the API knows (pod_known), until
 * their Pod ends (pod.deleted, pod.cgroups_removed) with no wait pending. */
unsigned tl_drain_agent_pods(const struct tl_drain_agent *d);

/* HTTP glue, called by the server (http-server.c): path is the URL after
 * "/v1/pods/"; con_cls is MHD's per-request pointer. The server must run
 * MHD with MHD_ALLOW_SUSPEND_RESUME. */
enum MHD_Result tl_drain_agent_http(struct tl_drain_agent *d, struct MHD_Connection *conn,
				    const char *path, void **con_cls);
/* How to run the server once waits were resumed (MHD_run plus the
 * server's own timer); set by the server. */
void tl_drain_agent_set_runner(struct tl_drain_agent *d, void (*run)(void *ud), void *ud);
/* MHD_OPTION_NOTIFY_COMPLETED: frees what tl_drain_agent_http left. */
void tl_drain_agent_http_completed(struct tl_drain_agent *d, void **con_cls);
/* Before MHD_stop_daemon: every pending wait is answered 503 (the agent is
 * stopping; termline-wait retries against the next one). */
void tl_drain_agent_release_all(struct tl_drain_agent *d);

/* "1.5s", "500ms", "2m", "3" (seconds) -> ms. 0 or -EINVAL. */
int tl_drain_parse_duration(const char *s, int64_t *ret_ms);
