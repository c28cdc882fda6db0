/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "drain.h"
#include "event.h"
#include "loop.h"

/* The agent side of the preStop gate (docs/drain.md): keeps the drained
 * condition (drain.h) of every Pod the agent hears about, fed from the
 * events passing through the agent's sink and from the kernel's connection
 * counters, and answers waits for a Pod to be drained: at once when it is,
 * else from the loop's timer when it becomes drained or the wait's timeout
 * passes. The HTTP server (http/) speaks the wire: it asks, and writes the
 * typed answer. */
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

/* ---- waits ---- */

enum tl_drain_outcome {
	TL_DRAIN_DRAINED,   /* 200 */
	TL_DRAIN_TIMEOUT,   /* 504 */
	TL_DRAIN_STOPPING,  /* 503: the agent stops; termline-wait asks the next one */
	TL_DRAIN_ABANDONED, /* the client left (no answer is written) */
};

/* A wait's answer, typed: the verdict at the answer's time and the facts
 * it rests on (docs/drain.md says the body). Valid during the callback. */
struct tl_drain_answer {
	enum tl_drain_outcome outcome;
	const char *uid;
	const struct tl_drain_state *st;
	struct tl_drain_verdict v;
	const char *held_by; /* the condition that held the gate last */
	int64_t quiet_ms;
	int64_t started_ns, answered_ns;
	char summary[512];   /* the same in a sentence */
};

typedef void (*tl_drain_answer_fn)(void *ud, const struct tl_drain_answer *a);
struct tl_drain_wait;

/* Waits for the Pod uid (at most TL_UID_MAX - 1 bytes of [0-9a-fA-F-]) to
 * be drained for quiet_ms, at most timeout_ms (1 .. TL_DRAIN_MAX_TIMEOUT_MS).
 * 0: drained already, answered (answer was called before the return);
 * 1: pending in *ret: answer is called once, later, from the loop.
 * -EINVAL (a malformed uid or duration), -EAGAIN (Pods and slices not
 * listed yet), -ENOENT (a Pod the API does not know), -EBUSY (too many
 * pending waits: counted), -ENOMEM. */
int tl_drain_agent_wait(struct tl_drain_agent *d, const char *uid, int64_t quiet_ms,
			int64_t timeout_ms, tl_drain_answer_fn answer, void *ud,
			struct tl_drain_wait **ret);
/* The client of a pending wait left: it ends now (drain.wait_ended
 * "abandoned"), answer is not called, w is freed. */
void tl_drain_wait_abandon(struct tl_drain_wait *w);
/* Every pending wait is answered "stopping" (before the server stops). */
void tl_drain_agent_release_all(struct tl_drain_agent *d);
