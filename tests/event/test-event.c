/* SPDX-License-Identifier: Apache-2.0 */
/* The kind table, typed events, the one JSON encoder, the decoder and the
 * compact form: every kind round-trips JSON -> event -> packed -> event ->
 * JSON unchanged. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "event.h"
#include "strtab.h"
#include "tl-buf.h"
#include "../check-run.h"

/* One event of every kind, in the contract's JSON, every field set. */
static const char *const samples[] = {
	"{\"time\":\"2026-11-29T21:14:14.000000001Z\",\"source\":\"api\",\"type\":\"pod.deletion_requested\",\"container\":null,\"gracePeriodSeconds\":30,\"deletionTimestamp\":\"2026-11-29T21:14:44Z\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000002Z\",\"source\":\"api\",\"type\":\"pod.condition\",\"container\":null,\"condition\":\"Ready\",\"status\":\"False\",\"reason\":\"PodCompleted\",\"lastTransitionTime\":\"2026-11-29T21:14:14Z\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000003Z\",\"source\":\"api\",\"type\":\"container.terminated\",\"container\":\"app\",\"exitCode\":143,\"reason\":\"Error\",\"signal\":15,\"startedAt\":\"2026-11-29T21:00:00Z\",\"finishedAt\":\"2026-11-29T21:14:14Z\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000004Z\",\"source\":\"api\",\"type\":\"pod.deleted\",\"container\":null,\"observedBy\":\"watch\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000005Z\",\"source\":\"api\",\"type\":\"endpoint.condition\",\"container\":null,\"service\":\"web\",\"endpointSlice\":\"web-abcde\",\"ready\":false,\"serving\":true,\"terminating\":true,\"address\":\"10.1.2.3\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000006Z\",\"source\":\"api\",\"type\":\"endpoint.removed\",\"container\":null,\"service\":\"web\",\"endpointSlice\":\"web-abcde\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000007Z\",\"source\":\"kernel\",\"type\":\"process.signal\",\"container\":\"app\",\"signal\":\"SIGTERM\",\"signo\":15,\"pid\":4711,\"comm\":\"nginx\",\"senderPid\":1,\"senderComm\":\"containerd-shim\",\"result\":\"ignored\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000008Z\",\"source\":\"kernel\",\"type\":\"process.signal_delivered\",\"container\":\"app\",\"signal\":\"SIGRTMIN+3\",\"signo\":35,\"pid\":4711,\"comm\":\"nginx\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000009Z\",\"source\":\"kernel\",\"type\":\"process.exec\",\"container\":\"app\",\"pid\":4712,\"comm\":\"sh\",\"filename\":\"/bin/sh \\\"q\\\" \\\\ \\u0001 caf\\u00e9\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000010Z\",\"source\":\"kernel\",\"type\":\"process.exit\",\"container\":\"app\",\"pid\":4712,\"comm\":\"sh\",\"exitCode\":1,\"exitSignal\":0}",
	"{\"time\":\"2026-11-29T21:14:14.000000011Z\",\"source\":\"kernel\",\"type\":\"socket.listen\",\"container\":\"app\",\"address\":\"0.0.0.0\",\"port\":8080}",
	"{\"time\":\"2026-11-29T21:14:14.000000012Z\",\"source\":\"kernel\",\"type\":\"socket.listen_closed\",\"container\":\"app\",\"address\":\"::\",\"port\":8080}",
	"{\"time\":\"2026-11-29T21:14:14.000000013Z\",\"source\":\"kernel\",\"type\":\"tcp.reset_sent\",\"container\":\"app\",\"local\":\"10.1.2.3:8080\",\"remote\":\"10.1.9.9:41234\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000014Z\",\"source\":\"kernel\",\"type\":\"tcp.reset_received\",\"container\":null,\"local\":\"[fd00::5]:80\",\"remote\":\"[fd00::6]:5555\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000015Z\",\"source\":\"kernel\",\"type\":\"pod.cgroups_removed\",\"container\":null,\"cgroup\":\"/kubepods.slice/x\"}",
	"{\"time\":\"2026-11-29T21:14:14.000000016Z\",\"source\":\"log\",\"type\":\"http.request\",\"container\":\"istio-proxy\",\"requestId\":\"r-1\",\"method\":\"GET\",\"path\":\"/healthz?x=1\",\"status\":503,\"start\":\"2026-11-29T21:14:13.900000000Z\",\"durationMs\":100,\"direction\":\"inbound\",\"responseFlags\":\"UC\",\"error\":\"reset\",\"alsoSeenBy\":\"kernel\",\"preRoll\":true,\"peer\":\"10.1.2.3:51234\",\"connStart\":\"2026-11-29T21:14:12.000000001Z\",\"conn\":7,\"connClose\":true,\"protocol\":\"h2\",\"streamId\":5,\"grpcStatus\":14,\"grpcMessage\":\"Socket closed\",\"responseUnknown\":false,\"afterGoaway\":true}",
	"{\"time\":\"2026-11-29T21:14:14.000000017Z\",\"source\":\"kernel\",\"type\":\"events.aggregated\",\"container\":\"app\",\"aggregatedType\":\"process.exec\",\"intervalMs\":1000,\"count\":7,\"failed\":0}",
	"{\"time\":\"2026-11-29T21:14:14.000000018Z\",\"source\":\"api\",\"type\":\"drain.wait_started\",\"container\":null,\"quietMs\":1000,\"timeoutMs\":20000}",
	"{\"time\":\"2026-11-29T21:14:17.000000019Z\",\"source\":\"api\",\"type\":\"drain.wait_ended\",\"container\":null,\"outcome\":\"drained\",\"heldBy\":\"traffic\",\"heldMs\":2999,\"connections\":12,\"requests\":0,\"outOfRotation\":\"2026-11-29T21:14:14.100000000Z\",\"lastTraffic\":\"2026-11-29T21:14:16.000000000Z\"}",
	"{\"time\":\"2026-11-29T21:14:17.000000020Z\",\"source\":\"kernel\",\"type\":\"http.capture\",\"container\":null,\"state\":\"on\",\"window\":\"termination\"}",
	"{\"time\":\"2026-11-29T21:14:17.000000021Z\",\"source\":\"kernel\",\"type\":\"http.summary\",\"container\":\"app\",\"intervalMs\":1000,\"count\":250,\"failed\":3,\"direction\":\"inbound\"}",
	"{\"time\":\"2026-11-29T21:14:17.000000022Z\",\"source\":\"kernel\",\"type\":\"tcp.accepted\",\"container\":\"istio-proxy\",\"peer\":\"[fd00::7]:51234\",\"port\":15006,\"count\":3,\"last\":\"2026-11-29T21:14:17.900000000Z\"}",
	"{\"time\":\"2026-11-29T21:14:17.000000023Z\",\"source\":\"kernel\",\"type\":\"http2.goaway\",\"container\":\"app\",\"direction\":\"sent\",\"lastStreamId\":13,\"errorCode\":0,\"errorName\":\"NO_ERROR\",\"peer\":\"127.0.0.1:41234\",\"conn\":3,\"connStart\":\"2026-11-29T21:14:10.000000000Z\",\"debug\":\"graceful_stop\",\"payloadLost\":false,\"connDirection\":\"inbound\"}",
	"{\"time\":\"2026-11-29T21:14:17.000000024Z\",\"source\":\"kernel\",\"type\":\"http2.rst_stream\",\"container\":\"app\",\"direction\":\"sent\",\"streamId\":7,\"errorCode\":8,\"errorName\":\"CANCEL\",\"peer\":\"127.0.0.1:41234\",\"conn\":3,\"requestId\":\"r-7\",\"path\":\"/e2e.Slow/Call\",\"payloadLost\":false,\"connDirection\":\"inbound\"}",
	"{\"time\":\"2026-11-29T21:14:17.000000025Z\",\"source\":\"kernel\",\"type\":\"http2.connection\",\"container\":\"app\",\"direction\":\"inbound\",\"peer\":\"127.0.0.1:41234\",\"conn\":3,\"connStart\":\"2026-11-29T21:14:10.000000000Z\",\"localPort\":50051,\"end\":\"closed\",\"decoded\":true,\"streams\":7,\"streamsHeadersUnknown\":0,\"streamsOpenAtEnd\":4,\"goawaysSent\":0,\"goawaysReceived\":0,\"rstStreamsSent\":1,\"rstStreamsReceived\":0,\"streamsAfterGoaway\":0}",
};

static struct json_object *parse(const char *s)
{
	struct json_object *o = json_tokener_parse(s);

	ck_assert_msg(o != NULL, "bad sample %s", s);
	return o;
}

START_TEST(kind_table_complete)
{
	/* Every kind has a name, a parse back to itself and at most
	 * TL_FIELDS_MAX fields whose names are unique and not envelope keys. */
	for (unsigned k = 1; k < TL_KIND_MAX; k++) {
		const struct tl_kind_info *ki = &tl_kinds[k];

		ck_assert_ptr_nonnull(ki->name);
		ck_assert_int_eq(tl_kind_parse(ki->name), k);
		ck_assert_uint_le(ki->n_fields, TL_FIELDS_MAX);
		ck_assert_uint_lt(strlen(ki->name), TL_TYPE_MAX);
		for (unsigned i = 0; i < ki->n_fields; i++) {
			ck_assert_int_eq(tl_kind_field((enum tl_kind)k, ki->fields[i].name), (int)i);
			ck_assert_str_ne(ki->fields[i].name, "type");
			ck_assert_str_ne(ki->fields[i].name, "time");
		}
	}
	ck_assert_int_eq(tl_kind_parse("no.such"), TL_KIND_NONE);
	ck_assert_int_eq(tl_kind_parse(NULL), TL_KIND_NONE);
	ck_assert_str_eq(tl_kind_name(TL_KIND_MAX), "unknown");
	ck_assert(tl_kind_has(TL_KIND_POD_DELETED, TL_KF_ENDS_POD));
	ck_assert(tl_kind_has(TL_KIND_PROCESS_SIGNAL, TL_KF_TERMINATION));
	ck_assert(!tl_kind_has(TL_KIND_HTTP_REQUEST, TL_KF_LIFECYCLE));
	/* The contract's http.request fields, plus error. */
	ck_assert_int_eq(tl_kind_field(TL_KIND_HTTP_REQUEST, "responseFlags"), TL_F_HTTP_RESPONSE_FLAGS);
	ck_assert_int_eq(tl_kind_field(TL_KIND_HTTP_REQUEST, "error"), TL_F_HTTP_ERROR);
	/* Every kind has a sample below. */
	ck_assert_uint_eq(sizeof(samples) / sizeof(samples[0]), TL_KIND_MAX - 1);
}
END_TEST

START_TEST(every_kind_round_trips)
{
	struct tl_strtab *tab;

	ck_assert_int_eq(tl_strtab_new(&tab), 0);
	for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		struct json_object *in = parse(samples[i]), *out, *out2;
		static struct tl_event ev, back;
		uint8_t buf[TL_PAYLOAD_MAX];
		uint32_t flags;
		int n;

		ck_assert_msg(tl_event_from_json(in, &ev) == 0, "decode %s", samples[i]);
		ck_assert_int_eq(ev.kind, (int)i + 1);
		out = tl_event_to_json(&ev, false);
		ck_assert_msg(json_object_equal(in, out), "encode %s -> %s", samples[i],
			      json_object_to_json_string(out));
		/* compact form: pack, unpack, encode again */
		n = tl_event_pack(&ev, tab, buf, &flags);
		ck_assert_int_gt(n, 0);
		ck_assert_int_le(n, TL_PAYLOAD_MAX);
		ck_assert_int_eq(tl_event_init_kind(&back, ev.kind, ev.source, ev.time_ns), 0);
		strcpy(back.container, ev.container);
		ck_assert_int_eq(tl_event_unpack(&back, buf, (size_t)n, flags, tab), 0);
		out2 = tl_event_to_json(&back, false);
		ck_assert_msg(json_object_equal(in, out2), "pack %s -> %s", samples[i],
			      json_object_to_json_string(out2));
		/* a payload cut short or with a byte too many is refused */
		ck_assert_int_eq(tl_event_unpack(&back, buf, (size_t)n - 1, flags, tab), -EINVAL);
		buf[n] = 0;
		ck_assert_int_eq(tl_event_unpack(&back, buf, (size_t)n + 1, flags, tab), -EINVAL);
		json_object_put(in);
		json_object_put(out);
		json_object_put(out2);
		tl_event_clear(&ev);
		tl_event_clear(&back);
	}
	tl_strtab_free(tab);
}
END_TEST

/* Every field the schema names for a kind has a slot in the kind table
 * (schema/timeline.schema.json, the event's "allOf" rules): none travels
 * as an open-ended extra field. */
START_TEST(schema_fields_have_slots)
{
	const char *src = getenv("TERMLINE_SOURCE_ROOT");
	char path[4096];
	struct json_object *schema, *rules, *v;
	int checked = 0;

	ck_assert_ptr_nonnull(src);
	snprintf(path, sizeof(path), "%s/schema/timeline.schema.json", src);
	schema = json_object_from_file(path);
	ck_assert_ptr_nonnull(schema);
	ck_assert(json_object_object_get_ex(schema, "$defs", &v) &&
		  json_object_object_get_ex(v, "event", &v) &&
		  json_object_object_get_ex(v, "allOf", &rules));
	for (size_t i = 0; i < json_object_array_length(rules); i++) {
		struct json_object *rule = json_object_array_get_idx(rules, i), *type, *types, *props;
		size_t nt;

		if (!json_object_object_get_ex(rule, "if", &v) ||
		    !json_object_object_get_ex(v, "properties", &v) ||
		    !json_object_object_get_ex(v, "type", &type) ||
		    !json_object_object_get_ex(rule, "then", &v) ||
		    !json_object_object_get_ex(v, "properties", &props))
			continue;
		if (!json_object_object_get_ex(type, "enum", &types) &&
		    !json_object_object_get_ex(type, "const", &types))
			continue;
		nt = json_object_is_type(types, json_type_array) ? json_object_array_length(types) : 1;
		for (size_t t = 0; t < nt; t++) {
			struct json_object *name = json_object_is_type(types, json_type_array)
							   ? json_object_array_get_idx(types, t)
							   : types;
			enum tl_kind k = tl_kind_parse(json_object_get_string(name));

			ck_assert_msg(k != TL_KIND_NONE, "schema kind %s not in the table",
				      json_object_get_string(name));
			json_object_object_foreach(props, key, val)
			{
				(void)val;
				if (strcmp(key, "source") == 0)
					continue;
				ck_assert_msg(tl_kind_field(k, key) >= 0, "%s.%s has no slot",
					      tl_kind_name(k), key);
				checked++;
			}
		}
	}
	ck_assert_int_ge(checked, 40);
	json_object_put(schema);
}
END_TEST

/* A journal of an agent before alsoSeenBy and preRoll had slots holds them
 * in the event's extra blob: unpacked, they are the slots (written where
 * the kind lists them), other extra fields stay. */
START_TEST(extra_of_older_agents_moves_to_slots)
{
	static struct tl_event ev;
	const char *blob = "{\"alsoSeenBy\":\"kernel\",\"preRoll\":true,\"other\":1}";
	struct json_object *o, *v;
	struct tl_strtab *tab;
	uint8_t buf[8];
	int64_t id, b;

	ck_assert_int_eq(tl_strtab_new(&tab), 0);
	id = tl_strtab_intern(tab, blob, strlen(blob));
	ck_assert_int_ge(id, 0);
	buf[0] = 0; /* no slot set */
	buf[1] = (uint8_t)id;
	ck_assert_int_eq(tl_event_init_kind(&ev, TL_KIND_HTTP_REQUEST, TL_SRC_LOG, 1), 0);
	ck_assert_int_eq(tl_event_unpack(&ev, buf, 2, TL_EF_EXTRA_BLOB, tab), 0);
	ck_assert_str_eq(tl_event_get_s(&ev, TL_F_HTTP_ALSO_SEEN_BY), "kernel");
	ck_assert(tl_event_get_i(&ev, TL_F_HTTP_PRE_ROLL, &b) && b == 1);
	o = tl_event_to_json(&ev, false);
	ck_assert(json_object_object_get_ex(o, "alsoSeenBy", &v));
	ck_assert(json_object_object_get_ex(o, "other", &v));
	ck_assert_ptr_nonnull(ev.extra);
	ck_assert(!json_object_object_get_ex(ev.extra, "alsoSeenBy", &v));
	json_object_put(o);
	tl_event_clear(&ev);
	tl_strtab_free(tab);
}
END_TEST

START_TEST(extra_fields_and_ids)
{
	static struct tl_event ev, back;
	struct json_object *o, *v;
	struct tl_strtab *tab;
	uint8_t buf[TL_PAYLOAD_MAX];
	uint32_t flags;
	int n;

	ck_assert_int_eq(tl_strtab_new(&tab), 0);
	/* a document of another version: fields this one does not list */
	o = json_tokener_parse("{\"time\":\"1970-01-01T00:00:00.000000005Z\",\"source\":\"api\","
			       "\"type\":\"pod.deleted\",\"container\":null,"
			       "\"podUid\":\"0b6a1c2e-0000-4000-8000-000000000001\","
			       "\"containerId\":\"abc\",\"sandbox\":true,\"unlisted\":\"x\","
			       "\"nothing\":null}");
	ck_assert_int_eq(tl_event_from_json(o, &ev), 0);
	json_object_put(o);
	o = tl_event_to_json(&ev, true);
	ck_assert(json_object_object_get_ex(o, "unlisted", &v));
	ck_assert_str_eq(json_object_get_string(v), "x");
	ck_assert(json_object_object_get_ex(o, "nothing", &v) && v == NULL);
	ck_assert(json_object_object_get_ex(o, "sandbox", &v) && json_object_get_boolean(v));
	ck_assert(json_object_object_get_ex(o, "podUid", &v));
	ck_assert_str_eq(json_object_get_string(v), ev.pod_uid);
	ck_assert(json_object_object_get_ex(o, "time", &v));
	ck_assert_str_eq(json_object_get_string(v), "1970-01-01T00:00:00.000000005Z");
	json_object_put(o);
	n = tl_event_pack(&ev, tab, buf, &flags);
	ck_assert_int_gt(n, 0);
	ck_assert(flags & TL_EF_EXTRA_BLOB);
	tl_event_init_kind(&back, ev.kind, ev.source, ev.time_ns);
	ck_assert_int_eq(tl_event_unpack(&back, buf, (size_t)n, flags, tab), 0);
	ck_assert(back.flags & TL_EF_SANDBOX);
	o = tl_event_to_json(&back, false);
	ck_assert(json_object_object_get_ex(o, "unlisted", &v));
	json_object_put(o);
	/* Typed setters refuse the wrong type and unknown slots. */
	tl_event_clear(&back);
	tl_event_init_kind(&back, TL_KIND_PROCESS_EXEC, TL_SRC_KERNEL, 1);
	ck_assert_int_eq(tl_event_set_i(&back, TL_F_EXEC_COMM, 1), -EINVAL);
	ck_assert_int_eq(tl_event_set_s(&back, TL_F_EXEC_PID, "x", 1), -EINVAL);
	ck_assert_int_eq(tl_event_set_i(&back, 7, 1), -EINVAL);
	ck_assert_int_eq(tl_event_set_text(&back, TL_F_EXEC_PID, "12x"), -EINVAL);
	ck_assert_int_eq(tl_event_set_text(&back, TL_F_EXEC_PID, "12"), 0);
	ck_assert_int_eq(tl_event_init(&back, TL_SRC_API, "no.such", 1), -EINVAL);
	tl_event_clear(&ev);
	tl_event_clear(&back);
	tl_strtab_free(tab);
}
END_TEST

/* An http.request with no ID header: requestId null, from an unset ID
 * field (no extra field made for it), as the document's contract says;
 * read back from its JSON, the same. */
START_TEST(missing_id_is_null)
{
	static struct tl_event ev, back;
	struct json_object *o, *o2, *v = NULL;

	ck_assert_int_eq(tl_event_init_kind(&ev, TL_KIND_HTTP_REQUEST, TL_SRC_KERNEL, 1000), 0);
	ck_assert_int_eq(tl_event_set_s(&ev, TL_F_HTTP_METHOD, "GET", 3), 0);
	ck_assert_ptr_null(ev.extra);
	o = tl_event_to_json(&ev, false);
	ck_assert_ptr_nonnull(o);
	ck_assert(json_object_object_get_ex(o, "requestId", &v));
	ck_assert_ptr_null(v);
	ck_assert_int_eq(tl_event_from_json(o, &back), 0);
	ck_assert_ptr_null(tl_event_get_s(&back, TL_F_HTTP_REQUEST_ID));
	o2 = tl_event_to_json(&back, false);
	ck_assert(json_object_equal(o, o2));
	json_object_put(o);
	json_object_put(o2);
	tl_event_clear(&ev);
	tl_event_clear(&back);
}
END_TEST

/* http2.rst_stream's requestId is the stream's when its headers were
 * decoded, and absent otherwise (a RST_STREAM after the stream ended, as a
 * gRPC server cancelling its calls sends): never null, which the schema
 * refuses. */
START_TEST(rst_stream_without_id_omits_it)
{
	static struct tl_event ev, back;
	struct json_object *o, *o2, *v = NULL;

	ck_assert_int_eq(tl_event_init_kind(&ev, TL_KIND_HTTP2_RST_STREAM, TL_SRC_KERNEL, 1000), 0);
	ck_assert_int_eq(tl_event_set_s(&ev, TL_F_RST_DIRECTION, "sent", 4), 0);
	ck_assert_int_eq(tl_event_set_i(&ev, TL_F_RST_STREAM_ID, 7), 0);
	o = tl_event_to_json(&ev, false);
	ck_assert_ptr_nonnull(o);
	ck_assert_msg(!json_object_object_get_ex(o, "requestId", &v), "requestId written: %s",
		      json_object_to_json_string(o));
	ck_assert_int_eq(tl_event_from_json(o, &back), 0);
	o2 = tl_event_to_json(&back, false);
	ck_assert(json_object_equal(o, o2));
	json_object_put(o);
	json_object_put(o2);
	tl_event_clear(&ev);
	tl_event_clear(&back);
}
END_TEST

/* Request IDs stay in the event's bytes up to TL_ID_INLINE_MAX, are
 * interned past it; both round-trip. */
START_TEST(ids_inline_and_interned)
{
	static struct tl_event ev, back;
	struct tl_strtab *tab;
	uint8_t buf[TL_PAYLOAD_MAX];
	char id[300];
	uint32_t flags;

	ck_assert_int_eq(tl_strtab_new(&tab), 0);
	for (size_t len = 0; len < sizeof(id) - 1; len += 37) {
		int n;

		memset(id, 'r', len);
		id[len] = '\0';
		tl_event_init_kind(&ev, TL_KIND_HTTP_REQUEST, TL_SRC_LOG, 1000000);
		ck_assert_int_eq(tl_event_set_s(&ev, TL_F_HTTP_REQUEST_ID, id, len), 0);
		ck_assert_int_eq(tl_event_set_i(&ev, TL_F_HTTP_START, 999000), 0);
		n = tl_event_pack(&ev, tab, buf, &flags);
		ck_assert_int_gt(n, 0);
		/* inline: the ID's bytes are in the payload, no string added */
		if (len <= TL_ID_INLINE_MAX)
			ck_assert_uint_eq(tl_strtab_count(tab), 0);
		tl_event_init_kind(&back, ev.kind, ev.source, ev.time_ns);
		ck_assert_int_eq(tl_event_unpack(&back, buf, (size_t)n, flags, tab), 0);
		ck_assert_str_eq(tl_event_get_s(&back, TL_F_HTTP_REQUEST_ID), id);
		{
			int64_t start;

			ck_assert(tl_event_get_i(&back, TL_F_HTTP_START, &start));
			ck_assert_int_eq(start, 999000);
		}
		tl_event_clear(&ev);
		tl_event_clear(&back);
	}
	ck_assert_uint_ge(tl_strtab_count(tab), 1);
	/* UUID-shaped IDs take 16 bytes; near misses stay text */
	{
		static const char *const ids[] = {
			"0b6a1c2e-0000-4000-8000-00000000abcd", "0B6A1C2E-0000-4000-8000-00000000ABCD",
			"0b6a1c2e-0000-4000-8000-00000000abc", "0b6a1c2e_0000-4000-8000-00000000abcd",
		};
		for (size_t i = 0; i < 4; i++) {
			int n;

			tl_event_init_kind(&ev, TL_KIND_HTTP_REQUEST, TL_SRC_LOG, 1);
			ck_assert_int_eq(tl_event_set_s(&ev, TL_F_HTTP_REQUEST_ID, ids[i], strlen(ids[i])), 0);
			n = tl_event_pack(&ev, tab, buf, &flags);
			ck_assert_int_eq(n, i == 0 ? 1 + 1 + 16 : 1 + 1 + (int)strlen(ids[i]) + 1);
			tl_event_init_kind(&back, ev.kind, ev.source, ev.time_ns);
			ck_assert_int_eq(tl_event_unpack(&back, buf, (size_t)n, flags, tab), 0);
			ck_assert_str_eq(tl_event_get_s(&back, TL_F_HTTP_REQUEST_ID), ids[i]);
			tl_event_clear(&ev);
			tl_event_clear(&back);
		}
	}
	tl_strtab_free(tab);
}
END_TEST

START_TEST(utf8_and_copy)
{
	static struct tl_event ev, copy, assigned;
	const uint8_t comm[16] = { 'a', 0xc3, 'b', 0xe2, 0x82 }; /* broken sequences */

	tl_event_init_kind(&ev, TL_KIND_PROCESS_EXEC, TL_SRC_KERNEL, 1);
	ck_assert_int_eq(tl_event_set_bytes_utf8(&ev, TL_F_EXEC_COMM, comm, sizeof(comm)), 0);
	ck_assert_str_eq(tl_event_get_s(&ev, TL_F_EXEC_COMM), "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd");
	ck_assert_int_eq(tl_event_copy(&ev, &copy), 0);
	/* a plain struct copy stays valid: strings are offsets into sbuf */
	assigned = ev;
	memset(ev.sbuf, 'X', 32);
	ck_assert_str_eq(tl_event_get_s(&copy, TL_F_EXEC_COMM), "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd");
	ck_assert_str_eq(tl_event_get_s(&assigned, TL_F_EXEC_COMM), "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd");
	tl_event_clear(&ev);
	tl_event_clear(&copy);
}
END_TEST

/* The encoder's cached time prefix writes what tl_time_format writes. */
START_TEST(encoder_times)
{
	static const int64_t times[] = { 0, 1, 999999999, 1000000000, 1795986854123456789LL,
					 1795986854000000007LL, 1795986855000000000LL, -1,
					 -1000000001LL, 1795986854999999999LL };
	static struct tl_event ev;

	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		char want[TL_TIME_STRLEN];
		struct json_object *o, *v;

		tl_event_init_kind(&ev, TL_KIND_POD_DELETED, TL_SRC_API, times[i]);
		o = tl_event_to_json(&ev, false);
		ck_assert(json_object_object_get_ex(o, "time", &v));
		ck_assert_str_eq(json_object_get_string(v), tl_time_format(times[i], want));
		json_object_put(o);
	}
}
END_TEST

START_TEST(signal_names)
{
	char buf[32];

	ck_assert_str_eq(tl_signal_name(SIGTERM, buf, sizeof(buf)), "SIGTERM");
	ck_assert_str_eq(tl_signal_name(SIGUSR1, buf, sizeof(buf)), "SIGUSR1");
	ck_assert_str_eq(tl_signal_name(SIGKILL, buf, sizeof(buf)), "SIGKILL");
	ck_assert_str_eq(tl_signal_name(34, buf, sizeof(buf)), "SIGRTMIN+2");
	ck_assert_ptr_null(tl_signal_name(0, buf, sizeof(buf)));
	ck_assert_ptr_null(tl_signal_name(65, buf, sizeof(buf)));
	ck_assert_str_eq(tl_signal_result_name(1), "ignored");
	ck_assert_str_eq(tl_signal_result_name(99), "unknown");
}
END_TEST

START_TEST(strtab_interns)
{
	struct tl_strtab *t, *c;
	char s[32];
	size_t len;

	ck_assert_int_eq(tl_strtab_new(&t), 0);
	for (int i = 0; i < 5000; i++) {
		snprintf(s, sizeof(s), "s%d", i);
		ck_assert_int_eq(tl_strtab_intern(t, s, strlen(s)), i);
	}
	for (int i = 0; i < 5000; i += 7) {
		snprintf(s, sizeof(s), "s%d", i);
		ck_assert_int_eq(tl_strtab_intern(t, s, strlen(s)), i);
		ck_assert_str_eq(tl_strtab_get(t, (uint32_t)i, &len), s);
		ck_assert_uint_eq(len, strlen(s));
	}
	ck_assert_int_eq(tl_strtab_intern(t, "", 0), 5000);
	ck_assert_int_eq(tl_strtab_intern(t, "a\0b", 3), -E2BIG);
	ck_assert_ptr_null(tl_strtab_get(t, 5001, NULL));
	ck_assert_int_eq(tl_strtab_clone(t, &c), 0);
	ck_assert_int_eq(tl_strtab_intern(c, "s4999", 5), 4999);
	ck_assert_uint_eq(tl_strtab_count(c), 5001);
	tl_strtab_free(c);
	tl_strtab_free(t);
}
END_TEST

START_TEST(varints_and_buf)
{
	static const uint64_t vals[] = { 0, 1, 127, 128, 300, UINT32_MAX, UINT64_MAX };
	uint8_t p[10];
	struct tl_buf b;

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint64_t back;
		size_t n = tl_varint_put(p, vals[i]);

		ck_assert_uint_eq(tl_varint_get(p, n, &back), n);
		ck_assert_uint_eq(back, vals[i]);
		ck_assert_uint_eq(tl_varint_get(p, n - 1, &back), 0);
	}
	ck_assert_int_eq(tl_unzigzag(tl_zigzag(-5)), -5);
	ck_assert_int_eq(tl_unzigzag(tl_zigzag(INT64_MIN)), INT64_MIN);
	tl_buf_init(&b, 8);
	tl_buf_adds(&b, "12345678");
	ck_assert_int_eq(b.err, 0);
	tl_buf_addc(&b, '9');
	ck_assert_int_eq(b.err, -E2BIG);
	tl_buf_free(&b);
	tl_buf_init(&b, 0);
	tl_buf_add_json_str(&b, "a\"\\\n\x01/", 6);
	ck_assert_str_eq(b.p, "\"a\\\"\\\\\\n\\u0001/\"");
	tl_buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("event");
	TCase *tc = tcase_create("event");

	tcase_add_test(tc, kind_table_complete);
	tcase_add_test(tc, every_kind_round_trips);
	tcase_add_test(tc, extra_fields_and_ids);
	tcase_add_test(tc, schema_fields_have_slots);
	tcase_add_test(tc, extra_of_older_agents_moves_to_slots);
	tcase_add_test(tc, missing_id_is_null);
	tcase_add_test(tc, rst_stream_without_id_omits_it);
	tcase_add_test(tc, ids_inline_and_interned);
	tcase_add_test(tc, utf8_and_copy);
	tcase_add_test(tc, encoder_times);
	tcase_add_test(tc, signal_names);
	tcase_add_test(tc, strtab_interns);
	tcase_add_test(tc, varints_and_buf);
	suite_add_tcase(s, tc);
	return tl_check_run(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
