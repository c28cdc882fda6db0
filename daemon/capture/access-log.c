/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "access-log.h"
#include "clock.h"
#include "metrics.h"

const char *tl_access_format_name(enum tl_access_format f)
{
	switch (f) {
	case TL_ACCESS_ENVOY:
		return "envoy";
	case TL_ACCESS_ISTIO:
		return "istio";
	case TL_ACCESS_ISTIO_JSON:
		return "istio-json";
	case TL_ACCESS_CONFIGURED:
		return "configured";
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

/* RFC 3339, and the offset without its colon that a START_TIME(...%z)
 * prints ("2022-03-11T09:58:37.960+0000"). */
static int parse_time(const char *p, size_t n, int64_t *ret)
{
	char buf[64];

	if (n == 0 || n >= sizeof(buf) - 1)
		return -EINVAL;
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (n > 5 && (p[n - 5] == '+' || p[n - 5] == '-')) {
		bool digits = true;

		for (size_t i = n - 4; i < n; i++)
			digits = digits && p[i] >= '0' && p[i] <= '9';
		if (digits) {
			memcpy(buf + n - 2, ":", 1);
			memcpy(buf + n - 1, p + n - 2, 2);
			buf[n + 1] = '\0';
		}
	}
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
		return -EPROTO;
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


/* ---- typed values ---- */

/* An address as Envoy prints one: "10.1.2.3:8080", "[fd00::1]:8080", or
 * the address alone. Anything else ("envoy://internal_client_address/",
 * a Unix socket path) is not a peer. */
static bool addr_ok(const char *p, size_t n)
{
	bool digit = false;

	if (n == 0 || n >= 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];

		if (c >= '0' && c <= '9')
			digit = true;
		else if (!((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '.' || c == ':' ||
			   c == '[' || c == ']'))
			return false;
	}
	return digit;
}

static void put_peer(char *dst, size_t cap, const char *p, size_t n)
{
	if (addr_ok(p, n))
		put(dst, cap, p, n);
}

/* gRPC's status as Envoy prints it: %GRPC_STATUS% in CamelCase (the
 * default), SNAKE_CASE or a number (GRPC_STATUS(NUMBER)). -1 when absent. */
static int grpc_code(const char *p, size_t n)
{
	static const char *const camel[] = {
		"OK",		  "Canceled",	      "Unknown",	  "InvalidArgument",
		"DeadlineExceeded", "NotFound",      "AlreadyExists",	  "PermissionDenied",
		"ResourceExhausted", "FailedPrecondition", "Aborted",	  "OutOfRange",
		"Unimplemented",   "Internal",	      "Unavailable",	  "DataLoss",
		"Unauthenticated",
	};
	static const char *const snake[] = {
		"OK",		  "CANCELLED",	      "UNKNOWN",	  "INVALID_ARGUMENT",
		"DEADLINE_EXCEEDED", "NOT_FOUND",     "ALREADY_EXISTS",	  "PERMISSION_DENIED",
		"RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",	  "OUT_OF_RANGE",
		"UNIMPLEMENTED",   "INTERNAL",	      "UNAVAILABLE",	  "DATA_LOSS",
		"UNAUTHENTICATED",
	};
	int64_t v;

	if (n == 0 || (n == 1 && p[0] == '-'))
		return -1;
	if (parse_int(p, n, 99, &v) == 0)
		return (int)v;
	for (int i = 0; i < 17; i++)
		if ((strlen(camel[i]) == n && strncmp(camel[i], p, n) == 0) ||
		    (strlen(snake[i]) == n && strncmp(snake[i], p, n) == 0))
			return i;
	if (n == 8 && strncmp(p, "CANCELED", 8) == 0)
		return 1;
	return -1;
}

/* A number field: digits, or "-" for none (-1). */
static int num_or_dash(const char *p, size_t n, int64_t max, int64_t *ret)
{
	if (n == 1 && p[0] == '-') {
		*ret = -1;
		return 0;
	}
	return parse_int(p, n, max, ret);
}

/* ---- configured formats: Envoy command operators ---- */

enum op {
	OP_SKIP, /* an operator the record does not use, or one it does not know */
	OP_START_TIME,
	OP_METHOD,
	OP_PATH,
	OP_PROTOCOL,
	OP_STATUS,
	OP_FLAGS,
	OP_DETAILS,
	OP_REQUEST_ID,
	OP_AUTHORITY,
	OP_UPSTREAM_HOST,
	OP_UPSTREAM_CLUSTER,
	OP_DURATION,
	OP_PEER,
	OP_PEER_DIRECT,
	OP_GRPC_STATUS,
	OP_BYTES_RX,
	OP_BYTES_TX,
};

struct tok {
	bool lit;
	enum op op;
	char *text; /* literal */
	size_t len;
};

struct seq {
	struct tok *t;
	int n;
};

struct jkey {
	char *key;
	struct seq val;
};

struct tl_access_fmt {
	bool json;
	struct seq text;
	struct jkey *keys;
	int nkeys;
	bool has_method, has_status;
};

#define FORMAT_MAX 8192
#define FORMAT_TOKENS 128

static enum op header_op(const char *h, size_t n)
{
	static const struct {
		const char *name;
		enum op op;
	} map[] = {
		{":method", OP_METHOD},
		{":path", OP_PATH},
		{"x-envoy-original-path", OP_PATH},
		{":authority", OP_AUTHORITY},
		{"host", OP_AUTHORITY},
		{"x-envoy-original-host", OP_AUTHORITY},
		{"x-request-id", OP_REQUEST_ID},
		{"grpc-status", OP_GRPC_STATUS},
	};
	char low[32];

	if (n >= sizeof(low))
		return OP_SKIP;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)(h[i] >= 'A' && h[i] <= 'Z' ? h[i] + 32 : h[i]);
	low[n] = '\0';
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].name, low) == 0)
			return map[i].op;
	return OP_SKIP;
}

static enum op operator_op(const char *name, size_t nl, const char *arg, size_t al)
{
	static const struct {
		const char *name;
		enum op op;
	} map[] = {
		{"START_TIME", OP_START_TIME},
		{"PROTOCOL", OP_PROTOCOL},
		{"RESPONSE_CODE", OP_STATUS},
		{"RESPONSE_FLAGS", OP_FLAGS},
		{"RESPONSE_FLAGS_LONG", OP_FLAGS},
		{"RESPONSE_CODE_DETAILS", OP_DETAILS},
		{"DURATION", OP_DURATION},
		{"UPSTREAM_HOST", OP_UPSTREAM_HOST},
		{"UPSTREAM_CLUSTER", OP_UPSTREAM_CLUSTER},
		{"UPSTREAM_CLUSTER_RAW", OP_UPSTREAM_CLUSTER},
		{"DOWNSTREAM_REMOTE_ADDRESS", OP_PEER},
		{"DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT", OP_PEER},
		{"DOWNSTREAM_DIRECT_REMOTE_ADDRESS", OP_PEER_DIRECT},
		{"DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT", OP_PEER_DIRECT},
		{"GRPC_STATUS", OP_GRPC_STATUS},
		{"GRPC_STATUS_NUMBER", OP_GRPC_STATUS},
		{"BYTES_RECEIVED", OP_BYTES_RX},
		{"BYTES_SENT", OP_BYTES_TX},
		{"METHOD", OP_METHOD},
	};

	if ((nl == 3 && memcmp(name, "REQ", 3) == 0) ||
	    (nl == 17 && memcmp(name, "REQ_WITHOUT_QUERY", 17) == 0) ||
	    (nl == 4 && memcmp(name, "RESP", 4) == 0) || (nl == 7 && memcmp(name, "TRAILER", 7) == 0)) {
		/* X?Y: the main header decides what the value is. */
		const char *q = memchr(arg, '?', al);
		enum op op = header_op(arg, q ? (size_t)(q - arg) : al);

		if (op == OP_SKIP && q)
			op = header_op(q + 1, al - (size_t)(q + 1 - arg));
		/* A request's grpc-status is not the call's. */
		if (op == OP_GRPC_STATUS && name[0] == 'R' && name[2] == 'Q')
			op = OP_SKIP;
		if (op != OP_GRPC_STATUS && name[0] != 'R')
			op = OP_SKIP;
		if (op != OP_GRPC_STATUS && nl == 4)
			op = OP_SKIP;
		return op;
	}
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strlen(map[i].name) == nl && memcmp(map[i].name, name, nl) == 0)
			return map[i].op;
	return OP_SKIP;
}

static void seq_free(struct seq *q)
{
	for (int i = 0; i < q->n; i++)
		free(q->t[i].text);
	free(q->t);
	q->t = NULL;
	q->n = 0;
}

static int seq_add(struct seq *q, bool lit, enum op op, const char *text, size_t len)
{
	struct tok *t;

	if (q->n >= FORMAT_TOKENS)
		return -E2BIG;
	/* Adjacent literals are one. */
	if (lit && q->n && q->t[q->n - 1].lit) {
		struct tok *p = &q->t[q->n - 1];
		char *m = realloc(p->text, p->len + len + 1);

		if (!m)
			return -ENOMEM;
		memcpy(m + p->len, text, len);
		p->len += len;
		m[p->len] = '\0';
		p->text = m;
		return 0;
	}
	t = realloc(q->t, (size_t)(q->n + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	q->t = t;
	t = &q->t[q->n];
	memset(t, 0, sizeof(*t));
	t->lit = lit;
	t->op = op;
	if (lit) {
		t->text = strndup(text, len);
		if (!t->text)
			return -ENOMEM;
		t->len = len;
	}
	q->n++;
	return 0;
}

static bool is_op_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* "%NAME%", "%NAME(ARG)%", "%NAME(ARG):LEN%"; everything else is text. */
static int compile_seq(const char *s, size_t len, struct seq *q, char *err, size_t errlen)
{
	size_t i = 0, lit = 0;
	int r;

	while (i < len) {
		size_t nb, ne, ab = 0, ae = 0, j;

		if (s[i] != '%') {
			i++;
			continue;
		}
		nb = i + 1;
		ne = nb;
		while (ne < len && is_op_char(s[ne]))
			ne++;
		j = ne;
		if (ne == nb) {
			snprintf(err, errlen, "a '%%' at offset %zu starts no command operator", i);
			return -EINVAL;
		}
		if (j < len && s[j] == '(') {
			const char *close = memchr(s + j, ')', len - j);

			if (!close) {
				snprintf(err, errlen, "%%%.*s( at offset %zu has no ')'", (int)(ne - nb),
					 s + nb, i);
				return -EINVAL;
			}
			ab = j + 1;
			ae = (size_t)(close - s);
			j = ae + 1;
		}
		if (j < len && s[j] == ':')
			for (j++; j < len && s[j] >= '0' && s[j] <= '9'; j++)
				;
		if (j >= len || s[j] != '%') {
			snprintf(err, errlen, "%%%.*s at offset %zu has no closing '%%'", (int)(ne - nb),
				 s + nb, i);
			return -EINVAL;
		}
		if (i > lit && (r = seq_add(q, true, OP_SKIP, s + lit, i - lit)) < 0)
			goto fail;
		r = seq_add(q, false, operator_op(s + nb, ne - nb, s + ab, ae - ab), NULL, 0);
		if (r < 0)
			goto fail;
		i = lit = j + 1;
	}
	/* A format ends its line with a newline; the lines read here have none. */
	while (len > lit && (s[len - 1] == '\n' || s[len - 1] == '\r'))
		len--;
	if (len >= lit + 2 && s[len - 2] == '\\' && s[len - 1] == 'n')
		len -= 2;
	if (len > lit && (r = seq_add(q, true, OP_SKIP, s + lit, len - lit)) < 0)
		goto fail;
	return 0;
fail:
	snprintf(err, errlen, r == -E2BIG ? "more than %d fields" : "out of memory", FORMAT_TOKENS);
	return r;
}

static bool seq_has(const struct seq *q, enum op op)
{
	for (int i = 0; i < q->n; i++)
		if (!q->t[i].lit && q->t[i].op == op)
			return true;
	return false;
}

static bool seq_has_ops(const struct seq *q)
{
	for (int i = 0; i < q->n; i++)
		if (!q->t[i].lit)
			return true;
	return false;
}

void tl_access_format_free(struct tl_access_fmt *f)
{
	if (!f)
		return;
	seq_free(&f->text);
	for (int i = 0; i < f->nkeys; i++) {
		free(f->keys[i].key);
		seq_free(&f->keys[i].val);
	}
	free(f->keys);
	free(f);
}

static int compile_json(struct tl_access_fmt *f, const char *spec, char *err, size_t errlen)
{
	struct json_object *o = json_tokener_parse(spec);
	int r = 0;

	if (!o || !json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "not a JSON object of keys to format strings");
		json_object_put(o);
		return -EINVAL;
	}
	f->json = true;
	json_object_object_foreach(o, key, val)
	{
		struct jkey *k;
		const char *v;

		if (!json_object_is_type(val, json_type_string))
			continue; /* nested objects and constants carry nothing read here */
		if (f->nkeys >= FORMAT_TOKENS) {
			snprintf(err, errlen, "more than %d keys", FORMAT_TOKENS);
			r = -EINVAL;
			break;
		}
		k = realloc(f->keys, (size_t)(f->nkeys + 1) * sizeof(*k));
		if (!k) {
			r = -ENOMEM;
			break;
		}
		f->keys = k;
		k = &f->keys[f->nkeys];
		memset(k, 0, sizeof(*k));
		k->key = strdup(key);
		if (!k->key) {
			r = -ENOMEM;
			break;
		}
		f->nkeys++;
		v = json_object_get_string(val);
		r = compile_seq(v, strlen(v), &k->val, err, errlen);
		if (r < 0)
			break;
		f->has_method |= seq_has(&k->val, OP_METHOD);
		f->has_status |= seq_has(&k->val, OP_STATUS);
	}
	json_object_put(o);
	if (r == 0 && f->nkeys == 0) {
		snprintf(err, errlen, "no key maps to a command operator");
		r = -EINVAL;
	}
	return r;
}

int tl_access_format_compile(const char *spec, struct tl_access_fmt **ret, char *err,
			     size_t errlen)
{
	struct tl_access_fmt *f;
	size_t len = strlen(spec), i = 0;
	int r;

	if (len == 0 || len > FORMAT_MAX) {
		snprintf(err, errlen, "a format is 1 to %d bytes", FORMAT_MAX);
		return -EINVAL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	while (i < len && (spec[i] == ' ' || spec[i] == '\t' || spec[i] == '\n'))
		i++;
	if (spec[i] == '{') {
		r = compile_json(f, spec, err, errlen);
	} else {
		r = compile_seq(spec, len, &f->text, err, errlen);
		if (r == 0 && !seq_has_ops(&f->text)) {
			snprintf(err, errlen, "no command operator (e.g. %%RESPONSE_CODE%%)");
			r = -EINVAL;
		}
		f->has_method = seq_has(&f->text, OP_METHOD);
		f->has_status = seq_has(&f->text, OP_STATUS);
	}
	if (r < 0) {
		tl_access_format_free(f);
		return r;
	}
	*ret = f;
	return 0;
}

/* One operator's value into the record. -EINVAL: the value is not what the
 * operator prints, so the line is not in this format. */
static int assign(struct tl_access_record *r, enum op op, const char *p, size_t n, bool *tcp)
{
	int64_t v;

	switch (op) {
	case OP_SKIP:
		return 0;
	case OP_START_TIME:
		/* A custom time format (START_TIME(%s)) is not an error: the
		 * runtime's time of the line stands in. */
		if (parse_time(p, n, &r->start_ns) < 0)
			r->start_ns = 0;
		return 0;
	case OP_METHOD:
		if (n == 1 && p[0] == '-') {
			*tcp = true;
			return -EINVAL;
		}
		if (n == 0 || n >= sizeof(r->method))
			return -EINVAL;
		for (size_t i = 0; i < n; i++)
			if (p[i] < 'A' || p[i] > 'Z')
				return -EINVAL;
		put(r->method, sizeof(r->method), p, n);
		return 0;
	case OP_PATH:
		put(r->path, sizeof(r->path), p, n);
		return 0;
	case OP_PROTOCOL:
		put(r->protocol, sizeof(r->protocol), p, n);
		return 0;
	case OP_STATUS:
		if (num_or_dash(p, n, 999, &v) < 0)
			return -EINVAL;
		r->status = v < 0 ? 0 : (int)v;
		return 0;
	case OP_FLAGS:
		put(r->flags, sizeof(r->flags), p, n);
		return 0;
	case OP_DETAILS:
		put(r->details, sizeof(r->details), p, n);
		return 0;
	case OP_REQUEST_ID:
		put(r->request_id, sizeof(r->request_id), p, n);
		return 0;
	case OP_AUTHORITY:
		put(r->authority, sizeof(r->authority), p, n);
		return 0;
	case OP_UPSTREAM_HOST:
		put(r->upstream_host, sizeof(r->upstream_host), p, n);
		return 0;
	case OP_UPSTREAM_CLUSTER:
		put(r->upstream_cluster, sizeof(r->upstream_cluster), p, n);
		r->direction = cluster_direction(r->upstream_cluster);
		return 0;
	case OP_DURATION:
		if (num_or_dash(p, n, INT64_MAX / 2, &v) < 0)
			return -EINVAL;
		r->duration_ms = v;
		return 0;
	case OP_PEER:
		put_peer(r->peer, sizeof(r->peer), p, n);
		return 0;
	case OP_PEER_DIRECT:
		if (!r->peer[0])
			put_peer(r->peer, sizeof(r->peer), p, n);
		return 0;
	case OP_GRPC_STATUS:
		r->grpc_status = grpc_code(p, n);
		return 0;
	case OP_BYTES_RX:
	case OP_BYTES_TX:
		if (num_or_dash(p, n, INT64_MAX / 2, &v) < 0)
			return -EINVAL;
		*(op == OP_BYTES_RX ? &r->bytes_received : &r->bytes_sent) = v;
		return 0;
	}
	return 0;
}

/* Matches s[0..len) against a compiled string: literals exactly, each
 * operator's value up to the first occurrence of the literal after it
 * (the end of the value for the last one; up to a blank between two
 * operators with nothing between them). */
static int match_seq(const struct seq *q, const char *s, size_t len, struct tl_access_record *r,
		     bool *tcp)
{
	size_t pos = 0;

	for (int i = 0; i < q->n; i++) {
		const struct tok *t = &q->t[i];
		size_t end;

		if (t->lit) {
			if (len - pos < t->len || memcmp(s + pos, t->text, t->len) != 0)
				return -EINVAL;
			pos += t->len;
			continue;
		}
		if (i + 1 == q->n) {
			end = len;
		} else if (q->t[i + 1].lit) {
			const struct tok *nx = &q->t[i + 1];
			const char *hit = NULL;

			for (size_t k = pos; k + nx->len <= len; k++) {
				if (s[k] == nx->text[0] && memcmp(s + k, nx->text, nx->len) == 0) {
					hit = s + k;
					break;
				}
			}
			if (!hit)
				return -EINVAL;
			end = (size_t)(hit - s);
		} else {
			const char *sp = memchr(s + pos, ' ', len - pos);

			end = sp ? (size_t)(sp - s) : len;
		}
		if (assign(r, t->op, s + pos, end - pos, tcp) < 0)
			return -EINVAL;
		pos = end;
	}
	return pos == len ? 0 : -EINVAL;
}

/* A JSON member as text: strings as they are, numbers printed, null as
 * "-". false when absent or of another type. */
static bool json_text(struct json_object *o, const char *key, const char **ret, size_t *ret_len)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return false;
	if (!v) {
		*ret = "-";
		*ret_len = 1;
		return true;
	}
	switch (json_object_get_type(v)) {
	case json_type_string:
	case json_type_int:
	case json_type_double:
		*ret = json_object_get_string(v);
		*ret_len = strlen(*ret);
		return true;
	default:
		return false;
	}
}

static int record_init(struct tl_access_record *r)
{
	memset(r, 0, sizeof(*r));
	r->duration_ms = -1;
	r->grpc_status = -1;
	r->bytes_received = r->bytes_sent = -1;
	return 0;
}

/* Reads a line with one configured format. Returns how many of its JSON
 * keys the line has (1 for a text format), or -EINVAL. */
static int parse_configured(const struct tl_access_fmt *f, const char *s, size_t len,
			    struct json_object *obj, struct tl_access_record *r, bool *tcp)
{
	int found = 1;

	record_init(r);
	r->format = TL_ACCESS_CONFIGURED;
	if (!f->json) {
		if (match_seq(&f->text, s, len, r, tcp) < 0)
			return -EINVAL;
	} else {
		found = 0;
		if (!obj)
			return -EINVAL;
		for (int i = 0; i < f->nkeys; i++) {
			const char *v;
			size_t vl;

			if (!json_text(obj, f->keys[i].key, &v, &vl))
				continue;
			found++;
			if (match_seq(&f->keys[i].val, v, vl, r, tcp) < 0)
				return -EINVAL;
		}
		if (!found)
			return -EINVAL;
	}
	if (f->has_method && !r->method[0])
		return -EINVAL;
	/* A format with neither a method nor a response code (a TCP
	 * listener's, like Kuma's) reads records of no HTTP request. */
	if (!f->has_method && !f->has_status) {
		*tcp = true;
		return -EINVAL;
	}
	return found;
}

/* ---- recognition by shape ---- */

static bool is_num_or_dash(const struct field *f)
{
	int64_t v;

	return f->kind == 'w' && num_or_dash(f->p, f->n, INT64_MAX / 2, &v) == 0;
}

static int parse_text(const char *s, size_t len, struct tl_access_record *r, bool *tcp)
{
	struct field f[MAX_FIELDS];
	int n = split_fields(s, len, f, MAX_FIELDS), b = 0, k, q;
	int64_t v;

	if (n < 1)
		return -EINVAL;
	/* [start] "request" code flags ...; some copies drop the time. */
	if (f[0].kind == '[') {
		if (parse_time(f[0].p, f[0].n, &r->start_ns) < 0)
			return -EINVAL;
		b = 1;
	}
	if (n < b + 12 || f[b].kind != '"' || f[b + 1].kind != 'w' || f[b + 2].kind != 'w')
		return -EINVAL;
	q = parse_request_line(&f[b], r);
	if (q == -EPROTO)
		*tcp = true;
	if (q < 0 || parse_int(f[b + 1].p, f[b + 1].n, 999, &v) < 0)
		return -EINVAL;
	r->status = (int)v;
	put(r->flags, sizeof(r->flags), f[b + 3 - 1].p, f[b + 3 - 1].n);
	/* The byte counts, duration and upstream time, then five quoted fields
	 * (XFF, user agent, request id, authority, upstream host), start up to
	 * four fields after the flags: none in Envoy's default, Istio's
	 * "mixer status" (1.1), that and "transport failure" (1.3-1.7), or
	 * details, termination details and "transport failure" (1.8+). */
	for (k = b + 3; k <= b + 7; k++) {
		bool ok = k + 9 <= n;

		for (int i = 0; ok && i < 4; i++)
			ok = is_num_or_dash(&f[k + i]);
		for (int i = 4; ok && i < 9; i++)
			ok = f[k + i].kind == '"';
		if (ok)
			break;
	}
	if (k > b + 7)
		return -EINVAL;
	r->format = k == b + 3 && n == k + 9 ? TL_ACCESS_ENVOY : TL_ACCESS_ISTIO;
	if (k > b + 3 && f[b + 3].kind == 'w')
		put(r->details, sizeof(r->details), f[b + 3].p, f[b + 3].n);
	num_or_dash(f[k].p, f[k].n, INT64_MAX / 2, &r->bytes_received);
	num_or_dash(f[k + 1].p, f[k + 1].n, INT64_MAX / 2, &r->bytes_sent);
	num_or_dash(f[k + 2].p, f[k + 2].n, INT64_MAX / 2, &r->duration_ms);
	put(r->request_id, sizeof(r->request_id), f[k + 6].p, f[k + 6].n);
	put(r->authority, sizeof(r->authority), f[k + 7].p, f[k + 7].n);
	put(r->upstream_host, sizeof(r->upstream_host), f[k + 8].p, f[k + 8].n);
	/* Istio's tail: cluster, upstream local, downstream local, downstream
	 * remote (the peer), server name, route. Empty ones may be missing
	 * altogether, so the peer must look like an address. */
	if (n > k + 9 && f[k + 9].kind == 'w') {
		put(r->upstream_cluster, sizeof(r->upstream_cluster), f[k + 9].p, f[k + 9].n);
		r->direction = cluster_direction(r->upstream_cluster);
	}
	if (n > k + 12 && f[k + 12].kind == 'w')
		put_peer(r->peer, sizeof(r->peer), f[k + 12].p, f[k + 12].n);
	return 0;
}

/* A JSON member into a field: strings as they are, numbers printed; null
 * and "-" as "". false when absent. */
static bool json_str(struct json_object *o, const char *key, char *dst, size_t cap)
{
	const char *v;
	size_t n;

	dst[0] = '\0';
	if (!json_text(o, key, &v, &n))
		return false;
	put(dst, cap, v, n);
	return true;
}

static int parse_json(struct json_object *o, struct tl_access_record *r, bool *tcp)
{
	char buf[64];
	const char *v;
	size_t vl;
	int64_t x;

	r->format = TL_ACCESS_ISTIO_JSON;
	if (!json_str(o, "method", r->method, sizeof(r->method)) || !r->method[0]) {
		if (json_text(o, "method", &v, &vl) && vl == 1 && v[0] == '-')
			*tcp = true;
		return -EINVAL;
	}
	if (!tl_access_method_ok(r->method))
		return -EINVAL;
	json_str(o, "path", r->path, sizeof(r->path));
	json_str(o, "protocol", r->protocol, sizeof(r->protocol));
	if (json_str(o, "start_time", buf, sizeof(buf)) && buf[0] &&
	    parse_time(buf, strlen(buf), &r->start_ns) < 0)
		return -EINVAL;
	if (!json_str(o, "response_code", buf, sizeof(buf)) ||
	    parse_int(buf, strlen(buf), 999, &x) < 0)
		return -EINVAL;
	r->status = (int)x;
	json_str(o, "response_flags", r->flags, sizeof(r->flags));
	json_str(o, "response_code_details", r->details, sizeof(r->details));
	json_str(o, "request_id", r->request_id, sizeof(r->request_id));
	if (!json_str(o, "authority", r->authority, sizeof(r->authority)))
		json_str(o, ":authority", r->authority, sizeof(r->authority));
	json_str(o, "upstream_host", r->upstream_host, sizeof(r->upstream_host));
	json_str(o, "upstream_cluster", r->upstream_cluster, sizeof(r->upstream_cluster));
	r->direction = cluster_direction(r->upstream_cluster);
	if (json_str(o, "duration", buf, sizeof(buf)) && parse_int(buf, strlen(buf), INT64_MAX / 2, &x) == 0)
		r->duration_ms = x;
	if (json_str(o, "bytes_received", buf, sizeof(buf)) && parse_int(buf, strlen(buf), INT64_MAX / 2, &x) == 0)
		r->bytes_received = x;
	if (json_str(o, "bytes_sent", buf, sizeof(buf)) && parse_int(buf, strlen(buf), INT64_MAX / 2, &x) == 0)
		r->bytes_sent = x;
	if (json_text(o, "downstream_remote_address", &v, &vl))
		put_peer(r->peer, sizeof(r->peer), v, vl);
	if (json_text(o, "grpc_status", &v, &vl) || json_text(o, "grpc-status", &v, &vl))
		r->grpc_status = grpc_code(v, vl);
	return 0;
}

/* One JSON object and nothing but blanks after it; NULL otherwise. */
static struct json_object *json_line(const char *s, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(16);
	struct json_object *o;

	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, s, (int)len);
	if (o && (json_tokener_get_error(tok) != json_tokener_success ||
		  !json_object_is_type(o, json_type_object))) {
		json_object_put(o);
		o = NULL;
	}
	for (size_t i = o ? json_tokener_get_parse_end(tok) : len; i < len; i++) {
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') {
			json_object_put(o);
			o = NULL;
			break;
		}
	}
	json_tokener_free(tok);
	return o;
}

/* "[2021-03-12 15:31:30.492][1][warning][runtime] ...": a bracket that
 * closes right before another opens. */
static bool envoy_log_line(const char *s, size_t len)
{
	const char *e = memchr(s, ']', len);

	return e && (size_t)(e - s) + 1 < len && e[1] == '[';
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

const char *tl_access_unparsed_name(enum tl_access_unparsed r)
{
	static const char *const names[] = {
		[TL_ACCESS_UNPARSED_NONE] = "none",	     [TL_ACCESS_UNPARSED_NOT_ACCESS] = "not_access_log",
		[TL_ACCESS_UNPARSED_TCP] = "tcp",	     [TL_ACCESS_UNPARSED_FORMAT] = "no_format",
		[TL_ACCESS_UNPARSED_TOO_LONG] = "too_long", [TL_ACCESS_UNPARSED_CUT] = "cut",
	};

	return (unsigned)r < TL_ACCESS_UNPARSED_COUNT ? names[r] : "unknown";
}

int tl_access_parse_with(const struct tl_access_fmt *const *fmts, int n, const char *line,
			 size_t len, struct tl_access_record *ret, enum tl_access_unparsed *why)
{
	struct tl_access_record r;
	struct json_object *obj = NULL;
	enum tl_access_unparsed reason = TL_ACCESS_UNPARSED_FORMAT;
	bool tcp = false, json = false, ok = false;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\n'))
		len--;
	if (len > TL_ACCESS_LINE_MAX) {
		reason = TL_ACCESS_UNPARSED_TOO_LONG;
		goto fail;
	}
	if (len == 0) {
		reason = TL_ACCESS_UNPARSED_NOT_ACCESS;
		goto fail;
	}
	if (line[0] == '{') {
		obj = json_line(line, len);
		json = obj != NULL;
	}
	/* Text formats: the first that reads the line. JSON formats: the one
	 * with the most of its keys in the line (Envoy writes every key of a
	 * format, but omit_empty_values drops some). */
	for (int i = 0, best = 0; i < n && !(ok && !json); i++) {
		struct tl_access_record t;
		int k;

		if (fmts[i]->json != json)
			continue;
		k = parse_configured(fmts[i], line, len, obj, &t, &tcp);
		if (k > best) {
			best = k;
			r = t;
			r.format_index = i;
			ok = true;
		}
	}
	if (!ok) {
		record_init(&r);
		if (json)
			ok = parse_json(obj, &r, &tcp) == 0;
		else if (line[0] == '[' || line[0] == '"')
			ok = parse_text(line, len, &r, &tcp) == 0;
		/* Proxy chatter: neither shape, no configured format; Envoy's
		 * own log is "[date time][thread][level] ...". */
		if (!ok && !json && line[0] != '[' && line[0] != '"')
			reason = TL_ACCESS_UNPARSED_NOT_ACCESS;
		if (!ok && !json && line[0] == '[' && envoy_log_line(line, len))
			reason = TL_ACCESS_UNPARSED_NOT_ACCESS;
		if (!ok && json && !json_object_object_get_ex(obj, "response_code", NULL) &&
		    !json_object_object_get_ex(obj, "method", NULL) && !tcp)
			reason = TL_ACCESS_UNPARSED_NOT_ACCESS;
	}
	json_object_put(obj);
	if (ok) {
		*ret = r;
		return 0;
	}
	if (tcp)
		reason = TL_ACCESS_UNPARSED_TCP;
fail:
	if (why)
		*why = reason;
	return -EINVAL;
}

/* ---- the agent's formats ---- */

#define CONFIGURED_MAX 16
static struct tl_access_fmt *configured[CONFIGURED_MAX];
static int n_configured;

void tl_access_configure_clear(void)
{
	for (int i = 0; i < n_configured; i++)
		tl_access_format_free(configured[i]);
	n_configured = 0;
}

int tl_access_configure(const char *const *specs, int n, char *err, size_t errlen)
{
	struct tl_access_fmt *f[CONFIGURED_MAX];
	char why[200];
	int r = 0, k;

	if (n > CONFIGURED_MAX) {
		snprintf(err, errlen, "more than %d access-log formats", CONFIGURED_MAX);
		return -EINVAL;
	}
	for (k = 0; k < n; k++) {
		r = tl_access_format_compile(specs[k], &f[k], why, sizeof(why));
		if (r < 0) {
			/* Named by its place and its start, on one line. */
			size_t n = strlen(specs[k]), show = n > 56 ? 53 : n;
			char head[64];

			for (size_t i = 0; i < show; i++)
				head[i] = specs[k][i] == '\n' || specs[k][i] == '\t' ? ' ' : specs[k][i];
			head[show] = '\0';
			if (r == -EINVAL)
				snprintf(err, errlen, "access-log format %d ('%s%s'): %s", k + 1, head,
					 n > show ? "..." : "", why);
			break;
		}
	}
	if (r < 0) {
		while (k-- > 0)
			tl_access_format_free(f[k]);
		return r;
	}
	tl_access_configure_clear();
	memcpy(configured, f, (size_t)n * sizeof(f[0]));
	n_configured = n;
	return 0;
}

#define UNPARSED_METRIC "termline_http_log_lines_unparsed_total"

void tl_access_count_unparsed(enum tl_access_unparsed r)
{
	char labels[48];

	tl_metric_describe(UNPARSED_METRIC, TL_METRIC_COUNTER,
			   "Lines of the proxy container's log not read as HTTP records, by reason "
			   "(not_access_log, tcp, no_format, too_long, cut).");
	snprintf(labels, sizeof(labels), "reason=\"%s\"", tl_access_unparsed_name(r));
	tl_metric_add(UNPARSED_METRIC, labels, 1);
}

int tl_access_parse(const char *line, size_t len, struct tl_access_record *ret)
{
	enum tl_access_unparsed why;
	int r = tl_access_parse_with((const struct tl_access_fmt *const *)configured, n_configured,
				     line, len, ret, &why);

	if (r < 0)
		tl_access_count_unparsed(why);
	return r;
}
