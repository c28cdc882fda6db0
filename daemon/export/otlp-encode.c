/* SPDX-License-Identifier: Apache-2.0 */
/* A document's tree (otlp-map.c) cut into pieces of at most piece_items
 * spans or records, each packed on its own; pieces joined into request
 * bodies; the answer's partial success read back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "json-util.h"
#include "otlp-encode.h"
#include "otlp-int.h"
#include "tl-buf.h"

/* A response is read up to this (the exporter caps what it keeps too). */
#define RESPONSE_MAX (64 * 1024)

const char *tl_otlp_content_type(enum tl_otlp_protocol p)
{
	return p == TL_OTLP_HTTP_JSON ? "application/json" : "application/x-protobuf";
}

void tl_otlp_encoded_done(struct tl_otlp_encoded *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n_pieces; i++)
		free(e->pieces[i]);
	free(e->pieces);
	memset(e, 0, sizeof(*e));
}

static int add_piece(struct tl_otlp_encoded *e, size_t *cap, struct tl_otlp_piece *p)
{
	if (e->n_pieces == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		struct tl_otlp_piece **q = realloc(e->pieces, c * sizeof(*q));

		if (!q)
			return -ENOMEM;
		e->pieces = q;
		*cap = c;
	}
	e->pieces[e->n_pieces++] = p;
	return 0;
}

/* msg (a ResourceSpans or ResourceLogs) as one piece. In protobuf, field 1
 * of the request: wrapping it in a request with only that entry packs
 * exactly those bytes. */
static struct tl_otlp_piece *pack_piece(enum tl_otlp_protocol proto, enum tl_otlp_signal sig,
					ProtobufCMessage *msg, uint32_t items)
{
	struct tl_otlp_piece *p;

	if (proto == TL_OTLP_HTTP_PROTOBUF) {
		Otlp__ExportTraceServiceRequest tr = OTLP__EXPORT_TRACE_SERVICE_REQUEST__INIT;
		Otlp__ExportLogsServiceRequest lr = OTLP__EXPORT_LOGS_SERVICE_REQUEST__INIT;
		ProtobufCMessage *req;
		size_t n;

		if (sig == TL_OTLP_TRACES) {
			tr.n_resource_spans = 1;
			tr.resource_spans = (Otlp__ResourceSpans **)&msg;
			req = &tr.base;
		} else {
			lr.n_resource_logs = 1;
			lr.resource_logs = (Otlp__ResourceLogs **)&msg;
			req = &lr.base;
		}
		n = protobuf_c_message_get_packed_size(req);
		p = malloc(sizeof(*p) + n);
		if (!p)
			return NULL;
		p->len = protobuf_c_message_pack(req, (uint8_t *)p->data);
		if (p->len != n) {
			free(p);
			return NULL;
		}
	} else {
		struct tl_buf b;
		size_t n;
		char *s;

		tl_buf_init(&b, 0);
		otlp_json_message(&b, msg);
		s = tl_buf_steal(&b, &n);
		tl_buf_free(&b);
		if (!s)
			return NULL;
		p = malloc(sizeof(*p) + n);
		if (!p) {
			free(s);
			return NULL;
		}
		memcpy(p->data, s, n);
		p->len = n;
		free(s);
	}
	p->signal = sig;
	p->items = items;
	return p;
}

int tl_otlp_encode(struct json_object *doc, const struct tl_otlp_encode_opts *o,
		   struct tl_otlp_encoded *ret)
{
	struct tl_otlp_encoded e = {0};
	struct otlp_tree t = {0};
	size_t cap = 0, per = o->piece_items ? o->piece_items : TL_OTLP_DEFAULT_PIECE_ITEMS;
	int r;

	r = otlp_map(doc, o, &t);
	if (r < 0)
		goto out;
	r = -ENOMEM;
	for (size_t i = 0; i < t.traces.n_resource_spans; i++) {
		Otlp__ResourceSpans *rs = t.traces.resource_spans[i];
		Otlp__ScopeSpans *ss = rs->scope_spans[0];
		Otlp__Span **all = ss->spans;
		size_t n = ss->n_spans;

		for (size_t off = 0; off < n; off += per) {
			size_t k = n - off < per ? n - off : per;
			struct tl_otlp_piece *p;

			ss->spans = all + off;
			ss->n_spans = k;
			p = pack_piece(o->protocol, TL_OTLP_TRACES, &rs->base, (uint32_t)k);
			ss->spans = all;
			ss->n_spans = n;
			if (!p || add_piece(&e, &cap, p) < 0) {
				free(p);
				goto out;
			}
		}
	}
	for (size_t i = 0; i < t.logs.n_resource_logs; i++) {
		Otlp__ResourceLogs *rl = t.logs.resource_logs[i];
		Otlp__ScopeLogs *sl = rl->scope_logs[0];
		Otlp__LogRecord **all = sl->log_records;
		size_t n = sl->n_log_records;

		for (size_t off = 0; off < n; off += per) {
			size_t k = n - off < per ? n - off : per;
			struct tl_otlp_piece *p;

			sl->log_records = all + off;
			sl->n_log_records = k;
			p = pack_piece(o->protocol, TL_OTLP_LOGS, &rl->base, (uint32_t)k);
			sl->log_records = all;
			sl->n_log_records = n;
			if (!p || add_piece(&e, &cap, p) < 0) {
				free(p);
				goto out;
			}
		}
	}
	memcpy(e.trace_id, t.trace_id, 16);
	e.spans = t.spans;
	e.span_events = t.span_events;
	e.links = t.links;
	e.log_records = t.log_records;
	e.request_spans = t.request_spans;
	e.requests_unexported = t.requests_unexported;
	e.events_dropped = t.events_dropped;
	*ret = e;
	memset(&e, 0, sizeof(e));
	r = 0;
out:
	tl_otlp_encoded_done(&e);
	ar_free(&t.arena);
	return r;
}

int tl_otlp_body(enum tl_otlp_protocol proto, enum tl_otlp_signal sig,
		 struct tl_otlp_piece *const *pieces, size_t n, char **ret, size_t *ret_len)
{
	struct tl_buf b;

	tl_buf_init(&b, 0);
	if (proto == TL_OTLP_HTTP_JSON)
		tl_buf_adds(&b, sig == TL_OTLP_TRACES ? "{\"resourceSpans\":[" : "{\"resourceLogs\":[");
	for (size_t i = 0; i < n; i++) {
		if (proto == TL_OTLP_HTTP_JSON && i)
			tl_buf_addc(&b, ',');
		tl_buf_add(&b, pieces[i]->data, pieces[i]->len);
	}
	if (proto == TL_OTLP_HTTP_JSON)
		tl_buf_adds(&b, "]}");
	/* an empty protobuf request is zero bytes: steal needs one */
	tl_buf_reserve(&b, 1);
	*ret = tl_buf_steal(&b, ret_len);
	tl_buf_free(&b);
	return *ret ? 0 : -ENOMEM;
}

int64_t tl_otlp_rejected(enum tl_otlp_protocol proto, enum tl_otlp_signal sig, const char *body,
			 size_t len, char *msg, size_t msglen)
{
	int64_t n = 0;

	if (msg && msglen)
		msg[0] = '\0';
	if (!body || !len || len > RESPONSE_MAX)
		return 0;
	if (proto == TL_OTLP_HTTP_PROTOBUF) {
		const char *em = NULL;

		if (sig == TL_OTLP_TRACES) {
			Otlp__ExportTraceServiceResponse *r =
				otlp__export_trace_service_response__unpack(NULL, len, (const uint8_t *)body);

			if (!r)
				return 0;
			if (r->partial_success) {
				n = r->partial_success->rejected_spans;
				em = r->partial_success->error_message;
			}
			if (msg && msglen && em)
				snprintf(msg, msglen, "%s", em);
			otlp__export_trace_service_response__free_unpacked(r, NULL);
		} else {
			Otlp__ExportLogsServiceResponse *r =
				otlp__export_logs_service_response__unpack(NULL, len, (const uint8_t *)body);

			if (!r)
				return 0;
			if (r->partial_success) {
				n = r->partial_success->rejected_log_records;
				em = r->partial_success->error_message;
			}
			if (msg && msglen && em)
				snprintf(msg, msglen, "%s", em);
			otlp__export_logs_service_response__free_unpacked(r, NULL);
		}
	} else {
		struct json_tokener *tok = json_tokener_new_ex(16);
		struct json_object *o, *ps, *v;

		if (!tok)
			return 0;
		o = json_tokener_parse_ex(tok, body, (int)len);
		json_tokener_free(tok);
		ps = tl_json_object(o, "partialSuccess");
		v = tl_json_get(ps, sig == TL_OTLP_TRACES ? "rejectedSpans" : "rejectedLogRecords");
		/* int64 is a string in proto3 JSON; a number is accepted too */
		if (v && (json_object_is_type(v, json_type_string) ||
			  json_object_is_type(v, json_type_int)))
			n = json_object_get_int64(v);
		if (msg && msglen && tl_json_str(ps, "errorMessage"))
			snprintf(msg, msglen, "%s", tl_json_str(ps, "errorMessage"));
		json_object_put(o);
	}
	return n > 0 ? n : 0;
}
