/* SPDX-License-Identifier: Apache-2.0 */
/* The store's lower units without a loop, a timer or a store: one
 * timeline's state and budget (state.c), the journal's frame bodies
 * (frames.c, each writer against its reader, and bodies cut at every byte)
 * and a whole state written as frames and replayed (replay.c). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "document.h"
#include "findings.h"
#include "findings-summary.h"
#include "frames.h"
#include "journal.h"
#include "replay.h"
#include "scenario.h"
#include "state.h"
#include "../check-run.h"

#define UID "aaaaaaaa-0000-4000-8000-0000000000aa"
#define T0 (1795000000LL * SCN_S)

struct admitted {
	struct state_hdr h;
	uint8_t payload[TL_PAYLOAD_MAX];
	struct state_change c;
};

/* scn_event(type, t) packed and admitted; the admission's return. */
static int admit(struct tl_state *s, const char *type, int64_t t, struct admitted *a)
{
	struct tl_event ev;
	int r;

	ck_assert_int_eq(scn_event(&ev, UID, type, t), 0);
	r = state_pack(s, &ev, &a->h, a->payload);
	if (r == 0)
		r = state_admit(s, &ev, &a->h, a->payload, &a->c);
	tl_event_clear(&ev);
	return r;
}

static enum state_outcome outcome(struct tl_state *s, const char *type, int64_t t)
{
	struct admitted a;

	ck_assert_int_eq(admit(s, type, t, &a), 0);
	return a.c.outcome;
}

/* An http.request at t with this status and gRPC status (-1: none), no
 * proxy flag, admitted; its outcome. */
static enum state_outcome admit_http(struct tl_state *s, int64_t t, int status, int grpc)
{
	struct tl_event ev;
	struct admitted a;

	ck_assert_int_eq(scn_event(&ev, UID, "http.request", t), 0);
	ck_assert_int_eq(tl_event_set_i(&ev, TL_F_HTTP_STATUS, status), 0);
	ck_assert_int_eq(tl_event_set_text(&ev, TL_F_HTTP_RESPONSE_FLAGS, "-"), 0);
	if (grpc >= 0)
		ck_assert_int_eq(tl_event_set_i(&ev, TL_F_HTTP_GRPC_STATUS, grpc), 0);
	ck_assert_int_eq(state_pack(s, &ev, &a.h, a.payload), 0);
	ck_assert_int_eq(state_admit(s, &ev, &a.h, a.payload, &a.c), 0);
	tl_event_clear(&ev);
	return a.c.outcome;
}

static const char *type_at(const struct tl_state *s, size_t i)
{
	static struct tl_event ev;
	const char *type;

	ck_assert_int_eq(state_event(s, i, &ev), 0);
	type = ev.type;
	tl_event_clear(&ev);
	return type;
}

static struct tl_pod_meta *meta(const char *ns, const char *name)
{
	struct tl_pod_meta *m = tl_pod_meta_new(1);

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(TL_POD_META_SET(m->ns, ns), 0);
	ck_assert_int_eq(TL_POD_META_SET(m->name, name), 0);
	ck_assert_int_eq(TL_POD_META_SET(m->uid, UID), 0);
	ck_assert_int_eq(TL_POD_META_SET(m->owner_kind, "ReplicaSet"), 0);
	ck_assert_int_eq(TL_POD_META_SET(m->owner_name, "web-1"), 0);
	m->grace_s = 30;
	m->n_containers = 1;
	ck_assert_int_eq(TL_POD_META_SET(m->containers[0].name, "app"), 0);
	ck_assert_int_eq(TL_POD_META_SET(m->containers[0].container_id, "containerd://0123abcd"), 0);
	m->containers[0].role = TL_ROLE_MAIN;
	return m;
}

/* ---- state ---- */

/* Kept in time order whatever the arrival order; an exact repeat (a
 * relist, a re-read log line) is reported and not kept again. */
START_TEST(test_admit_orders_and_reports_duplicates)
{
	struct tl_state s;
	struct admitted a;

	ck_assert_int_eq(state_init(&s, UID, 100, T0, T0), 0);
	ck_assert_int_eq(outcome(&s, "process.exec", T0 + 3 * SCN_S), STATE_KEPT);
	ck_assert_int_eq(outcome(&s, "pod.condition", T0 + 1 * SCN_S), STATE_KEPT);
	ck_assert_int_eq(outcome(&s, "process.exit", T0 + 2 * SCN_S), STATE_KEPT);
	ck_assert_int_eq(admit(&s, "process.exec", T0 + 3 * SCN_S, &a), 0);
	ck_assert_int_eq(a.c.outcome, STATE_DUPLICATE);
	ck_assert(!a.c.gone && !a.c.agg_made);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_str_eq(type_at(&s, 0), "pod.condition");
	ck_assert_str_eq(type_at(&s, 1), "process.exit");
	ck_assert_str_eq(type_at(&s, 2), "process.exec");
	ck_assert_int_eq(state_started(&s), T0 + SCN_S);
	ck_assert(state_complete(&s));
	state_release(&s);
}
END_TEST

/* Past max_events requests are folded per second and kernel lifecycle
 * events too, API lifecycle facts are kept up to twice the budget; the
 * admission says which entry each fold made or counted. */
START_TEST(test_admit_folds_past_the_budget)
{
	struct tl_state s;
	struct admitted a;

	ck_assert_int_eq(state_init(&s, UID, 4, T0, T0), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(outcome(&s, "http.request", T0 + i * 1000000), STATE_KEPT);
	ck_assert_int_eq(admit(&s, "http.request", T0 + 10 * 1000000, &a), 0);
	ck_assert_int_eq(a.c.outcome, STATE_FOLDED);
	ck_assert(a.c.agg_made);
	ck_assert_uint_eq(a.c.agg, 0);
	ck_assert_int_eq(admit(&s, "http.request", T0 + 11 * 1000000, &a), 0);
	ck_assert_int_eq(a.c.outcome, STATE_FOLDED);
	ck_assert(!a.c.agg_made);
	ck_assert_uint_eq(a.c.agg, 0);
	ck_assert_uint_eq(s.aggs[0].count, 2);
	ck_assert_uint_eq(s.aggs[0].failed, 2); /* scenario requests are 503s */
	ck_assert_int_eq(outcome(&s, "process.exec", T0 + 12 * 1000000), STATE_FOLDED);
	ck_assert_uint_eq(s.n_aggs, 2);
	/* an API fact is kept past the budget */
	ck_assert_int_eq(outcome(&s, "pod.condition", T0 + 13 * 1000000), STATE_KEPT);
	ck_assert_uint_eq(s.loss.aggregated, 3);
	ck_assert(!state_complete(&s));
	ck_assert_str_eq(type_at(&s, 1), "events.aggregated"); /* at its second's start */
	state_release(&s);
}
END_TEST

/* Requests folded past the budget count as failed by the findings' one
 * rule: a gRPC call with a non-OK status over HTTP 200 failed, an OK one
 * and a plain 200 did not, a 503 did. */
START_TEST(test_folded_failures_by_the_findings_rule)
{
	struct tl_state s;

	ck_assert_int_eq(state_init(&s, UID, 1, T0, T0), 0);
	ck_assert_int_eq(admit_http(&s, T0, 200, -1), STATE_KEPT);
	ck_assert_int_eq(admit_http(&s, T0 + 1000000, 200, 14), STATE_FOLDED);
	ck_assert_int_eq(admit_http(&s, T0 + 2000000, 200, 0), STATE_FOLDED);
	ck_assert_int_eq(admit_http(&s, T0 + 3000000, 200, -1), STATE_FOLDED);
	ck_assert_int_eq(admit_http(&s, T0 + 4000000, 503, -1), STATE_FOLDED);
	ck_assert_uint_eq(s.n_aggs, 1);
	ck_assert_uint_eq(s.aggs[0].count, 4);
	ck_assert_uint_eq(s.aggs[0].failed, 2);
	state_release(&s);
}
END_TEST

/* A new entry past the 32 recent ones retires the oldest: the admission
 * names it, so its last counts can be journaled. */
START_TEST(test_admit_reports_retired_entry)
{
	struct tl_state s;
	struct admitted a;

	ck_assert_int_eq(state_init(&s, UID, 100, T0, T0), 0);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(outcome(&s, "http.request", T0 + i), STATE_KEPT);
	for (int i = 1; i <= STATE_AGG_RECENT; i++) {
		ck_assert_int_eq(admit(&s, "http.request", T0 + i * SCN_S, &a), 0);
		ck_assert(a.c.agg_made);
		ck_assert(!a.c.agg_retired);
	}
	ck_assert_int_eq(admit(&s, "http.request", T0 + 40 * SCN_S, &a), 0);
	ck_assert(a.c.agg_made);
	ck_assert(a.c.agg_retired);
	ck_assert_uint_eq(a.c.retired, 0);
	ck_assert_uint_eq(s.n, 100 + STATE_AGG_RECENT + 1);
	ck_assert_uint_eq(a.c.agg, STATE_AGG_RECENT);
	state_release(&s);
}
END_TEST

/* Termination starts a budget of its own, and pod.deleted (past every
 * limit) says the Pod is gone, once. */
START_TEST(test_admit_termination_and_gone)
{
	struct tl_state s;
	struct admitted a;

	ck_assert_int_eq(state_init(&s, UID, 2, T0, T0), 0);
	ck_assert_int_eq(outcome(&s, "http.request", T0), STATE_KEPT);
	ck_assert_int_eq(outcome(&s, "http.request", T0 + 1), STATE_KEPT);
	ck_assert_int_eq(outcome(&s, "http.request", T0 + 2), STATE_FOLDED);
	ck_assert(!s.terminating);
	ck_assert_int_eq(outcome(&s, "process.signal", T0 + SCN_S), STATE_KEPT);
	ck_assert(s.terminating);
	ck_assert_uint_eq(s.n_at_termination, 3); /* two records and one entry */
	ck_assert_int_eq(outcome(&s, "http.request", T0 + 2 * SCN_S), STATE_KEPT);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(outcome(&s, "http.request", T0 + 3 * SCN_S + i), STATE_FOLDED);
	ck_assert_int_eq(admit(&s, "pod.deleted", T0 + 5 * SCN_S, &a), 0);
	ck_assert_int_eq(a.c.outcome, STATE_KEPT);
	ck_assert(a.c.gone);
	ck_assert(s.gone);
	ck_assert_int_eq(s.gone_ns, T0 + 5 * SCN_S);
	ck_assert(!state_set_gone(&s, T0 + 6 * SCN_S));
	ck_assert_int_eq(s.gone_ns, T0 + 5 * SCN_S);
	state_release(&s);
}
END_TEST

/* Without metadata (--no-api) the removal of the Pod's cgroups says it is
 * gone; with it, only pod.deleted does. */
START_TEST(test_cgroups_removed_ends_only_without_meta)
{
	struct tl_state s;
	struct tl_pod_meta *m = meta("shop", "web");
	struct admitted a;

	ck_assert_int_eq(state_init(&s, UID, 100, T0, T0), 0);
	ck_assert(state_set_meta(&s, m));
	ck_assert(!state_set_meta(&s, m)); /* the same facts: no change */
	ck_assert_int_eq(admit(&s, "pod.cgroups_removed", T0, &a), 0);
	ck_assert_int_eq(a.c.outcome, STATE_KEPT);
	ck_assert(!a.c.gone);
	state_release(&s);

	ck_assert_int_eq(state_init(&s, UID, 100, T0, T0), 0);
	ck_assert_int_eq(admit(&s, "pod.cgroups_removed", T0, &a), 0);
	ck_assert(a.c.gone);
	state_release(&s);
	tl_pod_meta_unref(m);
}
END_TEST

/* A snapshot shares the record arena: the original goes on growing
 * (its arena moves to a copy) and the snapshot still reads its events. */
START_TEST(test_snapshot_is_stable)
{
	struct tl_state s, snap;

	ck_assert_int_eq(state_init(&s, UID, 100000, T0, T0), 0);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(outcome(&s, "process.exec", T0 + i), STATE_KEPT);
	ck_assert_int_eq(state_copy(&s, &snap), 0);
	ck_assert_ptr_eq(snap.arena, s.arena);
	for (int i = 100; i < 5000; i++)
		ck_assert_int_eq(outcome(&s, "http.request", T0 + i), STATE_KEPT);
	ck_assert_ptr_ne(snap.arena, s.arena);
	ck_assert_uint_eq(snap.n, 100);
	for (size_t i = 0; i < snap.n; i++)
		ck_assert_str_eq(type_at(&snap, i), "process.exec");
	ck_assert_str_eq(type_at(&s, 4999), "http.request");
	state_release(&snap);
	state_release(&s);
}
END_TEST

/* ---- frames ---- */

static void decode_ok(const void *body, size_t len, struct frame_rec *r)
{
	ck_assert_int_eq(frame_decode(body, len, UID, r), 0);
}

/* Every fixed-size writer against its reader. */
START_TEST(test_frames_round_trip)
{
	struct tl_state s;
	struct state_agg agg = { .bucket_ns = T0, .interval_ms = 1500, .count = 7, .failed = 2,
				 .ctr = 3, .source = TL_SRC_LOG, .kind = TL_KIND_HTTP_REQUEST };
	struct state_ctr ctr = { .id_s = 5, .name_s = UINT32_MAX, .cgroup_id = 4242 };
	struct state_loss loss = { .kernel = 1, .aggregated = 2, .dropped = 3, .disk = 4,
				   .restarts = 5, .unreadable = 6 };
	struct state_gap gap = { T0 - SCN_S, T0 };
	struct admitted a;
	struct frame_rec r;
	struct frame f;

	frame_open(&f, T0, T0 - 5);
	decode_ok(f.b, f.n, &r);
	ck_assert_int_eq(r.type, FRAME_OPEN);
	ck_assert_int_eq(r.open.opened_ns, T0);
	ck_assert_int_eq(r.open.recording_since_ns, T0 - 5);

	frame_ctr(&f, &ctr);
	decode_ok(f.b, f.n, &r);
	ck_assert_uint_eq(r.ctr.id_s, 5);
	ck_assert_uint_eq(r.ctr.name_s, UINT32_MAX);
	ck_assert_uint_eq(r.ctr.cgroup_id, 4242);

	frame_agg(&f, &agg);
	decode_ok(f.b, f.n, &r);
	ck_assert_int_eq(r.type, FRAME_AGG);
	ck_assert_int_eq(r.agg.bucket_ns, agg.bucket_ns);
	ck_assert_int_eq(r.agg.interval_ms, agg.interval_ms);
	ck_assert_uint_eq(r.agg.count, agg.count);
	ck_assert_uint_eq(r.agg.failed, agg.failed);
	ck_assert_uint_eq(r.agg.ctr, agg.ctr);
	ck_assert_uint_eq(r.agg.source, agg.source);
	ck_assert_uint_eq(r.agg.kind, agg.kind);

	frame_agg_set(&f, 9, &agg);
	decode_ok(f.b, f.n, &r);
	ck_assert_uint_eq(r.agg_set.index, 9);
	ck_assert_uint_eq(r.agg_set.count, 7);
	ck_assert_uint_eq(r.agg_set.failed, 2);
	ck_assert_int_eq(r.agg_set.interval_ms, 1500);

	frame_loss(&f, &loss);
	decode_ok(f.b, f.n, &r);
	ck_assert_mem_eq(&r.loss, &loss, sizeof(loss));

	frame_gone(&f, T0 + 7, 0);
	decode_ok(f.b, f.n, &r);
	ck_assert_int_eq(r.gone_ns, T0 + 7);
	ck_assert_uint_eq(r.reason, STATE_CLOSE_NONE);
	/* with a close reason: one byte more; a reader before it (time only)
	 * reads the same time */
	frame_gone(&f, T0 + 7, STATE_CLOSE_IDLE);
	decode_ok(f.b, f.n, &r);
	ck_assert_int_eq(r.gone_ns, T0 + 7);
	ck_assert_uint_eq(r.reason, STATE_CLOSE_IDLE);

	frame_gap(&f, &gap);
	decode_ok(f.b, f.n, &r);
	ck_assert_int_eq(r.gap.from_ns, gap.from_ns);
	ck_assert_int_eq(r.gap.to_ns, gap.to_ns);

	ck_assert_int_eq(state_init(&s, UID, 100, T0, T0), 0);
	ck_assert_int_eq(admit(&s, "tcp.reset_sent", T0 + 9, &a), 0);
	frame_event(&f, false, T0 + 9, &a.h, a.payload);
	decode_ok(f.b, f.n, &r);
	ck_assert_int_eq(r.type, FRAME_EVENT);
	ck_assert_int_eq(r.event.time_ns, T0 + 9);
	ck_assert_mem_eq(&r.event.h, &a.h, sizeof(a.h));
	ck_assert_mem_eq(r.event.payload, a.payload, a.h.len);
	frame_event(&f, true, T0 + 9, &a.h, a.payload);
	decode_ok(f.b, f.n, &r);
	ck_assert_int_eq(r.type, FRAME_RAW);

	s.terminating = true;
	s.n_at_termination = 1;
	ck_assert(state_set_gone(&s, T0 + 11));
	frame_term(&f, &s);
	decode_ok(f.b, f.n, &r);
	ck_assert(r.term.terminating && r.term.gone);
	ck_assert_uint_eq(r.term.at, 1);
	ck_assert_int_eq(r.term.gone_ns, T0 + 11);
	ck_assert_uint_eq(r.reason, STATE_CLOSE_NONE);
	ck_assert(state_set_close_reason(&s, STATE_CLOSE_OPEN_LIMIT));
	ck_assert(!state_set_close_reason(&s, STATE_CLOSE_IDLE)); /* the first one stays */
	ck_assert(!state_set_close_reason(&s, STATE_CLOSE_REASON_MAX));
	frame_term(&f, &s);
	decode_ok(f.b, f.n, &r);
	ck_assert_int_eq(r.term.gone_ns, T0 + 11);
	ck_assert_uint_eq(r.reason, STATE_CLOSE_OPEN_LIMIT);
	ck_assert_str_eq(state_close_reason_name(r.reason), "openLimit");
	ck_assert_ptr_null(state_close_reason_name(STATE_CLOSE_NONE));
	state_release(&s);
}
END_TEST

/* The metadata frame is typed: every field, the containers and the
 * open-ended pod.istio object come back equal; cut at any byte it is
 * refused; the JSON text agents before it wrote is still read. */
START_TEST(test_frame_meta_round_trip)
{
	struct tl_pod_meta *m = meta("shop", "web");
	struct frame_rec r;
	struct tl_buf b;
	struct json_object *o;

	m->istio = json_tokener_parse("{\"terminationDrainDuration\":\"5s\",\"annotations\":{\"a\":\"b\"}}");
	ck_assert_ptr_nonnull(m->istio);
	m->containers_dropped = 3;
	m->containers[0].cgroup_id = 4242;
	m->containers[0].prestop = TL_PRESTOP_SLEEP;
	tl_buf_init(&b, 0);
	ck_assert_int_eq(frame_meta(&b, m), 0);
	ck_assert_uint_eq((uint8_t)b.p[1], FRAME_META_TYPED);
	ck_assert_int_eq(frame_decode((const uint8_t *)b.p, b.len, UID, &r), 0);
	ck_assert_int_eq(r.type, FRAME_META);
	ck_assert(tl_pod_meta_equal(r.meta, m));
	ck_assert_uint_eq(r.meta->cap_containers, 1);
	frame_rec_clear(&r);
	for (size_t cut = 0; cut < b.len; cut++) {
		ck_assert_int_ne(frame_decode((const uint8_t *)b.p, cut, UID, &r), 0);
		frame_rec_clear(&r);
	}

	/* the previous form: 'M' and tl_pod_meta_to_json()'s text */
	tl_buf_reset(&b);
	o = tl_pod_meta_to_json(m);
	tl_buf_addc(&b, 'M');
	tl_buf_adds(&b, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	ck_assert_int_eq(frame_decode((const uint8_t *)b.p, b.len, UID, &r), 0);
	ck_assert(tl_pod_meta_equal(r.meta, m));
	frame_rec_clear(&r);
	tl_buf_free(&b);
	tl_pod_meta_unref(m);
}
END_TEST

/* A typed metadata frame that says more containers than a Pod may have
 * (a damaged journal): the table's bound is kept, the rest counted. */
START_TEST(test_frame_meta_bounds)
{
	struct tl_pod_meta *m = tl_pod_meta_new(TL_POD_CONTAINERS_MAX);
	struct frame_rec r;
	struct tl_buf b;

	ck_assert_ptr_nonnull(m);
	m->n_containers = TL_POD_CONTAINERS_MAX;
	for (uint32_t i = 0; i < m->n_containers; i++)
		snprintf(m->containers[i].name, sizeof(m->containers[i].name), "c%u", i);
	tl_buf_init(&b, 0);
	ck_assert_int_eq(frame_meta(&b, m), 0);
	/* the count (a varint of 2 bytes for 256) patched to 300 */
	{
		size_t at = 0;
		uint8_t want[2] = { 0x80 | (256 & 0x7f), 256 >> 7 };

		for (size_t i = 2; i + 1 < b.len; i++)
			if ((uint8_t)b.p[i] == want[0] && (uint8_t)b.p[i + 1] == want[1] &&
			    (uint8_t)b.p[i + 2] == 2) /* then "c0": length 2 */
				at = i;
		ck_assert_uint_gt(at, 0);
		b.p[at] = (char)(0x80 | (300 & 0x7f));
		b.p[at + 1] = (char)(300 >> 7);
		for (int i = 256; i < 300; i++) {
			tl_buf_adds(&b, "\x02zz");
			tl_buf_addc(&b, 0);
			tl_buf_addc(&b, 0);
			tl_buf_addc(&b, 0);
			tl_buf_addc(&b, 0);
		}
	}
	ck_assert_int_eq(frame_decode((const uint8_t *)b.p, b.len, UID, &r), 0);
	ck_assert_uint_eq(r.meta->n_containers, TL_POD_CONTAINERS_MAX);
	ck_assert_uint_eq(r.meta->containers_dropped, 300 - TL_POD_CONTAINERS_MAX);
	ck_assert_str_eq(r.meta->uid, UID); /* none in the frame: the journal's */
	frame_rec_clear(&r);
	tl_buf_free(&b);
	tl_pod_meta_unref(m);
}
END_TEST

/* A body cut at any byte is refused or read as something shorter (the
 * decoder never reads past the body: checked under ASan/valgrind), and
 * bodies of unknown types or impossible values are refused. */
START_TEST(test_frames_cut_and_damaged)
{
	struct state_agg agg = { .bucket_ns = T0, .interval_ms = 1000, .count = 1, .failed = 0,
				 .ctr = STATE_NO_CTR, .source = TL_SRC_KERNEL,
				 .kind = TL_KIND_PROCESS_EXEC };
	struct state_loss loss = { 1, 2, 3, 4, 5, 6 };
	struct tl_state s;
	struct admitted a;
	struct frame fs[6], bad;
	struct frame_rec r;
	int refused = 0;

	ck_assert_int_eq(state_init(&s, UID, 100, T0, T0), 0);
	ck_assert_int_eq(admit(&s, "process.signal", T0, &a), 0);
	frame_open(&fs[0], T0, T0);
	frame_agg(&fs[1], &agg);
	frame_loss(&fs[2], &loss);
	frame_event(&fs[3], false, T0, &a.h, a.payload);
	frame_term(&fs[4], &s);
	frame_agg_set(&fs[5], 1, &agg);
	for (size_t k = 0; k < sizeof(fs) / sizeof(fs[0]); k++) {
		for (size_t cut = 0; cut < fs[k].n; cut++) {
			uint8_t *copy = malloc(cut ? cut : 1);

			memcpy(copy, fs[k].b, cut);
			if (frame_decode(copy, cut, UID, &r) < 0)
				refused++;
			frame_rec_clear(&r);
			free(copy);
		}
	}
	/* the fixed-size types all need their last field */
	ck_assert_int_ge(refused, (int)(fs[0].n + fs[1].n + fs[2].n + fs[4].n + fs[5].n));

	a.h.kind = TL_KIND_EVENTS_AGGREGATED; /* made by the store, never journaled */
	frame_event(&bad, false, T0, &a.h, a.payload);
	ck_assert_int_eq(frame_decode(bad.b, bad.n, UID, &r), -EINVAL);
	a.h.kind = 0;
	frame_event(&bad, false, T0, &a.h, a.payload);
	ck_assert_int_eq(frame_decode(bad.b, bad.n, UID, &r), -EINVAL);
	ck_assert_int_eq(frame_decode((const uint8_t *)"Z", 1, UID, &r), -EINVAL);
	ck_assert_int_eq(frame_decode(NULL, 0, UID, &r), -EINVAL);
	frame_agg_set(&bad, 0, &(struct state_agg){ .count = 1, .failed = 2 });
	ck_assert_int_eq(frame_decode(bad.b, bad.n, UID, &r), -EINVAL); /* failed > count */
	agg.kind = TL_KIND_MAX;
	frame_agg(&bad, &agg);
	ck_assert_int_eq(frame_decode(bad.b, bad.n, UID, &r), -EINVAL);
	ck_assert_int_eq(frame_decode((const uint8_t *)"M{", 2, UID, &r), -EINVAL);
	state_release(&s);
}
END_TEST

/* ---- a state written as frames and replayed ---- */

static char *doc_of(const struct tl_state *s)
{
	static char *probes[] = { "p" };
	struct doc_recorder rec = { "v", "node-1", "6.1", "sha", probes, 1 };
	struct doc_cursor cur = { 0 };
	struct tl_buf b;

	tl_buf_init(&b, 0);
	ck_assert_int_eq(doc_write(s, &rec, &cur, &b, 0), 0);
	return tl_buf_steal(&b, NULL);
}

/* frame_state() is what compaction writes: replayed, it gives the same
 * document, aggregates, budget, gaps, loss and metadata included. */
START_TEST(test_state_frames_replay_to_the_same_document)
{
	static const char *const kinds[] = { "process.exec", "http.request", "process.signal",
					     "tcp.reset_sent", "pod.condition", "endpoint.condition" };
	char *dir = scn_tmpdir(), path[PATH_MAX], *a, *b;
	struct tl_pod_meta *m = meta("shop", "web");
	struct tl_state s, back;
	struct tl_buf frames;
	uint64_t bad = 7;
	int fd;

	ck_assert_ptr_nonnull(dir);
	ck_assert_int_eq(state_init(&s, UID, 20, T0, T0 - SCN_S), 0);
	ck_assert(state_set_meta(&s, m));
	for (int i = 0; i < 200; i++)
		outcome(&s, kinds[i % 6], T0 + (int64_t)i * (SCN_S / 7));
	ck_assert_int_eq(state_add_gap(&s, T0 - 10 * SCN_S, T0 - 5 * SCN_S), 0);
	outcome(&s, "pod.deleted", T0 + 100 * SCN_S);
	s.loss.kernel = 3;
	ck_assert_uint_gt(s.n_aggs, 0);

	tl_buf_init(&frames, 0);
	ck_assert_int_eq(frame_state(&s, &frames), 0);
	ck_assert_int_lt(snprintf(path, sizeof(path), "%s/%s%s", dir, UID, TL_JOURNAL_EXT),
			 (int)sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, frames.p, frames.len), (ssize_t)frames.len);
	close(fd);
	tl_buf_free(&frames);

	ck_assert_int_eq(state_init(&back, UID, 20, 0, 0), 0);
	ck_assert_int_eq(replay_journal(dir, UID, false, &back, &bad), 0);
	ck_assert_uint_eq(bad, 0);
	a = doc_of(&s);
	b = doc_of(&back);
	ck_assert_str_eq(b, a);
	ck_assert(back.gone && back.terminating);
	ck_assert_int_eq(back.gone_ns, s.gone_ns);
	ck_assert_uint_eq(back.n_at_termination, s.n_at_termination);
	ck_assert_uint_eq(back.n_aggs, s.n_aggs);
	free(a);
	free(b);
	state_release(&back);
	state_release(&s);
	tl_pod_meta_unref(m);
	scn_rm_rf(dir);
	free(dir);
}
END_TEST

/* ---- the findings' summary, as termline-findings hands it over ---- */

/* The record round-trips (version 2: flags, the removal lag, the
 * unexplained and each rule's explained requests too); one cut at any
 * byte, grown by one, or of another magic or version is refused whole; a
 * version 1 record (an older termline-findings) still reads, without
 * what it does not carry. */
START_TEST(test_findings_summary_record)
{
	struct tl_findings_summary s = { .findings = 3, .failed_requests = 1ull << 40, .n_rules = 8,
					 .flags = TL_FS_TERMINATED | TL_FS_SIGKILL | TL_FS_LAG |
						  TL_FS_EXPLAINED,
					 .removal_lag_ns = -1480000000, .unexplained = 5 },
				   back;
	uint8_t buf[TL_FINDINGS_SUMMARY_MAX + 1], v1[20 + 2 * 12];
	size_t n;

	s.rule[0].findings = 2;
	s.rule[0].failed_requests = 7;
	s.rule[0].explained = 6;
	s.rule[7].findings = 1;
	s.rule[7].failed_requests = 1ull << 33;
	s.rule[7].explained = (1ull << 33) - 1;
	n = tl_findings_summary_encode(&s, buf);
	ck_assert_uint_eq(n, 40 + 8 * 20);
	ck_assert_uint_eq(buf[4] | buf[5] << 8, 2);
	ck_assert_int_eq(tl_findings_summary_decode(buf, n, &back), 0);
	ck_assert_uint_eq(back.findings, 3);
	ck_assert_uint_eq(back.failed_requests, 1ull << 40);
	ck_assert_uint_eq(back.n_rules, 8);
	ck_assert_uint_eq(back.flags, TL_FS_TERMINATED | TL_FS_SIGKILL | TL_FS_LAG | TL_FS_EXPLAINED);
	ck_assert_int_eq(back.removal_lag_ns, -1480000000);
	ck_assert_uint_eq(back.unexplained, 5);
	ck_assert_uint_eq(back.rule[0].findings, 2);
	ck_assert_uint_eq(back.rule[0].failed_requests, 7);
	ck_assert_uint_eq(back.rule[0].explained, 6);
	ck_assert_uint_eq(back.rule[3].findings, 0);
	ck_assert_uint_eq(back.rule[3].explained, 0);
	ck_assert_uint_eq(back.rule[7].findings, 1);
	ck_assert_uint_eq(back.rule[7].failed_requests, 1ull << 33);
	ck_assert_uint_eq(back.rule[7].explained, (1ull << 33) - 1);
	for (size_t cut = 0; cut < n; cut++)
		ck_assert_int_eq(tl_findings_summary_decode(buf, cut, &back), -EBADMSG);
	buf[n] = 0;
	ck_assert_int_eq(tl_findings_summary_decode(buf, n + 1, &back), -EBADMSG);
	buf[4] = 3;
	ck_assert_int_eq(tl_findings_summary_decode(buf, n, &back), -EBADMSG);
	/* a version 2 record's length read as version 1 is no record */
	buf[4] = 1;
	ck_assert_int_eq(tl_findings_summary_decode(buf, n, &back), -EBADMSG);
	buf[4] = 2;
	buf[0] = 'X';
	ck_assert_int_eq(tl_findings_summary_decode(buf, n, &back), -EBADMSG);

	/* version 1: "TLFS", 1, n_rules 2, findings 4, failed 9; per rule
	 * findings and failed requests */
	memset(v1, 0, sizeof(v1));
	memcpy(v1, "TLFS", 4);
	v1[4] = 1;
	v1[6] = 2;
	v1[8] = 4;
	v1[12] = 9;
	v1[20] = 1;  /* rule 0: 1 finding */
	v1[24] = 9;  /* 9 failed requests */
	v1[32] = 3;  /* rule 1: 3 findings */
	v1[36] = 2;  /* 2 failed requests */
	memset(&back, 0xff, sizeof(back));
	ck_assert_int_eq(tl_findings_summary_decode(v1, sizeof(v1), &back), 0);
	ck_assert_uint_eq(back.findings, 4);
	ck_assert_uint_eq(back.failed_requests, 9);
	ck_assert_uint_eq(back.n_rules, 2);
	ck_assert_uint_eq(back.flags, 0); /* not TL_FS_EXPLAINED: the metrics count under rule="none" */
	ck_assert_int_eq(back.removal_lag_ns, 0);
	ck_assert_uint_eq(back.unexplained, 0);
	ck_assert_uint_eq(back.rule[0].findings, 1);
	ck_assert_uint_eq(back.rule[0].failed_requests, 9);
	ck_assert_uint_eq(back.rule[0].explained, 0);
	ck_assert_uint_eq(back.rule[1].findings, 3);
	ck_assert_uint_eq(back.rule[1].failed_requests, 2);
	ck_assert_int_eq(tl_findings_summary_decode(v1, sizeof(v1) - 1, &back), -EBADMSG);
}
END_TEST

/* The summary of a document's findings: per rule, the findings and the
 * failed requests they count; the document's failed requests by the one
 * rule (a request on its socket and in the log counts once). */
START_TEST(test_findings_summary_of_document)
{
	const char *doc_text =
		"{\"events\":["
		"{\"time\":\"2026-11-19T10:00:00Z\",\"source\":\"kernel\",\"type\":\"http.request\","
		"\"container\":\"app\",\"requestId\":\"r1\",\"method\":\"GET\",\"path\":\"/\","
		"\"status\":503,\"start\":\"2026-11-19T10:00:00Z\",\"durationMs\":1,"
		"\"direction\":\"inbound\"},"
		"{\"time\":\"2026-11-19T10:00:00.5Z\",\"source\":\"log\",\"type\":\"http.request\","
		"\"container\":\"istio-proxy\",\"requestId\":\"r1\",\"method\":\"GET\",\"path\":\"/\","
		"\"status\":503,\"start\":\"2026-11-19T10:00:00Z\",\"durationMs\":1,"
		"\"direction\":\"inbound\"},"
		"{\"time\":\"2026-11-19T10:00:01Z\",\"source\":\"kernel\",\"type\":\"http.request\","
		"\"container\":\"app\",\"requestId\":\"r2\",\"method\":\"GET\",\"path\":\"/\","
		"\"status\":200,\"start\":\"2026-11-19T10:00:01Z\",\"durationMs\":1,"
		"\"direction\":\"inbound\"}],"
		"\"complete\":true}";
	struct json_object *doc = json_tokener_parse(doc_text), *findings;
	struct tl_findings_summary s;
	struct tl_model m;
	uint64_t failed = 99;

	ck_assert_ptr_nonnull(doc);
	ck_assert_int_eq(tl_findings_failed_requests(doc, &failed), 0);
	ck_assert_uint_eq(failed, 1);
	findings = json_tokener_parse(
		"[{\"rule\":\"resets_during_drain\",\"numbers\":{\"failedRequests\":4}},"
		"{\"rule\":\"resets_during_drain\",\"numbers\":{\"failedRequests\":2}},"
		"{\"rule\":\"sigterm_ignored\",\"numbers\":{}},{\"rule\":\"no_such_rule\"}]");
	ck_assert_ptr_nonnull(findings);
	ck_assert_int_eq(tl_model_build(doc, &m), 0);
	ck_assert_int_eq(tl_findings_summarize(findings, &m, &s), 0);
	tl_model_done(&m);
	ck_assert_uint_eq(s.findings, 4);
	ck_assert_uint_eq(s.failed_requests, 1);
	for (unsigned i = 0; i < s.n_rules; i++) {
		if (strcmp(TL_FINDING_RULES[i], "resets_during_drain") == 0) {
			ck_assert_uint_eq(s.rule[i].findings, 2);
			ck_assert_uint_eq(s.rule[i].failed_requests, 6);
		} else if (strcmp(TL_FINDING_RULES[i], "sigterm_ignored") == 0) {
			ck_assert_uint_eq(s.rule[i].findings, 1);
			ck_assert_uint_eq(s.rule[i].failed_requests, 0);
		} else {
			ck_assert_uint_eq(s.rule[i].findings, 0);
		}
	}
	json_object_put(findings);
	json_object_put(doc);
}
END_TEST

static Suite *state_suite(void)
{
	Suite *s = suite_create("store-state");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_admit_orders_and_reports_duplicates);
	tcase_add_test(tc, test_admit_folds_past_the_budget);
	tcase_add_test(tc, test_folded_failures_by_the_findings_rule);
	tcase_add_test(tc, test_admit_reports_retired_entry);
	tcase_add_test(tc, test_admit_termination_and_gone);
	tcase_add_test(tc, test_cgroups_removed_ends_only_without_meta);
	tcase_add_test(tc, test_snapshot_is_stable);
	tcase_add_test(tc, test_frames_round_trip);
	tcase_add_test(tc, test_frame_meta_round_trip);
	tcase_add_test(tc, test_frame_meta_bounds);
	tcase_add_test(tc, test_frames_cut_and_damaged);
	tcase_add_test(tc, test_state_frames_replay_to_the_same_document);
	suite_add_tcase(s, tc);
	tc = tcase_create("findings-summary");
	tcase_add_test(tc, test_findings_summary_record);
	tcase_add_test(tc, test_findings_summary_of_document);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(state_suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
