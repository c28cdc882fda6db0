/* SPDX-License-Identifier: Apache-2.0 */
/* Typed events: setters, the JSON encoder and decoder. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "event.h"

/* Keys the envelope owns; a field of the same name would be ambiguous in
 * the document, so fields never use them (decoding skips them). */
static const char *const envelope_keys[] = {
	"time", "source", "type", "container", "podUid", "containerId", "sandbox",
};

static bool is_envelope_key(const char *key)
{
	for (size_t i = 0; i < sizeof(envelope_keys) / sizeof(envelope_keys[0]); i++)
		if (strcmp(key, envelope_keys[i]) == 0)
			return true;
	return false;
}

int tl_event_init_kind(struct tl_event *ev, enum tl_kind k, enum tl_source source, int64_t time_ns)
{
	if ((unsigned)k >= TL_KIND_MAX || !tl_kinds[k].name || (unsigned)source >= TL_SRC_MAX)
		return -EINVAL;
	ev->time_ns = time_ns;
	ev->kind = k;
	ev->source = source;
	ev->type = tl_kinds[k].name;
	ev->flags = 0;
	ev->cgroup_id = 0;
	ev->pod_uid[0] = '\0';
	ev->container_id[0] = '\0';
	ev->container[0] = '\0';
	for (unsigned i = 0; i < TL_FIELDS_MAX; i++)
		ev->v[i].set = 0;
	ev->extra = NULL;
	ev->sused = 0;
	return 0;
}

int tl_event_init(struct tl_event *ev, enum tl_source source, const char *type, int64_t time_ns)
{
	enum tl_kind k = tl_kind_parse(type);

	if (k == TL_KIND_NONE) {
		/* Leave a clearable event behind. */
		memset(ev, 0, offsetof(struct tl_event, sbuf));
		return -EINVAL;
	}
	return tl_event_init_kind(ev, k, source, time_ns);
}

void tl_event_clear(struct tl_event *ev)
{
	if (!ev)
		return;
	json_object_put(ev->extra);
	ev->extra = NULL;
	ev->sused = 0;
	for (unsigned i = 0; i < TL_FIELDS_MAX; i++)
		ev->v[i].set = 0;
}

static const struct tl_field_info *slot_info(const struct tl_event *ev, unsigned slot)
{
	if ((unsigned)ev->kind >= TL_KIND_MAX || slot >= tl_kinds[ev->kind].n_fields)
		return NULL;
	return &tl_kinds[ev->kind].fields[slot];
}

int tl_event_set_i(struct tl_event *ev, unsigned slot, int64_t val)
{
	const struct tl_field_info *f = slot_info(ev, slot);

	if (!f || f->type == TL_FT_STR || f->type == TL_FT_ID || f->type == TL_FT_ADDR ||
	    f->type == TL_FT_ENDPOINT)
		return -EINVAL;
	ev->v[slot].i = f->type == TL_FT_BOOL ? !!val : val;
	ev->v[slot].set = 1;
	return 0;
}

static bool is_str(const struct tl_field_info *f)
{
	return f && (f->type == TL_FT_STR || f->type == TL_FT_ID);
}

int tl_event_set_s(struct tl_event *ev, unsigned slot, const char *s, size_t len)
{
	const struct tl_field_info *f = slot_info(ev, slot);

	if (!is_str(f) || memchr(s, '\0', len))
		return -EINVAL;
	if (len >= sizeof(ev->sbuf) - ev->sused)
		return -E2BIG;
	memcpy(ev->sbuf + ev->sused, s, len);
	ev->sbuf[ev->sused + len] = '\0';
	ev->v[slot].owned = 1;
	ev->v[slot].soff = (uint32_t)ev->sused;
	ev->v[slot].slen = (uint32_t)len;
	ev->v[slot].set = 1;
	ev->sused += len + 1;
	return 0;
}

int tl_event_set_addr(struct tl_event *ev, unsigned slot, uint16_t family, const uint8_t addr[16],
		      uint16_t port)
{
	const struct tl_field_info *f = slot_info(ev, slot);

	if (!f || (f->type != TL_FT_ADDR && f->type != TL_FT_ENDPOINT) ||
	    (family != AF_INET && family != AF_INET6))
		return -EINVAL;
	memset(ev->v[slot].addr, 0, 16);
	memcpy(ev->v[slot].addr, addr, family == AF_INET ? 4 : 16);
	ev->v[slot].family = (uint8_t)family;
	ev->v[slot].port = port;
	ev->v[slot].set = 1;
	return 0;
}

/* Length of the well-formed UTF-8 sequence (RFC 3629) at s, or 0. */
static size_t utf8_seq_len(const uint8_t *s, size_t n)
{
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* Overlong forms, UTF-16 surrogates and code points past U+10FFFF. */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return len;
}

int tl_event_set_bytes_utf8(struct tl_event *ev, unsigned slot, const uint8_t *src, size_t srclen)
{
	const struct tl_field_info *f = slot_info(ev, slot);
	size_t n = strnlen((const char *)src, srclen), i = 0, o;
	char *dst;

	if (!is_str(f))
		return -EINVAL;
	if (3 * n >= sizeof(ev->sbuf) - ev->sused)
		return -E2BIG;
	dst = ev->sbuf + ev->sused;
	o = 0;
	while (i < n) {
		size_t len = utf8_seq_len(src + i, n - i);

		if (len) {
			memcpy(dst + o, src + i, len);
			o += len;
			i += len;
		} else {
			memcpy(dst + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	dst[o] = '\0';
	ev->v[slot].owned = 1;
	ev->v[slot].soff = (uint32_t)ev->sused;
	ev->v[slot].slen = (uint32_t)o;
	ev->v[slot].set = 1;
	ev->sused += o + 1;
	return 0;
}

bool tl_event_get_i(const struct tl_event *ev, unsigned slot, int64_t *ret)
{
	const struct tl_field_info *f = slot_info(ev, slot);

	if (!f || !ev->v[slot].set || is_str(f) || f->type == TL_FT_ADDR ||
	    f->type == TL_FT_ENDPOINT)
		return false;
	*ret = ev->v[slot].i;
	return true;
}

const char *tl_event_get_s(const struct tl_event *ev, unsigned slot)
{
	const struct tl_field_info *f = slot_info(ev, slot);

	if (!f || !ev->v[slot].set || !is_str(f))
		return NULL;
	return ev->v[slot].owned ? ev->sbuf + ev->v[slot].soff : ev->v[slot].s;
}

static int set_extra(struct tl_event *ev, const char *key, struct json_object *v, bool null_ok)
{
	if (!v && !null_ok)
		return -ENOMEM;
	if (!ev->extra) {
		ev->extra = json_object_new_object();
		if (!ev->extra) {
			json_object_put(v);
			return -ENOMEM;
		}
	}
	if (json_object_object_add(ev->extra, key, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static int parse_signame(const char *s, int64_t *ret)
{
	char buf[32];

	for (int no = 1; no <= 64; no++) {
		const char *n = tl_signal_name(no, buf, sizeof(buf));

		if (n && strcmp(n, s) == 0) {
			*ret = no;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_sigresult(const char *s, int64_t *ret)
{
	for (uint32_t r = 0; r < 8; r++) {
		if (strcmp(tl_signal_result_name(r), s) == 0) {
			*ret = r;
			return 0;
		}
	}
	return -EINVAL;
}

/* "10.1.2.3", "fd00::1" (ADDR) or "10.1.2.3:80", "[fd00::1]:80" (ENDPOINT). */
static int parse_addr(const char *s, bool with_port, uint16_t *family, uint8_t addr[16],
		      uint16_t *port)
{
	char ip[INET6_ADDRSTRLEN + 2];
	const char *end = s + strlen(s);
	size_t n;

	*port = 0;
	if (with_port) {
		const char *colon = strrchr(s, ':');
		char *e;
		unsigned long p;

		if (!colon)
			return -EINVAL;
		p = strtoul(colon + 1, &e, 10);
		if (*e || e == colon + 1 || p > 65535)
			return -EINVAL;
		*port = (uint16_t)p;
		end = colon;
		if (s[0] == '[') {
			if (end - s < 2 || end[-1] != ']')
				return -EINVAL;
			s++;
			end--;
		}
	}
	n = (size_t)(end - s);
	if (n == 0 || n >= sizeof(ip))
		return -EINVAL;
	memcpy(ip, s, n);
	ip[n] = '\0';
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, ip, addr) == 1) {
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, ip, addr) == 1) {
		*family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

int tl_event_set_text(struct tl_event *ev, unsigned slot, const char *val)
{
	const struct tl_field_info *f = slot_info(ev, slot);
	uint8_t addr[16];
	uint16_t family, port;
	int64_t i;
	char *end;

	if (!f || !val)
		return -EINVAL;
	switch (f->type) {
	case TL_FT_STR:
	case TL_FT_ID:
		return tl_event_set_s(ev, slot, val, strlen(val));
	case TL_FT_INT:
		errno = 0;
		i = strtoll(val, &end, 10);
		if (errno || end == val || *end)
			return -EINVAL;
		return tl_event_set_i(ev, slot, i);
	case TL_FT_BOOL:
		if (strcmp(val, "true") != 0 && strcmp(val, "false") != 0)
			return -EINVAL;
		return tl_event_set_i(ev, slot, val[0] == 't');
	case TL_FT_SIGNAME:
		if (parse_signame(val, &i) < 0)
			return -EINVAL;
		return tl_event_set_i(ev, slot, i);
	case TL_FT_SIGRESULT:
		if (parse_sigresult(val, &i) < 0)
			return -EINVAL;
		return tl_event_set_i(ev, slot, i);
	case TL_FT_TIME:
		if (tl_time_parse(val, &i) < 0)
			return -EINVAL;
		return tl_event_set_i(ev, slot, i);
	case TL_FT_ADDR:
	case TL_FT_ENDPOINT:
		if (parse_addr(val, f->type == TL_FT_ENDPOINT, &family, addr, &port) < 0)
			return -EINVAL;
		return tl_event_set_addr(ev, slot, family, addr, port);
	}
	return -EINVAL;
}

int tl_event_copy(const struct tl_event *src, struct tl_event *ret)
{
	int r;

	r = tl_event_init_kind(ret, src->kind, src->source, src->time_ns);
	if (r < 0)
		return r;
	ret->flags = src->flags;
	ret->cgroup_id = src->cgroup_id;
	memcpy(ret->pod_uid, src->pod_uid, sizeof(ret->pod_uid));
	memcpy(ret->container_id, src->container_id, sizeof(ret->container_id));
	memcpy(ret->container, src->container, sizeof(ret->container));
	for (unsigned i = 0; i < TL_FIELDS_MAX; i++) {
		ret->v[i] = src->v[i];
		if (src->v[i].set && i < tl_kinds[src->kind].n_fields &&
		    is_str(&tl_kinds[src->kind].fields[i])) {
			ret->v[i].set = 0;
			r = tl_event_set_s(ret, i, tl_event_get_s(src, i), src->v[i].slen);
			if (r < 0)
				return r;
		}
	}
	if (src->extra && json_object_deep_copy(src->extra, &ret->extra, NULL) < 0) {
		ret->extra = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- the encoder ---- */

/* RFC 3339 with nanoseconds, as tl_time_format, without its gmtime_r and
 * snprintf for every event: events come in bursts within one second, so
 * the "YYYY-MM-DDTHH:MM:SS." part of the last second is kept and only the
 * nanoseconds are written (a bench-http-capture profile found the two
 * timestamps of an http.request at ~8,000 instructions). */
static void add_time(struct tl_buf *b, int64_t ns)
{
	static int64_t cached_sec = INT64_MIN;
	static char prefix[TL_TIME_STRLEN];
	static size_t prefix_len;
	int64_t sec = ns / 1000000000LL, frac = ns % 1000000000LL;
	char digits[10];

	if (frac < 0) {
		frac += 1000000000LL;
		sec -= 1;
	}
	if (sec != cached_sec) {
		char full[TL_TIME_STRLEN];
		const char *dot;

		tl_time_format(sec * 1000000000LL, full);
		dot = strchr(full, '.');
		if (!dot || (size_t)(dot - full) + 1 >= sizeof(prefix)) {
			tl_buf_adds(b, tl_time_format(ns, full));
			return;
		}
		prefix_len = (size_t)(dot - full) + 1;
		memcpy(prefix, full, prefix_len);
		cached_sec = sec;
	}
	tl_buf_add(b, prefix, prefix_len);
	for (int i = 8; i >= 0; i--) {
		digits[i] = (char)('0' + frac % 10);
		frac /= 10;
	}
	digits[9] = 'Z';
	tl_buf_add(b, digits, 10);
}

static void add_key(struct tl_buf *b, const char *key)
{
	tl_buf_addc(b, ',');
	tl_buf_addc(b, '"');
	tl_buf_adds(b, key);
	tl_buf_add(b, "\":", 2);
}

static void add_str_or_null(struct tl_buf *b, const char *s)
{
	if (s && *s)
		tl_buf_add_json_str(b, s, strlen(s));
	else
		tl_buf_add(b, "null", 4);
}

/* An IPv4-mapped IPv6 address (a dual-stack socket's IPv4 peer) is shown as
 * IPv4 so that it matches Pod IPs. */
static void format_addr(const struct tl_value *v, char *buf, size_t len)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const uint8_t *a = v->addr;
	int family = v->family;

	if (family == AF_INET6 && memcmp(a, mapped, sizeof(mapped)) == 0)
		family = AF_INET, a += 12;
	if (!inet_ntop(family == AF_INET6 ? AF_INET6 : AF_INET, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static void add_value(struct tl_buf *b, const struct tl_event *ev, unsigned slot)
{
	const struct tl_field_info *f = &tl_kinds[ev->kind].fields[slot];
	const struct tl_value *v = &ev->v[slot];
	char tmp[INET6_ADDRSTRLEN + 16], ip[INET6_ADDRSTRLEN];
	const char *s;

	switch (f->type) {
	case TL_FT_INT:
		tl_buf_printf(b, "%lld", (long long)v->i);
		break;
	case TL_FT_BOOL:
		tl_buf_adds(b, v->i ? "true" : "false");
		break;
	case TL_FT_STR:
	case TL_FT_ID:
		tl_buf_add_json_str(b, tl_event_get_s(ev, slot), v->slen);
		break;
	case TL_FT_SIGNAME:
		s = tl_signal_name((int)v->i, tmp, sizeof(tmp));
		if (s)
			tl_buf_add_json_str(b, s, strlen(s));
		else
			tl_buf_add(b, "null", 4);
		break;
	case TL_FT_SIGRESULT:
		tl_buf_addc(b, '"');
		tl_buf_adds(b, tl_signal_result_name((uint32_t)v->i));
		tl_buf_addc(b, '"');
		break;
	case TL_FT_ADDR:
		format_addr(v, ip, sizeof(ip));
		tl_buf_add_json_str(b, ip, strlen(ip));
		break;
	case TL_FT_ENDPOINT:
		format_addr(v, ip, sizeof(ip));
		if (strchr(ip, ':'))
			snprintf(tmp, sizeof(tmp), "[%s]:%u", ip, v->port);
		else
			snprintf(tmp, sizeof(tmp), "%s:%u", ip, v->port);
		tl_buf_add_json_str(b, tmp, strlen(tmp));
		break;
	case TL_FT_TIME:
		tl_buf_addc(b, '"');
		add_time(b, v->i);
		tl_buf_addc(b, '"');
		break;
	}
}

void tl_event_append_json(const struct tl_event *ev, bool with_ids, struct tl_buf *out)
{
	const struct tl_kind_info *k = &tl_kinds[(unsigned)ev->kind < TL_KIND_MAX ? ev->kind : 0];

	tl_buf_add(out, "{\"time\":\"", 9);
	add_time(out, ev->time_ns);
	tl_buf_add(out, "\",\"source\":\"", 12);
	tl_buf_adds(out, tl_source_name(ev->source));
	tl_buf_add(out, "\",\"type\":\"", 10);
	tl_buf_adds(out, tl_kind_name(ev->kind));
	tl_buf_add(out, "\",\"container\":", 14);
	add_str_or_null(out, ev->container);
	if (with_ids) {
		add_key(out, "podUid");
		add_str_or_null(out, ev->pod_uid);
		add_key(out, "containerId");
		add_str_or_null(out, ev->container_id);
	}
	for (unsigned i = 0; i < k->n_fields; i++) {
		if (!ev->v[i].set) {
			/* An ID is always said, null when the event has none
			 * (http.request's requestId: the request carried no
			 * ID header), so such an event needs no extra field. */
			if (k->fields[i].type == TL_FT_ID) {
				add_key(out, k->fields[i].name);
				tl_buf_add(out, "null", 4);
			}
			continue;
		}
		add_key(out, k->fields[i].name);
		add_value(out, ev, i);
	}
	if (ev->flags & TL_EF_SANDBOX)
		tl_buf_add(out, ",\"sandbox\":true", 15);
	if (ev->extra) {
		json_object_object_foreach(ev->extra, key, val)
		{
			const char *s;
			size_t n;

			if (is_envelope_key(key) || tl_kind_field(ev->kind, key) >= 0)
				continue;
			s = json_object_to_json_string_length(val, JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE, &n);
			add_key(out, key);
			tl_buf_add(out, s ? s : "null", s ? n : 4);
		}
	}
	tl_buf_addc(out, '}');
}

struct json_object *tl_event_to_json(const struct tl_event *ev, bool with_ids)
{
	struct tl_buf b;
	struct json_object *o = NULL;

	tl_buf_init(&b, 0);
	tl_event_append_json(ev, with_ids, &b);
	if (!b.err)
		o = json_tokener_parse(b.p);
	tl_buf_free(&b);
	return o;
}

/* ---- the decoder ---- */

static int copy_str(struct json_object *obj, const char *key, char *dst, size_t len)
{
	struct json_object *v;
	const char *s;

	if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null)) {
		dst[0] = '\0';
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	s = json_object_get_string(v);
	if (strlen(s) >= len)
		return -EINVAL;
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

static int set_from_json(struct tl_event *ev, const char *key, struct json_object *val)
{
	int slot = tl_kind_field(ev->kind, key);
	enum tl_ftype t;

	if (slot < 0)
		return set_extra(ev, key, json_object_get(val), true);
	t = tl_kinds[ev->kind].fields[slot].type;
	switch (json_object_get_type(val)) {
	case json_type_string:
		if (t == TL_FT_INT || t == TL_FT_BOOL)
			return -EINVAL;
		return tl_event_set_text(ev, (unsigned)slot, json_object_get_string(val));
	case json_type_int:
		if (t != TL_FT_INT)
			return -EINVAL;
		return tl_event_set_i(ev, (unsigned)slot, json_object_get_int64(val));
	case json_type_boolean:
		if (t != TL_FT_BOOL)
			return -EINVAL;
		return tl_event_set_i(ev, (unsigned)slot, json_object_get_boolean(val));
	case json_type_null:
		if (t == TL_FT_SIGNAME)
			return tl_event_set_i(ev, (unsigned)slot, 0);
		return 0; /* absent */
	default:
		return -EINVAL;
	}
}

int tl_event_from_json(struct json_object *obj, struct tl_event *ret)
{
	struct json_object *v;
	enum tl_source src;
	int64_t t;
	int r;

	if (!obj || !json_object_is_type(obj, json_type_object))
		return -EINVAL;
	if (!json_object_object_get_ex(obj, "time", &v) ||
	    tl_time_parse(json_object_get_string(v), &t) < 0)
		return -EINVAL;
	if (!json_object_object_get_ex(obj, "source", &v) ||
	    tl_source_parse(json_object_get_string(v), &src) < 0)
		return -EINVAL;
	if (!json_object_object_get_ex(obj, "type", &v) || !json_object_is_type(v, json_type_string) ||
	    tl_kind_parse(json_object_get_string(v)) == TL_KIND_NONE)
		return -EINVAL;
	/* ret is touched only once the envelope is valid. */
	r = tl_event_init(ret, src, json_object_get_string(v), t);
	if (r < 0)
		return r;
	if (copy_str(obj, "container", ret->container, sizeof(ret->container)) < 0 ||
	    copy_str(obj, "podUid", ret->pod_uid, sizeof(ret->pod_uid)) < 0 ||
	    copy_str(obj, "containerId", ret->container_id, sizeof(ret->container_id)) < 0)
		goto bad;
	if (json_object_object_get_ex(obj, "sandbox", &v) && json_object_get_boolean(v))
		ret->flags |= TL_EF_SANDBOX;
	json_object_object_foreach(obj, key, val)
	{
		if (is_envelope_key(key))
			continue;
		if (set_from_json(ret, key, val) < 0)
			goto bad;
	}
	return 0;
bad:
	tl_event_clear(ret);
	return -EINVAL;
}

int tl_event_extra_to_slots(struct tl_event *ev)
{
	struct json_object *extra = ev->extra, *keep;
	int r = 0;

	if (!extra)
		return 0;
	keep = json_object_new_object();
	if (!keep)
		return -ENOMEM;
	ev->extra = NULL;
	json_object_object_foreach(extra, key, val)
	{
		int slot = tl_kind_field(ev->kind, key);

		if (slot >= 0 && ev->v[slot].set)
			continue; /* the slot's own value wins */
		if (slot >= 0)
			r = set_from_json(ev, key, val);
		else if (json_object_object_add(keep, key, json_object_get(val)) < 0)
			r = -ENOMEM;
		if (r < 0)
			break;
	}
	json_object_put(extra);
	if (r == 0 && json_object_object_length(keep) > 0 && !ev->extra)
		ev->extra = keep;
	else
		json_object_put(keep);
	return r;
}
