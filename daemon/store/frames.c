/* SPDX-License-Identifier: Apache-2.0 */
/* Journal frame bodies (frames.h, docs/journal-format.md). Integers are
 * LEB128 varints, signed ones zigzag-encoded first; container indexes and
 * container string ids are written +1 (0 = none). */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <json-c/json.h>

#include "frames.h"
#include "journal.h"

/* ---- writing ---- */

static void put_start(struct frame *f, uint8_t type)
{
	f->b[0] = type;
	f->n = 1;
}

static void put_u(struct frame *f, uint64_t v)
{
	f->n += tl_varint_put(f->b + f->n, v);
}

static void put_i(struct frame *f, int64_t v)
{
	put_u(f, tl_zigzag(v));
}

static void put_byte(struct frame *f, uint8_t v)
{
	f->b[f->n++] = v;
}

static uint64_t ctr_plus1(uint16_t ctr)
{
	return ctr == STATE_NO_CTR ? 0 : (uint64_t)ctr + 1;
}

void frame_open(struct frame *f, int64_t opened_ns, int64_t recording_since_ns)
{
	put_start(f, FRAME_OPEN);
	put_i(f, opened_ns);
	put_i(f, recording_since_ns);
}

/* A string id +1, 0 for none. */
static uint64_t sid_plus1(uint32_t id)
{
	return id == UINT32_MAX ? 0 : (uint64_t)id + 1;
}

void frame_ctr(struct frame *f, const struct state_ctr *c)
{
	put_start(f, FRAME_CTR);
	put_u(f, sid_plus1(c->id_s));
	put_u(f, sid_plus1(c->name_s));
	put_u(f, c->cgroup_id);
}

void frame_event(struct frame *f, bool raw, int64_t time_ns, const struct state_hdr *h,
		 const uint8_t *payload)
{
	put_start(f, raw ? FRAME_RAW : FRAME_EVENT);
	put_i(f, time_ns);
	put_byte(f, h->kind);
	put_byte(f, h->source);
	put_u(f, h->flags);
	put_u(f, ctr_plus1(h->ctr));
	memcpy(f->b + f->n, payload, h->len);
	f->n += h->len;
}

void frame_agg(struct frame *f, const struct state_agg *a)
{
	put_start(f, FRAME_AGG);
	put_i(f, a->bucket_ns);
	put_i(f, a->interval_ms);
	put_u(f, a->count);
	put_u(f, a->failed);
	put_u(f, ctr_plus1(a->ctr));
	put_byte(f, a->source);
	put_byte(f, a->kind);
}

void frame_agg_set(struct frame *f, size_t i, const struct state_agg *a)
{
	put_start(f, FRAME_AGG_SET);
	put_u(f, i);
	put_u(f, a->count);
	put_u(f, a->failed);
	put_i(f, a->interval_ms);
}

void frame_loss(struct frame *f, const struct state_loss *l)
{
	put_start(f, FRAME_LOSS);
#define PUT(field, key) put_u(f, l->field);
	STATE_LOSS_FIELDS(PUT)
#undef PUT
}

void frame_gone(struct frame *f, int64_t at_ns, unsigned reason)
{
	put_start(f, FRAME_GONE);
	put_i(f, at_ns);
	if (reason)
		put_byte(f, (uint8_t)reason);
}

void frame_gap(struct frame *f, const struct state_gap *g)
{
	put_start(f, FRAME_GAP);
	put_i(f, g->from_ns);
	put_i(f, g->to_ns);
}

void frame_term(struct frame *f, const struct tl_state *s)
{
	put_start(f, FRAME_TERM);
	put_byte(f, s->terminating);
	put_u(f, s->n_at_termination);
	put_byte(f, s->gone);
	put_i(f, s->gone_ns);
	if (s->close_reason)
		put_byte(f, s->close_reason);
}

void frame_string(struct tl_buf *out, const char *s, size_t len)
{
	tl_buf_addc(out, FRAME_STRING);
	tl_buf_add(out, s, len);
}

static void buf_u(struct tl_buf *out, uint64_t v)
{
	uint8_t b[10];

	tl_buf_add(out, b, tl_varint_put(b, v));
}

static void buf_str(struct tl_buf *out, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	buf_u(out, n);
	tl_buf_add(out, s, n);
}

/* M, typed (version 1): the metadata's fields in the order of struct
 * tl_pod_meta; pod.istio, an open-ended object, as its JSON text. */
int frame_meta(struct tl_buf *out, const struct tl_pod_meta *m)
{
	const char *istio = NULL;

	if (m->istio) {
		istio = json_object_to_json_string_ext(m->istio, JSON_C_TO_STRING_PLAIN |
							     JSON_C_TO_STRING_NOSLASHESCAPE);
		if (!istio)
			return -ENOMEM;
	}
	tl_buf_addc(out, FRAME_META);
	tl_buf_addc(out, FRAME_META_TYPED);
	buf_str(out, m->ns);
	buf_str(out, m->name);
	buf_str(out, m->uid);
	buf_str(out, m->node);
	buf_str(out, m->ip);
	buf_str(out, m->owner_kind);
	buf_str(out, m->owner_name);
	buf_u(out, tl_zigzag(m->grace_s));
	buf_str(out, istio);
	buf_u(out, m->containers_dropped);
	buf_u(out, m->n_containers);
	for (uint32_t i = 0; i < m->n_containers; i++) {
		const struct tl_pod_container *c = &m->containers[i];

		buf_str(out, c->name);
		buf_str(out, c->container_id);
		buf_u(out, c->cgroup_id);
		tl_buf_addc(out, (char)c->role);
		tl_buf_addc(out, (char)c->prestop);
	}
	return out->err;
}

static void add_frame(struct tl_buf *out, const struct frame *f)
{
	tl_journal_frame(out, f->b, f->n);
}

int frame_state(const struct tl_state *s, struct tl_buf *out)
{
	uint32_t n_str = tl_strtab_count(s->strs);
	struct tl_buf body;
	struct frame f;

	tl_buf_init(&body, 0);
	frame_open(&f, s->opened_ns, s->recording_since_ns);
	add_frame(out, &f);
	for (uint32_t i = 0; i < n_str; i++) {
		size_t len;
		const char *str = tl_strtab_get(s->strs, i, &len);

		tl_buf_reset(&body);
		frame_string(&body, str, len);
		if (!body.err)
			tl_journal_frame(out, body.p, body.len);
	}
	for (uint32_t i = 0; i < s->n_ctrs; i++) {
		frame_ctr(&f, &s->ctrs[i]);
		add_frame(out, &f);
	}
	if (s->meta) {
		tl_buf_reset(&body);
		if (frame_meta(&body, s->meta) == 0)
			tl_journal_frame(out, body.p, body.len);
	}
	tl_buf_free(&body);
	for (size_t i = 0; i < s->n_gaps; i++) {
		frame_gap(&f, &s->gaps[i]);
		add_frame(out, &f);
	}
	for (size_t i = 0; i < s->n; i++) {
		struct state_hdr h;
		const uint8_t *payload = state_record(s, i, &h);

		if (!payload)
			continue;
		frame_event(&f, true, s->ev[i].time_ns, &h, payload);
		add_frame(out, &f);
	}
	/* In index order: later D frames name them by index (a replay puts
	 * each at its time all the same). */
	for (size_t i = 0; i < s->n_aggs; i++) {
		frame_agg(&f, &s->aggs[i]);
		add_frame(out, &f);
	}
	frame_term(&f, s);
	add_frame(out, &f);
	frame_loss(&f, &s->loss);
	add_frame(out, &f);
	return out->err;
}

/* ---- reading ---- */

struct rd {
	const uint8_t *p;
	size_t len, o;
	bool bad;
};

static uint64_t get_u(struct rd *r)
{
	uint64_t v = 0;
	size_t n = r->bad ? 0 : tl_varint_get(r->p + r->o, r->len - r->o, &v);

	if (!n)
		r->bad = true;
	r->o += n;
	return v;
}

static int64_t get_i(struct rd *r)
{
	return tl_unzigzag(get_u(r));
}

static uint8_t get_byte(struct rd *r)
{
	if (r->bad || r->o >= r->len) {
		r->bad = true;
		return 0;
	}
	return r->p[r->o++];
}

/* A container index written +1: STATE_NO_CTR for 0; past the table's
 * bound is bad. */
static uint16_t get_ctr(struct rd *r)
{
	uint64_t v = get_u(r);

	if (v > STATE_MAX_CTRS)
		r->bad = true;
	return v ? (uint16_t)(v - 1) : STATE_NO_CTR;
}

/* A string id written +1: UINT32_MAX for 0 (and for 2^32, the "none" of
 * journals written before 0 was). */
static uint32_t get_sid(struct rd *r)
{
	uint64_t v = get_u(r);

	if (v > (uint64_t)UINT32_MAX + 1)
		r->bad = true;
	return v ? (uint32_t)(v - 1) : UINT32_MAX;
}

/* A string of a typed M into dst (size bytes): one that does not fit is
 * dropped (""), as the JSON decoder drops it: the record is input. */
static void get_str(struct rd *r, char *dst, size_t size)
{
	uint64_t n = get_u(r);

	dst[0] = '\0';
	if (r->bad || n > r->len - r->o) {
		r->bad = true;
		return;
	}
	if (n < size && !memchr(r->p + r->o, '\0', n)) {
		memcpy(dst, r->p + r->o, n);
		dst[n] = '\0';
	}
	r->o += n;
}

/* pod.istio of a typed M: an object, or absent (length 0). */
static struct json_object *get_istio(struct rd *r)
{
	uint64_t n = get_u(r);
	struct json_tokener *tok;
	struct json_object *o = NULL;

	if (r->bad || n > r->len - r->o || n > INT32_MAX) {
		r->bad = true;
		return NULL;
	}
	if (n && (tok = json_tokener_new())) {
		o = json_tokener_parse_ex(tok, (const char *)r->p + r->o, (int)n);
		if (o && (json_tokener_get_error(tok) != json_tokener_success ||
			  !json_object_is_type(o, json_type_object))) {
			json_object_put(o);
			o = NULL;
		}
		json_tokener_free(tok);
	}
	r->o += n;
	return o;
}

static int decode_typed_meta(const uint8_t *body, size_t len, const char *uid,
			     struct frame_rec *ret)
{
	struct rd r = { .p = body, .len = len, .o = 2 };
	struct tl_pod_meta *h = tl_pod_meta_new(0), *m = NULL;
	uint64_t dropped, n;

	if (!h)
		return -ENOMEM;
	get_str(&r, h->ns, sizeof(h->ns));
	get_str(&r, h->name, sizeof(h->name));
	get_str(&r, h->uid, sizeof(h->uid));
	get_str(&r, h->node, sizeof(h->node));
	get_str(&r, h->ip, sizeof(h->ip));
	get_str(&r, h->owner_kind, sizeof(h->owner_kind));
	get_str(&r, h->owner_name, sizeof(h->owner_name));
	h->grace_s = get_i(&r);
	h->istio = get_istio(&r);
	dropped = get_u(&r);
	n = get_u(&r);
	/* the container count bounds the allocation */
	if (!r.bad) {
		m = tl_pod_meta_new(n > TL_POD_CONTAINERS_MAX ? TL_POD_CONTAINERS_MAX : (uint32_t)n);
		if (!m) {
			tl_pod_meta_unref(h);
			return -ENOMEM;
		}
		memcpy(m, h, offsetof(struct tl_pod_meta, containers_dropped));
		m->refs = 1;
		h->istio = NULL; /* m's now */
	}
	tl_pod_meta_unref(h);
	for (uint64_t i = 0; m && i < n && !r.bad; i++) {
		struct tl_pod_container c;

		get_str(&r, c.name, sizeof(c.name));
		get_str(&r, c.container_id, sizeof(c.container_id));
		c.cgroup_id = get_u(&r);
		c.role = get_byte(&r);
		c.prestop = get_byte(&r);
		if (m->n_containers == m->cap_containers || !c.name[0] || c.role > TL_ROLE_INIT ||
		    c.prestop > TL_PRESTOP_TCP_SOCKET)
			dropped++;
		else
			m->containers[m->n_containers++] = c;
	}
	if (m && m->grace_s < -1)
		m->grace_s = -1; /* unknown, as the JSON decoder reads it */
	if (!m || r.bad || r.o != len) {
		tl_pod_meta_unref(m);
		return -EINVAL;
	}
	if (!m->uid[0])
		TL_POD_META_SET(m->uid, uid);
	/* both or neither (pod-meta.h) */
	if (!m->owner_kind[0] || !m->owner_name[0])
		m->owner_kind[0] = m->owner_name[0] = '\0';
	m->containers_dropped = dropped > UINT32_MAX ? UINT32_MAX : (uint32_t)dropped;
	ret->meta = m;
	return 0;
}

/* M: typed, or the JSON text agents before it wrote (and the API model's
 * JSON before that): one decoder reads both JSON forms. */
static int decode_meta(const uint8_t *body, size_t len, const char *uid, struct frame_rec *ret)
{
	struct json_tokener *tok;
	struct json_object *m;
	int r;

	if (len >= 2 && body[1] == FRAME_META_TYPED)
		return decode_typed_meta(body, len, uid, ret);
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	m = json_tokener_parse_ex(tok, (const char *)body + 1, (int)(len - 1));
	json_tokener_free(tok);
	r = tl_pod_meta_from_json(m, uid, &ret->meta);
	json_object_put(m);
	return r;
}

int frame_decode(const uint8_t *body, size_t len, const char *uid, struct frame_rec *ret)
{
	struct rd r = { .p = body, .len = len, .o = 1 };

	memset(ret, 0, sizeof(*ret));
	if (len < 1)
		return -EINVAL;
	ret->type = body[0];
	switch (body[0]) {
	case FRAME_OPEN:
		ret->open.opened_ns = get_i(&r);
		ret->open.recording_since_ns = get_i(&r);
		break;
	case FRAME_STRING:
		ret->str.s = (const char *)body + 1;
		ret->str.len = len - 1;
		return 0;
	case FRAME_CTR:
		ret->ctr.id_s = get_sid(&r);
		ret->ctr.name_s = get_sid(&r);
		ret->ctr.cgroup_id = get_u(&r);
		break;
	case FRAME_EVENT:
	case FRAME_RAW: {
		struct state_hdr *h = &ret->event.h;

		ret->event.time_ns = get_i(&r);
		h->kind = get_byte(&r);
		h->source = get_byte(&r);
		h->flags = (uint16_t)get_u(&r);
		h->ctr = get_ctr(&r);
		if (r.bad || h->kind == 0 || h->kind >= TL_KIND_MAX ||
		    h->kind == TL_KIND_EVENTS_AGGREGATED || h->source >= TL_SRC_MAX ||
		    r.len - r.o > TL_PAYLOAD_MAX)
			return -EINVAL;
		h->len = (uint16_t)(r.len - r.o);
		ret->event.payload = r.p + r.o;
		return 0;
	}
	case FRAME_AGG: {
		struct state_agg *a = &ret->agg;

		a->bucket_ns = get_i(&r);
		a->interval_ms = get_i(&r);
		a->count = get_u(&r);
		a->failed = get_u(&r);
		a->ctr = get_ctr(&r);
		a->source = get_byte(&r);
		a->kind = get_byte(&r);
		if (a->kind >= TL_KIND_MAX || a->source >= TL_SRC_MAX)
			return -EINVAL;
		break;
	}
	case FRAME_AGG_SET:
		ret->agg_set.index = get_u(&r);
		ret->agg_set.count = get_u(&r);
		ret->agg_set.failed = get_u(&r);
		ret->agg_set.interval_ms = get_i(&r);
		if (ret->agg_set.failed > ret->agg_set.count || ret->agg_set.interval_ms < 0)
			return -EINVAL;
		break;
	case FRAME_META:
		return decode_meta(body, len, uid, ret);
	case FRAME_LOSS:
#define GET(field, key) ret->loss.field = get_u(&r);
		STATE_LOSS_FIELDS(GET)
#undef GET
		break;
	case FRAME_GONE:
		ret->gone_ns = get_i(&r);
		if (!r.bad && r.o < r.len)
			ret->reason = get_byte(&r);
		break;
	case FRAME_GAP:
		ret->gap.from_ns = get_i(&r);
		ret->gap.to_ns = get_i(&r);
		break;
	case FRAME_TERM:
		ret->term.terminating = get_byte(&r);
		ret->term.at = get_u(&r);
		ret->term.gone = get_byte(&r);
		ret->term.gone_ns = get_i(&r);
		if (!r.bad && r.o < r.len)
			ret->reason = get_byte(&r);
		break;
	default:
		return -EINVAL;
	}
	return r.bad ? -EINVAL : 0;
}

void frame_rec_clear(struct frame_rec *r)
{
	if (r && r->type == FRAME_META) {
		tl_pod_meta_unref(r->meta);
		r->meta = NULL;
	}
}
