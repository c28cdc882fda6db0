/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter's settings and the OpenTelemetry exporter environment
 * variables (the OTLP exporter specification's names and formats). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp-config.h"

#define URL_MAX 2048
#define HEADERS_MAX_BYTES 8192

static int why_value(char *why, const char *val, const char *what)
{
	char q[80];
	size_t i = 0;

	for (const char *s = val; *s; s++) {
		if (i + 4 >= sizeof(q)) {
			memcpy(q + i, "...", 3);
			i += 3;
			break;
		}
		q[i++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	}
	q[i] = '\0';
	snprintf(why, TL_OTLP_WHY_MAX, "'%s' %s", q, what);
	return -EINVAL;
}

int tl_otlp_check_url(const char *s, char *why)
{
	const char *host;
	size_t n = strlen(s);

	if (strncmp(s, "http://", 7) == 0)
		host = s + 7;
	else if (strncmp(s, "https://", 8) == 0)
		host = s + 8;
	else
		return why_value(why, s, "is not an http:// or https:// URL");
	if (n > URL_MAX)
		return why_value(why, s, "is longer than 2048 bytes");
	if (!*host || *host == '/' || *host == ':')
		return why_value(why, s, "has no host");
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return why_value(why, s, "contains a blank or a control character");
	return 0;
}

int tl_otlp_parse_protocol(const char *s, enum tl_otlp_protocol *ret, char *why)
{
	if (strcmp(s, "http/protobuf") == 0) {
		*ret = TL_OTLP_HTTP_PROTOBUF;
		return 0;
	}
	if (strcmp(s, "http/json") == 0) {
		*ret = TL_OTLP_HTTP_JSON;
		return 0;
	}
	if (strcmp(s, "grpc") == 0)
		return why_value(why, s, "is not supported (http/protobuf or http/json)");
	return why_value(why, s, "is not a protocol (http/protobuf or http/json)");
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* [p, p + n) trimmed of blanks and percent-decoded into a new string;
 * NULL with -EINVAL in *err for a bad escape, -ENOMEM. */
static char *decode(const char *p, size_t n, bool decode_pct, int *err)
{
	char *d, *o;

	while (n && isblank((unsigned char)*p)) {
		p++;
		n--;
	}
	while (n && isblank((unsigned char)p[n - 1]))
		n--;
	d = o = malloc(n + 1);
	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (decode_pct && p[i] == '%') {
			int hi = i + 2 < n ? hexval(p[i + 1]) : -1;
			int lo = i + 2 < n ? hexval(p[i + 2]) : -1;

			if (hi < 0 || lo < 0) {
				free(d);
				*err = -EINVAL;
				return NULL;
			}
			*o++ = (char)(hi << 4 | lo);
			i += 2;
			continue;
		}
		*o++ = p[i];
	}
	*o = '\0';
	return d;
}

static bool is_tchar(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Splits "k=v,k=v" and calls add(key, value) for each item. */
static int each_pair(const char *s, bool token_keys, char *why,
		     int (*add)(void *ud, char *k, char *v, char *why), void *ud)
{
	const char *p = s;

	if (strlen(s) > HEADERS_MAX_BYTES)
		return why_value(why, s, "is longer than 8192 bytes");
	while (*p) {
		size_t len = strcspn(p, ",");
		const char *eq = memchr(p, '=', len);
		char *k = NULL, *v = NULL;
		int err = 0, r;

		if (len == 0 || strspn(p, " \t") == len) {
			p += len + (p[len] == ',');
			continue;
		}
		if (!eq)
			return why_value(why, s, "is not a list of name=value");
		k = decode(p, (size_t)(eq - p), false, &err);
		if (k)
			v = decode(eq + 1, len - (size_t)(eq - p) - 1, true, &err);
		if (!k || !v) {
			free(k);
			if (err == -ENOMEM)
				return err;
			return why_value(why, s, "has a bad %-escape in a value");
		}
		r = 0;
		if (!k[0])
			r = why_value(why, s, "has an empty name");
		for (const char *c = k; r == 0 && *c; c++)
			if (token_keys ? !is_tchar(*c) : ((unsigned char)*c < 0x20 || *c == 0x7f))
				r = why_value(why, s, "has a name that is not an HTTP token");
		for (const char *c = v; r == 0 && *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				r = why_value(why, s, "has a value with a control character");
		if (r == 0)
			r = add(ud, k, v, why);
		if (r < 0) {
			free(k);
			free(v);
			return r;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

struct hdr_acc {
	struct tl_otlp_header *h;
	size_t n;
	const char *s;
};

static int add_header(void *ud, char *k, char *v, char *why)
{
	struct hdr_acc *a = ud;

	if (a->n >= TL_OTLP_MAX_HEADERS)
		return why_value(why, a->s, "has more than 32 headers");
	if (a->h) {
		a->h[a->n].name = k;
		a->h[a->n].value = v;
	} else {
		free(k);
		free(v);
	}
	a->n++;
	return 0;
}

int tl_otlp_parse_headers(const char *s, struct tl_otlp_header *ret, size_t *ret_n, char *why)
{
	struct hdr_acc a = {ret, 0, s};
	int r = each_pair(s, true, why, add_header, &a);

	if (r < 0) {
		for (size_t i = 0; ret && i < a.n; i++) {
			free(ret[i].name);
			free(ret[i].value);
			ret[i].name = ret[i].value = NULL;
		}
		return r;
	}
	if (ret_n)
		*ret_n = a.n;
	return 0;
}

struct attr_acc {
	struct tl_otlp_attr *a;
	size_t n;
	const char *s;
};

static int add_attr(void *ud, char *k, char *v, char *why)
{
	struct attr_acc *a = ud;

	if (a->n >= TL_OTLP_MAX_RESOURCE_ATTRS)
		return why_value(why, a->s, "has more than 32 attributes");
	a->a[a->n].key = k;
	a->a[a->n].value = v;
	a->n++;
	return 0;
}

int tl_otlp_parse_resource_attrs(const char *s, struct tl_otlp_attr *ret, size_t *ret_n,
				 char *why)
{
	struct attr_acc a = {ret, 0, s};
	int r = each_pair(s, false, why, add_attr, &a);

	if (r < 0) {
		for (size_t i = 0; i < a.n; i++) {
			free((char *)ret[i].key);
			free((char *)ret[i].value);
		}
		return r;
	}
	*ret_n = a.n;
	return 0;
}

int tl_otlp_parse_timeout(const char *s, bool env_form, uint32_t *ret_ms, char *why)
{
	unsigned long long v;
	uint64_t ms;
	char *end;

	const char *what = env_form ? "is not a number of milliseconds"
				    : "is not a duration (e.g. 10s or 500ms)";

	if (!isdigit((unsigned char)s[0]))
		return why_value(why, s, what);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE || v > TL_OTLP_MAX_TIMEOUT_MS)
		return why_value(why, s, "is out of range (1ms..10m)");
	if (*end == '\0')
		ms = env_form ? v : v * 1000;
	else if (env_form)
		return why_value(why, s, what);
	else if (strcmp(end, "ms") == 0)
		ms = v;
	else if (strcmp(end, "s") == 0)
		ms = v * 1000;
	else if (strcmp(end, "m") == 0)
		ms = v * 60000;
	else
		return why_value(why, s, what);
	if (ms < 1 || ms > TL_OTLP_MAX_TIMEOUT_MS)
		return why_value(why, s, "is out of range (1ms..10m)");
	*ret_ms = (uint32_t)ms;
	return 0;
}

/* ---- resolution ---- */

static int set_str(char **dst, const char *s)
{
	char *d = strdup(s);

	if (!d)
		return -ENOMEM;
	free(*dst);
	*dst = d;
	return 0;
}

/* {base}/v1/{signal}: the base endpoint's path gets the signal's path
 * appended (a trailing slash is not doubled). */
static int signal_url(const char *base, const char *signal, char **ret)
{
	size_t n = strlen(base);

	while (n && base[n - 1] == '/')
		n--;
	if (asprintf(ret, "%.*s/v1/%s", (int)n, base, signal) < 0) {
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}

struct env {
	const char *(*get)(const char *);
};

/* The first of the variables that is set and not empty; its name in *name. */
static const char *env2(const struct env *e, const char *a, const char *b, const char **name)
{
	const char *v = a ? e->get(a) : NULL;

	if (v && v[0]) {
		*name = a;
		return v;
	}
	v = b ? e->get(b) : NULL;
	if (v && v[0]) {
		*name = b;
		return v;
	}
	return NULL;
}

static int fail(char *err, size_t errlen, const char *what, const char *why)
{
	snprintf(err, errlen, "termlined: %s: %s", what, why);
	return -EINVAL;
}

static int resolve_urls(const struct tl_otlp_settings *s, const struct env *e,
			struct tl_otlp_config *c, char *err, size_t errlen)
{
	static const struct {
		const char *signal, *var;
	} sig[2] = {{"traces", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		    {"logs", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"}};
	char why[TL_OTLP_WHY_MAX];
	const char *base = s->endpoint, *name = "--otlp-endpoint";
	int r;

	if (!base)
		base = env2(e, "OTEL_EXPORTER_OTLP_ENDPOINT", NULL, &name);
	if (base && tl_otlp_check_url(base, why) < 0)
		return fail(err, errlen, name, why);
	for (int i = 0; i < 2; i++) {
		char **dst = i == 0 ? &c->traces_url : &c->logs_url;
		const char *vname, *v = s->endpoint ? NULL : env2(e, sig[i].var, NULL, &vname);

		if (v) {
			/* a signal's own endpoint is used as it is */
			if (tl_otlp_check_url(v, why) < 0)
				return fail(err, errlen, vname, why);
			r = set_str(dst, v);
		} else if (base) {
			r = signal_url(base, sig[i].signal, dst);
		} else {
			continue;
		}
		if (r < 0)
			return r;
	}
	c->enabled = c->traces_url != NULL;
	return 0;
}

int tl_otlp_config_resolve(const struct tl_otlp_settings *s, const char *(*getenv_fn)(const char *),
			   struct tl_otlp_config *c, char *err, size_t errlen)
{
	struct env e = {getenv_fn};
	char why[TL_OTLP_WHY_MAX];
	const char *v, *name;
	int r;

	r = resolve_urls(s, &e, c, err, errlen);
	if (r < 0)
		goto out;
	c->logs = s->logs;
	c->insecure = s->insecure;
	c->queue_bytes = s->queue_bytes ? s->queue_bytes : TL_OTLP_DEFAULT_QUEUE_BYTES;
	if (!c->enabled) {
		/* nothing is sent: the other variables are not read */
		return 0;
	}

	name = "--otlp-protocol";
	v = s->protocol ? s->protocol
			: env2(&e, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL",
			       &name);
	c->protocol = TL_OTLP_HTTP_PROTOBUF;
	if (v && tl_otlp_parse_protocol(v, &c->protocol, why) < 0) {
		r = fail(err, errlen, name, why);
		goto out;
	}

	name = "--otlp-headers";
	v = s->headers ? s->headers
		       : env2(&e, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS",
			      &name);
	if (v) {
		r = tl_otlp_parse_headers(v, c->headers, &c->n_headers, why);
		if (r == -EINVAL)
			r = fail(err, errlen, name, why);
		if (r < 0)
			goto out;
	}

	c->timeout_ms = TL_OTLP_DEFAULT_TIMEOUT_MS;
	if (s->timeout) {
		if (tl_otlp_parse_timeout(s->timeout, false, &c->timeout_ms, why) < 0) {
			r = fail(err, errlen, "--otlp-timeout", why);
			goto out;
		}
	} else if ((v = env2(&e, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT",
			     &name))) {
		/* the variable is a number of milliseconds */
		if (tl_otlp_parse_timeout(v, true, &c->timeout_ms, why) < 0) {
			r = fail(err, errlen, name, why);
			goto out;
		}
	}

	{
		static const struct {
			size_t set_off, cfg_off;
			const char *flag, *var, *var_traces;
		} files[] = {
			{offsetof(struct tl_otlp_settings, certificate),
			 offsetof(struct tl_otlp_config, certificate), "--otlp-certificate",
			 "OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"},
			{offsetof(struct tl_otlp_settings, client_certificate),
			 offsetof(struct tl_otlp_config, client_certificate),
			 "--otlp-client-certificate", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
			 "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE"},
			{offsetof(struct tl_otlp_settings, client_key),
			 offsetof(struct tl_otlp_config, client_key), "--otlp-client-key",
			 "OTEL_EXPORTER_OTLP_CLIENT_KEY", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY"},
		};

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			const char *sv = *(const char *const *)((const char *)s + files[i].set_off);
			char **dst = (char **)((char *)c + files[i].cfg_off);

			v = sv ? sv : env2(&e, files[i].var_traces, files[i].var, &name);
			if (!v)
				continue;
			r = set_str(dst, v);
			if (r < 0)
				goto out;
		}
	}
	if (!c->client_certificate != !c->client_key) {
		r = fail(err, errlen, c->client_key ? "--otlp-client-key" : "--otlp-client-certificate",
			 "a client certificate needs its key and a key its certificate");
		goto out;
	}

	v = env2(&e, "OTEL_RESOURCE_ATTRIBUTES", NULL, &name);
	if (v) {
		r = tl_otlp_parse_resource_attrs(v, c->resource_attrs, &c->n_resource_attrs, why);
		if (r == -EINVAL)
			r = fail(err, errlen, name, why);
		if (r < 0)
			goto out;
	}
	v = env2(&e, "OTEL_SERVICE_NAME", NULL, &name);
	for (size_t i = 0; !v && i < c->n_resource_attrs; i++)
		if (strcmp(c->resource_attrs[i].key, "service.name") == 0)
			v = c->resource_attrs[i].value;
	r = set_str(&c->service_name, v ? v : "termline");
out:
	if (r < 0)
		tl_otlp_config_free(c);
	return r;
}

void tl_otlp_config_free(struct tl_otlp_config *c)
{
	if (!c)
		return;
	free(c->traces_url);
	free(c->logs_url);
	for (size_t i = 0; i < c->n_headers; i++) {
		free(c->headers[i].name);
		free(c->headers[i].value);
	}
	free(c->certificate);
	free(c->client_certificate);
	free(c->client_key);
	free(c->service_name);
	for (size_t i = 0; i < c->n_resource_attrs; i++) {
		free((char *)c->resource_attrs[i].key);
		free((char *)c->resource_attrs[i].value);
	}
	memset(c, 0, sizeof(*c));
}

static int dup_opt(char **dst, const char *src)
{
	if (!src)
		return 0;
	*dst = strdup(src);
	return *dst ? 0 : -ENOMEM;
}

int tl_otlp_config_copy(struct tl_otlp_config *dst, const struct tl_otlp_config *src)
{
	int r = 0;

	memset(dst, 0, sizeof(*dst));
	dst->enabled = src->enabled;
	dst->protocol = src->protocol;
	dst->timeout_ms = src->timeout_ms;
	dst->insecure = src->insecure;
	dst->logs = src->logs;
	dst->queue_bytes = src->queue_bytes;
	if (dup_opt(&dst->traces_url, src->traces_url) < 0 ||
	    dup_opt(&dst->logs_url, src->logs_url) < 0 ||
	    dup_opt(&dst->certificate, src->certificate) < 0 ||
	    dup_opt(&dst->client_certificate, src->client_certificate) < 0 ||
	    dup_opt(&dst->client_key, src->client_key) < 0 ||
	    dup_opt(&dst->service_name, src->service_name) < 0)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < src->n_headers; i++) {
		if (dup_opt(&dst->headers[i].name, src->headers[i].name) < 0 ||
		    dup_opt(&dst->headers[i].value, src->headers[i].value) < 0)
			r = -ENOMEM;
		dst->n_headers = i + 1;
	}
	for (size_t i = 0; r == 0 && i < src->n_resource_attrs; i++) {
		char *k = NULL, *v = NULL;

		if (dup_opt(&k, src->resource_attrs[i].key) < 0 ||
		    dup_opt(&v, src->resource_attrs[i].value) < 0)
			r = -ENOMEM;
		dst->resource_attrs[i].key = k;
		dst->resource_attrs[i].value = v;
		dst->n_resource_attrs = i + 1;
	}
	if (r < 0)
		tl_otlp_config_free(dst);
	return r;
}

const char *tl_otlp_protocol_name(enum tl_otlp_protocol p)
{
	return p == TL_OTLP_HTTP_JSON ? "http/json" : "http/protobuf";
}
