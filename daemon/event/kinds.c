/* SPDX-License-Identifier: Apache-2.0 */
/* The kind table: every event kind, its usual source, its fields in slot
 * order and how each is written. docs/timeline-format.md is generated from
 * the same list by hand: keep both in step. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "event.h"

#define LIFE TL_KF_LIFECYCLE
#define F(n, t) { n, TL_FT_##t }

const struct tl_kind_info tl_kinds[TL_KIND_MAX] = {
	[TL_KIND_POD_DELETION_REQUESTED] = { "pod.deletion_requested", TL_SRC_API,
		LIFE | TL_KF_TERMINATION, 2,
		{ F("gracePeriodSeconds", INT), F("deletionTimestamp", STR) } },
	[TL_KIND_POD_CONDITION] = { "pod.condition", TL_SRC_API, LIFE, 4,
		{ F("condition", STR), F("status", STR), F("reason", STR),
		  F("lastTransitionTime", STR) } },
	[TL_KIND_CONTAINER_TERMINATED] = { "container.terminated", TL_SRC_API, LIFE, 5,
		{ F("exitCode", INT), F("reason", STR), F("signal", INT), F("startedAt", STR),
		  F("finishedAt", STR) } },
	[TL_KIND_POD_DELETED] = { "pod.deleted", TL_SRC_API, LIFE | TL_KF_ENDS_POD, 1,
		{ F("observedBy", STR) } },
	[TL_KIND_ENDPOINT_CONDITION] = { "endpoint.condition", TL_SRC_API, LIFE, 6,
		{ F("service", STR), F("endpointSlice", STR), F("ready", BOOL), F("serving", BOOL),
		  F("terminating", BOOL), F("address", STR) } },
	[TL_KIND_ENDPOINT_REMOVED] = { "endpoint.removed", TL_SRC_API, LIFE, 6,
		/* same slots as endpoint.condition; the booleans stay unset */
		{ F("service", STR), F("endpointSlice", STR), F("ready", BOOL), F("serving", BOOL),
		  F("terminating", BOOL), F("address", STR) } },
	[TL_KIND_PROCESS_SIGNAL] = { "process.signal", TL_SRC_KERNEL,
		LIFE | TL_KF_TERMINATION | TL_KF_HIGH_RATE, 7,
		{ F("signal", SIGNAME), F("signo", INT), F("pid", INT), F("comm", STR),
		  F("senderPid", INT), F("senderComm", STR), F("result", SIGRESULT) } },
	[TL_KIND_PROCESS_SIGNAL_DELIVERED] = { "process.signal_delivered", TL_SRC_KERNEL,
		TL_KF_HIGH_RATE, 4,
		{ F("signal", SIGNAME), F("signo", INT), F("pid", INT), F("comm", STR) } },
	[TL_KIND_PROCESS_EXEC] = { "process.exec", TL_SRC_KERNEL, LIFE | TL_KF_HIGH_RATE, 3,
		{ F("pid", INT), F("comm", STR), F("filename", STR) } },
	[TL_KIND_PROCESS_EXIT] = { "process.exit", TL_SRC_KERNEL, LIFE | TL_KF_HIGH_RATE, 4,
		{ F("pid", INT), F("comm", STR), F("exitCode", INT), F("exitSignal", INT) } },
	[TL_KIND_SOCKET_LISTEN] = { "socket.listen", TL_SRC_KERNEL, LIFE | TL_KF_HIGH_RATE, 2,
		{ F("address", ADDR), F("port", INT) } },
	[TL_KIND_SOCKET_LISTEN_CLOSED] = { "socket.listen_closed", TL_SRC_KERNEL,
		LIFE | TL_KF_HIGH_RATE, 2,
		{ F("address", ADDR), F("port", INT) } },
	[TL_KIND_TCP_RESET_SENT] = { "tcp.reset_sent", TL_SRC_KERNEL, LIFE | TL_KF_HIGH_RATE, 2,
		{ F("local", ENDPOINT), F("remote", ENDPOINT) } },
	[TL_KIND_TCP_RESET_RECEIVED] = { "tcp.reset_received", TL_SRC_KERNEL,
		LIFE | TL_KF_HIGH_RATE, 2,
		{ F("local", ENDPOINT), F("remote", ENDPOINT) } },
	[TL_KIND_POD_CGROUPS_REMOVED] = { "pod.cgroups_removed", TL_SRC_KERNEL, TL_KF_ENDS_POD, 1,
		{ F("cgroup", STR) } },
	[TL_KIND_HTTP_REQUEST] = { "http.request", TL_SRC_KERNEL, TL_KF_HIGH_RATE, 13,
		{ F("requestId", ID), F("method", STR), F("path", STR), F("status", INT),
		  F("start", TIME), F("durationMs", INT), F("direction", STR),
		  F("responseFlags", STR), F("error", STR), F("peer", ENDPOINT),
		  F("connStart", TIME), F("conn", INT), F("connClose", BOOL) } },
	[TL_KIND_EVENTS_AGGREGATED] = { "events.aggregated", TL_SRC_KERNEL, 0, 4,
		{ F("aggregatedType", STR), F("intervalMs", INT), F("count", INT),
		  F("failed", INT) } },
	[TL_KIND_DRAIN_WAIT_STARTED] = { "drain.wait_started", TL_SRC_API, 0, 2,
		{ F("quietMs", INT), F("timeoutMs", INT) } },
	[TL_KIND_DRAIN_WAIT_ENDED] = { "drain.wait_ended", TL_SRC_API, 0, 7,
		{ F("outcome", STR), F("heldBy", STR), F("heldMs", INT), F("connections", INT),
		  F("requests", INT), F("outOfRotation", TIME), F("lastTraffic", TIME) } },
	[TL_KIND_HTTP_CAPTURE] = { "http.capture", TL_SRC_KERNEL, 0, 2,
		{ F("state", STR), F("window", STR) } },
	[TL_KIND_HTTP_SUMMARY] = { "http.summary", TL_SRC_KERNEL, TL_KF_HIGH_RATE, 4,
		{ F("intervalMs", INT), F("count", INT), F("failed", INT), F("direction", STR) } },
	[TL_KIND_TCP_ACCEPTED] = { "tcp.accepted", TL_SRC_KERNEL, TL_KF_HIGH_RATE, 4,
		{ F("peer", ENDPOINT), F("port", INT), F("count", INT), F("last", TIME) } },
};

static const char *const source_names[TL_SRC_MAX] = {
	[TL_SRC_API] = "api",
	[TL_SRC_KERNEL] = "kernel",
	[TL_SRC_LOG] = "log",
};

const char *tl_kind_name(enum tl_kind k)
{
	if ((unsigned)k >= TL_KIND_MAX || !tl_kinds[k].name)
		return "unknown";
	return tl_kinds[k].name;
}

enum tl_kind tl_kind_parse(const char *name)
{
	if (!name)
		return TL_KIND_NONE;
	for (unsigned k = 1; k < TL_KIND_MAX; k++)
		if (tl_kinds[k].name && strcmp(tl_kinds[k].name, name) == 0)
			return (enum tl_kind)k;
	return TL_KIND_NONE;
}

int tl_kind_field(enum tl_kind k, const char *name)
{
	if ((unsigned)k >= TL_KIND_MAX || !name)
		return -1;
	for (unsigned i = 0; i < tl_kinds[k].n_fields; i++)
		if (strcmp(tl_kinds[k].fields[i].name, name) == 0)
			return (int)i;
	return -1;
}

const char *tl_container_id_bare(const char *id)
{
	const char *p = id ? strstr(id, "://") : NULL;

	return p ? p + 3 : id;
}

const char *tl_source_name(enum tl_source s)
{
	if ((unsigned)s >= TL_SRC_MAX)
		return "unknown";
	return source_names[s];
}

int tl_source_parse(const char *s, enum tl_source *ret)
{
	for (unsigned i = 0; s && i < TL_SRC_MAX; i++) {
		if (strcmp(s, source_names[i]) == 0) {
			*ret = (enum tl_source)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *tl_signal_result_name(uint32_t result)
{
	/* enum trace_signal_result (include/trace/events/signal.h) */
	static const char *const names[] = { "delivered", "ignored", "pending", "overflow_fail",
					     "lose_info" };

	return result < sizeof(names) / sizeof(names[0]) ? names[result] : "unknown";
}
