/* SPDX-License-Identifier: Apache-2.0 */
/* The compact form of an event's fields (event.h describes the layout). */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "event.h"
#include "strtab.h"

/* Inlined into the packer: a call per field costs 6 % of the store's
 * instructions per event (bench-timeline under callgrind). */
static inline size_t vput(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

size_t tl_varint_put(uint8_t *p, uint64_t v)
{
	return vput(p, v);
}

/* A string slot's bytes (the slot is set and of a string type). */
static inline const char *val_s(const struct tl_event *ev, const struct tl_value *v)
{
	return v->owned ? ev->sbuf + v->soff : v->s;
}

size_t tl_varint_get(const uint8_t *p, size_t len, uint64_t *ret)
{
	uint64_t v = 0;

	for (size_t i = 0; i < len && i < 10; i++) {
		v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			*ret = v;
			return i + 1;
		}
	}
	return 0;
}

/* A request ID shaped like a UUID (8-4-4-4-12 lowercase hex, what Envoy
 * and most clients generate) is kept as its 16 bytes: an http.request's
 * largest field, 37 bytes as text. */
/* Hex digit value + 1 of a lowercase digit, 0 for anything else. */
static const uint8_t hex1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
	['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
	['f'] = 16,
};

static bool uuid_pack(const char *s, size_t len, uint8_t out[16])
{
	const uint8_t *u = (const uint8_t *)s;
	size_t o = 0;

	if (len != 36 || u[8] != '-' || u[13] != '-' || u[18] != '-' || u[23] != '-')
		return false;
	for (size_t i = 0; i < 36; i += 2) {
		uint8_t hi, lo;

		if (i == 8 || i == 13 || i == 18 || i == 23)
			i++;
		hi = hex1[u[i]];
		lo = hex1[u[i + 1]];
		if (!hi || !lo)
			return false;
		out[o++] = (uint8_t)((hi - 1) << 4 | (lo - 1));
	}
	return true;
}

static void uuid_format(const uint8_t in[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (size_t i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[in[i] >> 4];
		out[o++] = hex[in[i] & 15];
	}
	out[36] = '\0';
}

/* Worst case per slot: 1 + 16 + 2 bytes (ENDPOINT) or 10 (varint). */
_Static_assert(TL_PAYLOAD_MAX >= 10 + 10 + TL_FIELDS_MAX * 19 + (2 + TL_ID_INLINE_MAX),
	       "payload bound: one inline ID per kind at most");
/* the present-mask is one varint of up to 64 bits */
_Static_assert(TL_FIELDS_MAX <= 64, "a slot per bit of the mask");

int tl_event_pack(const struct tl_event *ev, struct tl_strtab *tab, uint8_t *buf,
		  uint32_t *ret_flags)
{
	const struct tl_kind_info *k;
	uint64_t mask = 0;
	uint32_t flags = ev->flags & ~(uint32_t)TL_EF_EXTRA_BLOB;
	int64_t extra_id = -1;
	size_t n;

	if ((unsigned)ev->kind >= TL_KIND_MAX || !tl_kinds[ev->kind].name)
		return -EINVAL;
	k = &tl_kinds[ev->kind];
	for (unsigned i = 0; i < k->n_fields; i++)
		if (ev->v[i].set)
			mask |= 1ull << i;
	if (ev->extra && json_object_object_length(ev->extra) > 0) {
		size_t len;
		const char *s = json_object_to_json_string_length(
			ev->extra, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);

		if (!s)
			return -ENOMEM;
		extra_id = tl_strtab_intern(tab, s, len);
		if (extra_id < 0)
			return (int)extra_id;
		flags |= TL_EF_EXTRA_BLOB;
	}
	n = vput(buf, mask);
	if (extra_id >= 0)
		n += vput(buf + n, (uint64_t)extra_id);
	for (unsigned i = 0; i < k->n_fields; i++) {
		const struct tl_value *v = &ev->v[i];
		int64_t id;

		if (!v->set)
			continue;
		switch (k->fields[i].type) {
		case TL_FT_INT:
		case TL_FT_SIGNAME:
			n += vput(buf + n, tl_zigzag(v->i));
			break;
		case TL_FT_TIME:
			/* near the event's own time: a few bytes, not nine */
			n += vput(buf + n, tl_zigzag((int64_t)((uint64_t)v->i -
								      (uint64_t)ev->time_ns)));
			break;
		case TL_FT_BOOL:
		case TL_FT_SIGRESULT:
			buf[n++] = (uint8_t)v->i;
			break;
		case TL_FT_ID:
			if (uuid_pack(val_s(ev, v), v->slen, buf + n + 1)) {
				buf[n] = 0; /* 0: a UUID's 16 bytes follow */
				n += 17;
				break;
			}
			if (v->slen <= TL_ID_INLINE_MAX) {
				n += vput(buf + n, ((uint64_t)v->slen << 1) | 1);
				memcpy(buf + n, val_s(ev, v), v->slen);
				n += v->slen;
				buf[n++] = '\0';
				break;
			}
			id = tl_strtab_intern(tab, val_s(ev, v), v->slen);
			if (id < 0)
				return (int)id;
			n += vput(buf + n, ((uint64_t)id << 2) | 2);
			break;
		case TL_FT_STR:
			id = tl_strtab_intern(tab, val_s(ev, v), v->slen);
			if (id < 0)
				return (int)id;
			n += vput(buf + n, (uint64_t)id);
			break;
		case TL_FT_ADDR:
		case TL_FT_ENDPOINT:
			buf[n++] = v->family == AF_INET6 ? 6 : 4;
			memcpy(buf + n, v->addr, v->family == AF_INET6 ? 16 : 4);
			n += v->family == AF_INET6 ? 16 : 4;
			if (k->fields[i].type == TL_FT_ENDPOINT) {
				buf[n++] = (uint8_t)(v->port >> 8);
				buf[n++] = (uint8_t)v->port;
			}
			break;
		}
	}
	*ret_flags = flags;
	return (int)n;
}

int tl_event_unpack(struct tl_event *ev, const uint8_t *p, size_t len, uint32_t flags,
		    const struct tl_strtab *tab)
{
	const struct tl_kind_info *k = &tl_kinds[ev->kind];
	uint64_t mask, x;
	size_t n, o;

	n = tl_varint_get(p, len, &mask);
	if (!n || (mask >> k->n_fields))
		return -EINVAL;
	o = n;
	ev->flags = flags & ~(uint32_t)TL_EF_EXTRA_BLOB;
	if (flags & TL_EF_EXTRA_BLOB) {
		const char *s;

		n = tl_varint_get(p + o, len - o, &x);
		if (!n || x > UINT32_MAX || !(s = tl_strtab_get(tab, (uint32_t)x, NULL)))
			return -EINVAL;
		o += n;
		ev->extra = json_tokener_parse(s);
		if (!ev->extra || !json_object_is_type(ev->extra, json_type_object)) {
			json_object_put(ev->extra);
			ev->extra = NULL;
			return -EINVAL;
		}
	}
	for (unsigned i = 0; i < k->n_fields; i++) {
		struct tl_value *v = &ev->v[i];
		size_t alen;

		if (!(mask & (1ull << i)))
			continue;
		switch (k->fields[i].type) {
		case TL_FT_INT:
		case TL_FT_TIME:
		case TL_FT_SIGNAME:
			n = tl_varint_get(p + o, len - o, &x);
			if (!n)
				goto bad;
			o += n;
			v->i = tl_unzigzag(x);
			if (k->fields[i].type == TL_FT_TIME)
				v->i = (int64_t)((uint64_t)v->i + (uint64_t)ev->time_ns);
			break;
		case TL_FT_ID: {
			size_t slen;
			const char *s;

			n = tl_varint_get(p + o, len - o, &x);
			if (!n)
				goto bad;
			o += n;
			if (x == 0) {
				/* a UUID: its text goes into the event's own buffer */
				if (len - o < 16 || sizeof(ev->sbuf) - ev->sused < 37)
					goto bad;
				uuid_format(p + o, ev->sbuf + ev->sused);
				o += 16;
				v->owned = 1;
				v->soff = (uint32_t)ev->sused;
				v->slen = 36;
				ev->sused += 37;
				v->set = 1;
				continue;
			} else if (x & 1) {
				slen = (size_t)(x >> 1);
				if (slen > TL_ID_INLINE_MAX || len - o < slen + 1 || p[o + slen] != '\0' ||
				    memchr(p + o, '\0', slen))
					goto bad;
				s = (const char *)p + o;
				o += slen + 1;
			} else if (!(x & 2) || (x >> 2) > UINT32_MAX ||
				   !(s = tl_strtab_get(tab, (uint32_t)(x >> 2), &slen))) {
				goto bad;
			}
			v->owned = 0;
			v->s = s;
			v->slen = (uint32_t)slen;
			break;
		}
		case TL_FT_BOOL:
		case TL_FT_SIGRESULT:
			if (o >= len)
				goto bad;
			v->i = p[o++];
			break;
		case TL_FT_STR: {
			size_t slen;
			const char *s;

			n = tl_varint_get(p + o, len - o, &x);
			if (!n || x > UINT32_MAX || !(s = tl_strtab_get(tab, (uint32_t)x, &slen)))
				goto bad;
			o += n;
			v->owned = 0;
			v->s = s;
			v->slen = (uint32_t)slen;
			break;
		}
		case TL_FT_ADDR:
		case TL_FT_ENDPOINT:
			if (o >= len || (p[o] != 4 && p[o] != 6))
				goto bad;
			v->family = p[o] == 6 ? AF_INET6 : AF_INET;
			alen = p[o] == 6 ? 16 : 4;
			o++;
			if (len - o < alen + (k->fields[i].type == TL_FT_ENDPOINT ? 2 : 0))
				goto bad;
			memset(v->addr, 0, 16);
			memcpy(v->addr, p + o, alen);
			o += alen;
			if (k->fields[i].type == TL_FT_ENDPOINT) {
				v->port = (uint16_t)(p[o] << 8 | p[o + 1]);
				o += 2;
			}
			break;
		}
		v->set = 1;
	}
	if (o != len)
		goto bad;
	if (ev->extra && tl_event_extra_to_slots(ev) < 0)
		goto bad;
	return 0;
bad:
	json_object_put(ev->extra);
	ev->extra = NULL;
	for (unsigned i = 0; i < TL_FIELDS_MAX; i++)
		ev->v[i].set = 0;
	return -EINVAL;
}
