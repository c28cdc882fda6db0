/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "access-log.h"
#include "clock.h"

const char *tl_access_format_name(enum tl_access_format f)
{
	switch (f) {
	case TL_ACCESS_ENVOY:
		return "envoy";
	case TL_ACCESS_ISTIO:
		return "istio";
	case TL_ACCESS_ISTIO_JSON:
		return "istio-json";
	}
	return "unknown";
}

/* Text records are a sequence of fields: [bracketed], "quoted" (Envoy does
 * not escape quotes inside them, so a quoted field ends at a quote followed
 * by a space or the end of the line) or bare words. */
#define MAX_FIELDS 32

struct field {
	const char *p;
	size_t n;
	char kind; /* '[', '"' or 'w' */
};

static int split_fields(const char *s, size_t len, struct field *f, int max)
{
	size_t i = 0;
	int n = 0;

	while (i < len) {
		while (i < len && s[i] == ' ')
			i++;
		if (i >= len)
			break;
		if (n == max)
			return -E2BIG;
		if (s[i] == '[') {
			const char *e = memchr(s + i, ']', len - i);

			if (!e)
				return -EINVAL;
			f[n].p = s + i + 1;
			f[n].n = (size_t)(e - s - i - 1);
			f[n].kind = '[';
			i = (size_t)(e - s) + 1;
		} else if (s[i] == '"') {
			size_t j = i + 1;

			while (j < len && !(s[j] == '"' && (j + 1 == len || s[j + 1] == ' ')))
				j++;
			if (j >= len)
				return -EINVAL;
			f[n].p = s + i + 1;
			f[n].n = j - i - 1;
			f[n].kind = '"';
			i = j + 1;
		} else {
			size_t j = i;

			while (j < len && s[j] != ' ')
				j++;
			f[n].p = s + i;
			f[n].n = j - i;
			f[n].kind = 'w';
			i = j;
		}
		n++;
	}
	return n;
}

/* Copies a field; "-" (Envoy's empty) becomes "". Control bytes become '?'. */
static void put(char *dst, size_t cap, const char *src, size_t n)
{
	size_t k;

	if (n == 1 && src[0] == '-')
		n = 0;
	k = n < cap - 1 ? n : cap - 1;
	for (size_t i = 0; i < k; i++)
		dst[i] = ((unsigned char)src[i] < 0x20 || src[i] == 0x7f) ? '?' : src[i];
	dst[k] = '\0';
}

static int parse_int(const char *p, size_t n, int64_t max, int64_t *ret)
{
	int64_t x = 0;

	if (n == 0 || n > 18)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EINVAL;
		x = x * 10 + (p[i] - '0');
	}
	if (x > max)
		return -EINVAL;
	*ret = x;
	return 0;
}

static int parse_time(const char *p, size_t n, int64_t *ret)
{
	char buf[64];

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return tl_time_parse(buf, ret);
}

static enum tl_access_direction cluster_direction(const char *c)
{
	if (strncmp(c, "inbound|", 8) == 0)
		return TL_DIR_INBOUND;
	if (strncmp(c, "outbound|", 9) == 0)
		return TL_DIR_OUTBOUND;
	return TL_DIR_UNKNOWN;
}

/* "METHOD PATH PROTOCOL" */
static int parse_request_line(const struct field *f, struct tl_access_record *r)
{
	const char *p = f->p, *e = f->p + f->n, *sp1, *sp2;

	sp1 = memchr(p, ' ', f->n);
	if (!sp1)
		return -EINVAL;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(e - sp1 - 1));
	if (!sp2 || memchr(sp2 + 1, ' ', (size_t)(e - sp2 - 1)))
		return -EINVAL;
	/* TCP proxy records are "- - -": no HTTP request. */
	if (sp1 - p == 1 && p[0] == '-')
		return -EINVAL;
	if (sp1 - p >= (long)sizeof(r->method))
		return -EINVAL;
	for (const char *q = p; q < sp1; q++)
		if (*q < 'A' || *q > 'Z')
			return -EINVAL;
	put(r->method, sizeof(r->method), p, (size_t)(sp1 - p));
	put(r->path, sizeof(r->path), sp1 + 1, (size_t)(sp2 - sp1 - 1));
	put(r->protocol, sizeof(r->protocol), sp2 + 1, (size_t)(e - sp2 - 1));
	return 0;
}

static int parse_text(const char *s, size_t len, struct tl_access_record *r)
{
	struct field f[MAX_FIELDS];
	int n = split_fields(s, len, f, MAX_FIELDS), base;
	int64_t v;

	/* both formats: [start] "request" code flags ... */
	if (n < 13 || f[0].kind != '[' || f[1].kind != '"' || f[2].kind != 'w' || f[3].kind != 'w')
		return -EINVAL;
	if (parse_time(f[0].p, f[0].n, &r->start_ns) < 0 || parse_request_line(&f[1], r) < 0 ||
	    parse_int(f[2].p, f[2].n, 999, &v) < 0)
		return -EINVAL;
	r->status = (int)v;
	put(r->flags, sizeof(r->flags), f[3].p, f[3].n);
	/* Istio's format has two bare fields and a quoted one before the byte
	 * counts; Envoy's default goes straight to them. */
	if (n >= 18 && f[4].kind == 'w' && f[5].kind == 'w' && f[6].kind == '"') {
		r->format = TL_ACCESS_ISTIO;
		put(r->details, sizeof(r->details), f[4].p, f[4].n);
		base = 7;
	} else {
		r->format = TL_ACCESS_ENVOY;
		base = 4;
	}
	/* BYTES_RECEIVED BYTES_SENT DURATION UPSTREAM_SERVICE_TIME "XFF" "UA" "ID" "AUTH" "UPSTREAM" */
	if (n < base + 9)
		return -EINVAL;
	for (int i = 0; i < 4; i++)
		if (f[base + i].kind != 'w')
			return -EINVAL;
	for (int i = 4; i < 9; i++)
		if (f[base + i].kind != '"')
			return -EINVAL;
	r->duration_ms = -1;
	if (parse_int(f[base + 2].p, f[base + 2].n, INT64_MAX / 2, &v) == 0)
		r->duration_ms = v;
	put(r->request_id, sizeof(r->request_id), f[base + 6].p, f[base + 6].n);
	put(r->authority, sizeof(r->authority), f[base + 7].p, f[base + 7].n);
	put(r->upstream_host, sizeof(r->upstream_host), f[base + 8].p, f[base + 8].n);
	if (r->format == TL_ACCESS_ISTIO && n > base + 9 && f[base + 9].kind == 'w') {
		put(r->upstream_cluster, sizeof(r->upstream_cluster), f[base + 9].p, f[base + 9].n);
		r->direction = cluster_direction(r->upstream_cluster);
	}
	return 0;
}

/* A JSON member as text: strings as they are, numbers printed; null and
 * "-" as "". Returns false when absent. */
static bool json_str(struct json_object *o, const char *key, char *dst, size_t cap)
{
	struct json_object *v;
	const char *s;

	dst[0] = '\0';
	if (!json_object_object_get_ex(o, key, &v) || !v)
		return false;
	switch (json_object_get_type(v)) {
	case json_type_string:
	case json_type_int:
	case json_type_double:
		s = json_object_get_string(v);
		put(dst, cap, s, strlen(s));
		return true;
	default:
		return false;
	}
}

static int parse_json(const char *s, size_t len, struct tl_access_record *r)
{
	struct json_tokener *tok = json_tokener_new_ex(16);
	struct json_object *o;
	char buf[64];
	int64_t v;
	int ret = -EINVAL;

	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, s, (int)len);
	/* One object and nothing but blanks after it. */
	if (!o || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(o, json_type_object))
		goto out;
	for (size_t i = json_tokener_get_parse_end(tok); i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			goto out;
	r->format = TL_ACCESS_ISTIO_JSON;
	if (!json_str(o, "method", r->method, sizeof(r->method)) || !r->method[0] ||
	    !tl_access_method_ok(r->method))
		goto out;
	json_str(o, "path", r->path, sizeof(r->path));
	json_str(o, "protocol", r->protocol, sizeof(r->protocol));
	if (json_str(o, "start_time", buf, sizeof(buf)) && buf[0] &&
	    parse_time(buf, strlen(buf), &r->start_ns) < 0)
		goto out;
	if (!json_str(o, "response_code", buf, sizeof(buf)) ||
	    parse_int(buf, strlen(buf), 999, &v) < 0)
		goto out;
	r->status = (int)v;
	json_str(o, "response_flags", r->flags, sizeof(r->flags));
	json_str(o, "response_code_details", r->details, sizeof(r->details));
	json_str(o, "request_id", r->request_id, sizeof(r->request_id));
	json_str(o, "authority", r->authority, sizeof(r->authority));
	json_str(o, "upstream_host", r->upstream_host, sizeof(r->upstream_host));
	json_str(o, "upstream_cluster", r->upstream_cluster, sizeof(r->upstream_cluster));
	r->direction = cluster_direction(r->upstream_cluster);
	r->duration_ms = -1;
	if (json_str(o, "duration", buf, sizeof(buf)) && parse_int(buf, strlen(buf), INT64_MAX / 2, &v) == 0)
		r->duration_ms = v;
	ret = 0;
out:
	json_object_put(o);
	json_tokener_free(tok);
	return ret;
}

bool tl_access_method_ok(const char *m)
{
	if (!*m)
		return false;
	for (; *m; m++)
		if (*m < 'A' || *m > 'Z')
			return false;
	return true;
}

int tl_access_parse(const char *line, size_t len, struct tl_access_record *ret)
{
	struct tl_access_record r;
	int k;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (len == 0 || len > TL_ACCESS_LINE_MAX)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.duration_ms = -1;
	k = line[0] == '{' ? parse_json(line, len, &r) : parse_text(line, len, &r);
	if (k < 0)
		return k;
	*ret = r;
	return 0;
}
