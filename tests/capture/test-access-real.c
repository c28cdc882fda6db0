/* SPDX-License-Identifier: Apache-2.0 */
/* Real proxy access-log lines (tests/capture/corpus/access-real/lines.json,
 * each with its public source): every one read with the values it carries,
 * by shape and with the formats it was written in (--access-log-format);
 * JSON mappings, unknown operators, format errors, and the lines not read
 * counted by reason (docs/http-capture.md, "Proxy access logs"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include <json-c/json.h>

#include "access-log.h"
#include "clock.h"
#include "metrics.h"
#include "../check-run.h"

#define MAX_FORMATS 16

static struct json_object *corpus;
static const char *fmt_names[MAX_FORMATS];
static struct tl_access_fmt *fmts[MAX_FORMATS];
static int n_fmts;

static void load(void)
{
	const char *src = getenv("TERMLINE_SOURCE_ROOT");
	char path[512];
	struct json_object *formats;

	ck_assert_msg(src, "TERMLINE_SOURCE_ROOT is not set");
	snprintf(path, sizeof(path), "%s/tests/capture/corpus/access-real/lines.json", src);
	corpus = json_object_from_file(path);
	ck_assert_msg(corpus, "cannot read %s", path);
	ck_assert(json_object_object_get_ex(corpus, "formats", &formats));
	n_fmts = 0;
	json_object_object_foreach(formats, name, f)
	{
		struct json_object *spec;
		char err[256] = "";

		ck_assert_int_lt(n_fmts, MAX_FORMATS);
		ck_assert(json_object_object_get_ex(f, "spec", &spec));
		ck_assert_msg(tl_access_format_compile(json_object_get_string(spec), &fmts[n_fmts],
						       err, sizeof(err)) == 0,
			      "format %s: %s", name, err);
		fmt_names[n_fmts++] = name;
	}
}

static void unload(void)
{
	for (int i = 0; i < n_fmts; i++)
		tl_access_format_free(fmts[i]);
	n_fmts = 0;
	json_object_put(corpus);
	corpus = NULL;
}

static const struct tl_access_fmt *fmt_by_name(const char *name)
{
	for (int i = 0; i < n_fmts; i++)
		if (strcmp(fmt_names[i], name) == 0)
			return fmts[i];
	ck_abort_msg("no format %s in the corpus", name);
	return NULL;
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static const char *direction_name(enum tl_access_direction d)
{
	return d == TL_DIR_INBOUND ? "inbound" : d == TL_DIR_OUTBOUND ? "outbound" : "unknown";
}

/* Every value the entry names, and the ones every entry must name. */
static void check_record(const char *id, struct json_object *expect,
			 const struct tl_access_record *r, const char *format)
{
	static const char *const required[] = {
	    "format", "start",	     "method",	   "path", "protocol",	  "status",
	    "flags",  "duration_ms", "request_id", "peer", "grpc_status", "upstream_host",
	};

	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		ck_assert_msg(json_object_object_get_ex(expect, required[i], NULL),
			      "%s: expect has no %s", id, required[i]);
	json_object_object_foreach(expect, k, v)
	{
		const char *s = json_object_get_string(v);
		int64_t n = json_object_get_int64(v);

		if (strcmp(k, "format") == 0) {
			ck_assert_msg(
			    strcmp(tl_access_format_name(r->format), format ? format : s) == 0,
			    "%s: format %s", id, tl_access_format_name(r->format));
		} else if (strcmp(k, "start") == 0) {
			int64_t t = 0;

			if (v)
				ck_assert_msg(tl_time_parse(s, &t) == 0, "%s: bad start %s", id, s);
			ck_assert_msg(r->start_ns == t, "%s: start %lld, want %s", id,
				      (long long)r->start_ns, v ? s : "none");
		} else if (strcmp(k, "method") == 0) {
			ck_assert_msg(strcmp(r->method, s) == 0, "%s: method '%s'", id, r->method);
		} else if (strcmp(k, "path") == 0) {
			ck_assert_msg(strcmp(r->path, s) == 0, "%s: path '%s'", id, r->path);
		} else if (strcmp(k, "protocol") == 0) {
			ck_assert_msg(strcmp(r->protocol, s) == 0, "%s: protocol '%s'", id,
				      r->protocol);
		} else if (strcmp(k, "status") == 0) {
			ck_assert_msg(r->status == n, "%s: status %d", id, r->status);
		} else if (strcmp(k, "flags") == 0) {
			ck_assert_msg(strcmp(r->flags, s) == 0, "%s: flags '%s'", id, r->flags);
		} else if (strcmp(k, "details") == 0) {
			ck_assert_msg(strcmp(r->details, s) == 0, "%s: details '%s'", id,
				      r->details);
		} else if (strcmp(k, "duration_ms") == 0) {
			ck_assert_msg(r->duration_ms == n, "%s: duration %lld", id,
				      (long long)r->duration_ms);
		} else if (strcmp(k, "request_id") == 0) {
			ck_assert_msg(strcmp(r->request_id, s) == 0, "%s: request id '%s'", id,
				      r->request_id);
		} else if (strcmp(k, "peer") == 0) {
			ck_assert_msg(strcmp(r->peer, s) == 0, "%s: peer '%s'", id, r->peer);
		} else if (strcmp(k, "grpc_status") == 0) {
			ck_assert_msg(r->grpc_status == n, "%s: grpc status %d", id,
				      r->grpc_status);
		} else if (strcmp(k, "upstream_host") == 0) {
			ck_assert_msg(strcmp(r->upstream_host, s) == 0, "%s: upstream host '%s'",
				      id, r->upstream_host);
		} else if (strcmp(k, "authority") == 0) {
			ck_assert_msg(strcmp(r->authority, s) == 0, "%s: authority '%s'", id,
				      r->authority);
		} else if (strcmp(k, "direction") == 0) {
			ck_assert_msg(strcmp(direction_name(r->direction), s) == 0,
				      "%s: direction %s", id, direction_name(r->direction));
		} else if (strcmp(k, "bytes_received") == 0) {
			ck_assert_msg(r->bytes_received == n, "%s: bytes received %lld", id,
				      (long long)r->bytes_received);
		} else if (strcmp(k, "bytes_sent") == 0) {
			ck_assert_msg(r->bytes_sent == n, "%s: bytes sent %lld", id,
				      (long long)r->bytes_sent);
		} else {
			ck_abort_msg("%s: expect names an unknown value %s", id, k);
		}
	}
}

static int entry_formats(struct json_object *e, const char *key, const struct tl_access_fmt **out)
{
	struct json_object *names;
	int n = 0;

	if (!json_object_object_get_ex(e, key, &names))
		return 0;
	for (size_t i = 0; i < json_object_array_length(names); i++)
		out[n++] = fmt_by_name(json_object_get_string(json_object_array_get_idx(names, i)));
	return n;
}

static enum tl_access_unparsed reason_by_name(const char *name)
{
	for (int r = 0; r < TL_ACCESS_UNPARSED_COUNT; r++)
		if (strcmp(tl_access_unparsed_name(r), name) == 0)
			return r;
	ck_abort_msg("no unparsed reason %s", name);
	return TL_ACCESS_UNPARSED_NONE;
}

/* Every line: by shape, with the formats it was written in, with each
 * format it is also in. */
START_TEST(test_every_line)
{
	struct json_object *lines;
	int parsed = 0, configured = 0, unparsed = 0;

	ck_assert(json_object_object_get_ex(corpus, "lines", &lines));
	ck_assert_int_ge(json_object_array_length(lines), 40);
	for (size_t i = 0; i < json_object_array_length(lines); i++) {
		struct json_object *e = json_object_array_get_idx(lines, i), *expect = NULL;
		const char *id = str(e, "id"), *line = str(e, "line"),
			   *why_name = str(e, "unparsed");
		const struct tl_access_fmt *with[MAX_FORMATS];
		struct tl_access_record r;
		enum tl_access_unparsed why;
		int nw = entry_formats(e, "formats", with);

		ck_assert_msg(id && line && str(e, "source"), "entry %zu lacks id, line or source",
			      i);
		json_object_object_get_ex(e, "expect", &expect);
		/* By shape, nothing configured. */
		if (why_name) {
			why = TL_ACCESS_UNPARSED_NONE;
			ck_assert_msg(tl_access_parse_with(NULL, 0, line, strlen(line), &r, &why) ==
					  -EINVAL,
				      "%s: read by shape", id);
			ck_assert_msg(why == reason_by_name(why_name),
				      "%s: unparsed as %s, want %s", id,
				      tl_access_unparsed_name(why), why_name);
			unparsed++;
		} else {
			ck_assert_msg(expect && !nw, "%s: neither expect nor unparsed", id);
			ck_assert_msg(
			    tl_access_parse_with(NULL, 0, line, strlen(line), &r, &why) == 0,
			    "%s: not read by shape (%s)", id, tl_access_unparsed_name(why));
			check_record(id, expect, &r, NULL);
			parsed++;
		}
		/* With the formats the proxy was configured with. */
		if (nw) {
			int rc = tl_access_parse_with(with, nw, line, strlen(line), &r, &why);

			if (expect) {
				ck_assert_msg(rc == 0, "%s: not read by its formats (%s)", id,
					      tl_access_unparsed_name(why));
				check_record(id, expect, &r, NULL);
				ck_assert_msg(with[r.format_index] ==
						  fmt_by_name(str(e, "read_by")),
					      "%s: read by format %d", id, r.format_index);
				configured++;
			} else {
				ck_assert_msg(rc == -EINVAL, "%s: read by its formats", id);
				ck_assert_msg(why == reason_by_name(str(e, "unparsed_configured")),
					      "%s: unparsed as %s with its formats", id,
					      tl_access_unparsed_name(why));
			}
		}
		/* Each format the line is also in: the same values, read by it. */
		{
			const struct tl_access_fmt *also[MAX_FORMATS];
			int na = entry_formats(e, "configured", also);

			for (int k = 0; k < na; k++) {
				ck_assert_msg(tl_access_parse_with(&also[k], 1, line, strlen(line),
								   &r, &why) == 0,
					      "%s: not read by configured format %d (%s)", id, k,
					      tl_access_unparsed_name(why));
				check_record(id, expect, &r, "configured");
				ck_assert_int_eq(r.format_index, 0);
				configured++;
			}
		}
	}
	ck_assert_int_ge(parsed, 40);
	ck_assert_int_ge(configured, 35);
	ck_assert_int_ge(unparsed, 6);
}
END_TEST

/* Each format of the corpus reads at least one of its lines exactly, and
 * the corpus covers what the parser must read: every format by shape,
 * peers absent and present, gRPC statuses, HTTP/2, response flags. */
START_TEST(test_coverage)
{
	struct json_object *lines;
	static const char *const flags[] = {"UF", "UC", "URX,UF", "NR", "DC", "UH",
					    "UO", "UT", "UR",	  "DR", "UPE"};
	bool flag_seen[sizeof(flags) / sizeof(flags[0])] = {0};
	int fmt_used[MAX_FORMATS] = {0}, shapes[3] = {0}, grpc = 0, h2 = 0, no_peer = 0, peer = 0;

	ck_assert(json_object_object_get_ex(corpus, "lines", &lines));
	for (size_t i = 0; i < json_object_array_length(lines); i++) {
		struct json_object *e = json_object_array_get_idx(lines, i), *x, *names;
		const char *f;

		for (const char *key = "formats"; key;
		     key = strcmp(key, "formats") == 0 ? "configured" : NULL)
			if (json_object_object_get_ex(e, key, &names))
				for (size_t k = 0; k < json_object_array_length(names); k++)
					for (int j = 0; j < n_fmts; j++)
						fmt_used[j] += strcmp(fmt_names[j],
								      json_object_get_string(
									  json_object_array_get_idx(
									      names, k))) == 0;
		if (!json_object_object_get_ex(e, "expect", &x))
			continue;
		f = str(x, "format");
		shapes[0] += strcmp(f, "envoy") == 0;
		shapes[1] += strcmp(f, "istio") == 0;
		shapes[2] += strcmp(f, "istio-json") == 0;
		grpc += json_object_get_int(json_object_object_get(x, "grpc_status")) >= 0;
		h2 += strcmp(str(x, "protocol"), "HTTP/2") == 0;
		no_peer += str(x, "peer")[0] == '\0';
		peer += str(x, "peer")[0] != '\0';
		for (size_t j = 0; j < sizeof(flags) / sizeof(flags[0]); j++)
			flag_seen[j] |= strcmp(str(x, "flags"), flags[j]) == 0;
	}
	for (int j = 0; j < n_fmts; j++)
		ck_assert_msg(fmt_used[j] > 0, "format %s reads no line", fmt_names[j]);
	ck_assert_int_ge(n_fmts, 3);
	for (int j = 0; j < 3; j++)
		ck_assert_int_ge(shapes[j], 3);
	ck_assert_int_ge(grpc, 5);
	ck_assert_int_ge(h2, 5);
	ck_assert_int_ge(no_peer, 4);
	ck_assert_int_ge(peer, 10);
	for (size_t j = 0; j < sizeof(flags) / sizeof(flags[0]); j++)
		ck_assert_msg(flag_seen[j], "no line with flags %s", flags[j]);
}
END_TEST

/* Through the agent's path: configured once, then read line by line; the
 * lines not read are counted by reason. */
START_TEST(test_agent_counts_unparsed)
{
	struct json_object *lines;
	const char *specs[MAX_FORMATS];
	int64_t want[TL_ACCESS_UNPARSED_COUNT] = {0}, before[TL_ACCESS_UNPARSED_COUNT];
	char err[256], labels[64];

	for (int i = 0; i < n_fmts; i++) {
		struct json_object *f =
		    json_object_object_get(json_object_object_get(corpus, "formats"), fmt_names[i]);

		specs[i] = str(f, "spec");
	}
	for (int r = 0; r < TL_ACCESS_UNPARSED_COUNT; r++) {
		snprintf(labels, sizeof(labels), "reason=\"%s\"", tl_access_unparsed_name(r));
		before[r] = tl_metric_get("termline_http_log_lines_unparsed_total", labels);
	}
	ck_assert_int_eq(tl_access_configure(specs, n_fmts, err, sizeof(err)), 0);
	ck_assert(json_object_object_get_ex(corpus, "lines", &lines));
	for (size_t i = 0; i < json_object_array_length(lines); i++) {
		struct json_object *e = json_object_array_get_idx(lines, i);
		const char *line = str(e, "line"), *why = str(e, "unparsed_configured");
		struct tl_access_record r;
		int rc = tl_access_parse(line, strlen(line), &r);

		/* With every format configured, a line is read unless it is
		 * no HTTP request or not a record at all. */
		if (why || (str(e, "unparsed") && !json_object_object_get_ex(e, "expect", NULL))) {
			enum tl_access_unparsed w = reason_by_name(why ? why : str(e, "unparsed"));

			ck_assert_msg(rc == -EINVAL, "%s: read", str(e, "id"));
			want[w]++;
		} else {
			ck_assert_msg(rc == 0, "%s: not read with every format configured",
				      str(e, "id"));
		}
	}
	/* Past the limit; cut by the log runtime (the caller's reason). */
	{
		size_t n = TL_ACCESS_LINE_MAX + 1;
		char *big = malloc(n);
		struct tl_access_record r;

		memset(big, 'x', n);
		big[0] = '[';
		ck_assert_int_eq(tl_access_parse(big, n, &r), -EINVAL);
		want[TL_ACCESS_UNPARSED_TOO_LONG]++;
		free(big);
		tl_access_count_unparsed(TL_ACCESS_UNPARSED_CUT);
		want[TL_ACCESS_UNPARSED_CUT]++;
	}
	for (int r = 1; r < TL_ACCESS_UNPARSED_COUNT; r++) {
		snprintf(labels, sizeof(labels), "reason=\"%s\"", tl_access_unparsed_name(r));
		ck_assert_msg(
		    tl_metric_get("termline_http_log_lines_unparsed_total", labels) - before[r] ==
			want[r],
		    "reason %s: counted %lld, want %lld", tl_access_unparsed_name(r),
		    (long long)(tl_metric_get("termline_http_log_lines_unparsed_total", labels) -
				before[r]),
		    (long long)want[r]);
	}
	ck_assert_int_gt(want[TL_ACCESS_UNPARSED_NOT_ACCESS], 0);
	ck_assert_int_gt(want[TL_ACCESS_UNPARSED_TCP], 0);
	tl_access_configure_clear();
}
END_TEST

/* JSON mappings: the format with most of its keys in the line reads it,
 * whatever the order they were given in; keys Envoy left out
 * (omit_empty_values) leave the rest readable; nested objects and
 * constants in a mapping are not fields. */
START_TEST(test_json_mappings)
{
	/* Istio's JSON mapping as a vendor's manual prints it
	 * (support.huaweicloud.com/intl/ar-mena/usermanual-ucs/ucs_02_0074.html),
	 * without its trailing comma. */
	static const char istio_json[] =
	    "{ \"start_time\": \"%START_TIME%\", \"route_name\": \"%ROUTE_NAME%\", \"method\": "
	    "\"%REQ(:METHOD)%\", "
	    "\"path\": \"%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%\", \"protocol\": \"%PROTOCOL%\", "
	    "\"response_code\": "
	    "\"%RESPONSE_CODE%\", \"response_flags\": \"%RESPONSE_FLAGS%\", "
	    "\"response_code_details\": "
	    "\"%RESPONSE_CODE_DETAILS%\", \"connection_termination_details\": "
	    "\"%CONNECTION_TERMINATION_DETAILS%\", "
	    "\"bytes_received\": \"%BYTES_RECEIVED%\", \"bytes_sent\": \"%BYTES_SENT%\", "
	    "\"duration\": "
	    "\"%DURATION%\", \"upstream_service_time\": \"%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%\", "
	    "\"x_forwarded_for\": \"%REQ(X-FORWARDED-FOR)%\", \"user_agent\": "
	    "\"%REQ(USER-AGENT)%\", "
	    "\"request_id\": \"%REQ(X-REQUEST-ID)%\", \"authority\": \"%REQ(:AUTHORITY)%\", "
	    "\"upstream_host\": "
	    "\"%UPSTREAM_HOST%\", \"upstream_cluster\": \"%UPSTREAM_CLUSTER%\", "
	    "\"upstream_local_address\": "
	    "\"%UPSTREAM_LOCAL_ADDRESS%\", \"downstream_local_address\": "
	    "\"%DOWNSTREAM_LOCAL_ADDRESS%\", "
	    "\"downstream_remote_address\": \"%DOWNSTREAM_REMOTE_ADDRESS%\", "
	    "\"requested_server_name\": "
	    "\"%REQUESTED_SERVER_NAME%\", \"upstream_transport_failure_reason\": "
	    "\"%UPSTREAM_TRANSPORT_FAILURE_REASON%\", \"pod_name\": \"%ENVIRONMENT(POD_NAME)%\", "
	    "\"pod_namespace\": \"%ENVIRONMENT(POD_NAMESPACE)%\", \"mesh_id\": "
	    "\"%ENVIRONMENT(ISTIO_META_ASM_MESH_ID)%\", \"cluster_id\": "
	    "\"%ENVIRONMENT(ISTIO_META_ASM_CLUSTER_ID)%\" }";
	/* A gRPC call the client's sidecar retried and gave up on: ssup2-03 of
	 * the corpus, compacted from the blog's [Text 32]. */
	struct json_object *lines, *e = NULL;
	const struct tl_access_fmt *both[2];
	struct tl_access_fmt *ij;
	struct tl_access_record r;
	enum tl_access_unparsed why;
	char err[256], *line, *cut;

	ck_assert_int_eq(tl_access_format_compile(istio_json, &ij, err, sizeof(err)), 0);
	ck_assert(json_object_object_get_ex(corpus, "lines", &lines));
	for (size_t i = 0; i < json_object_array_length(lines); i++) {
		struct json_object *x = json_object_array_get_idx(lines, i), *exp;

		if (strncmp(str(x, "id"), "ssup2-", 6) == 0 &&
		    json_object_object_get_ex(x, "expect", &exp) &&
		    strcmp(str(exp, "flags"), "URX") == 0)
			e = x;
	}
	ck_assert_ptr_nonnull(e);
	line = strdup(str(e, "line"));
	/* Both orders: the custom mapping (29 keys, all in the line) beats
	 * Istio's (24 of its 28 keys in the line). */
	for (int order = 0; order < 2; order++) {
		both[order] = fmt_by_name("ssup2-json");
		both[1 - order] = ij;
		ck_assert_int_eq(tl_access_parse_with(both, 2, line, strlen(line), &r, &why), 0);
		ck_assert_int_eq(r.format, TL_ACCESS_CONFIGURED);
		ck_assert_int_eq(r.format_index, order);
		ck_assert_str_eq(r.method, "POST");
		ck_assert_str_eq(r.path, "/mock.MockService/ResetBeforeResponse");
		ck_assert_str_eq(r.flags, "URX");
		ck_assert_int_eq(r.grpc_status, 14);
		ck_assert_int_eq(r.status, 200);
		ck_assert_str_eq(r.protocol, "HTTP/2");
	}
	/* Istio's mapping alone reads it too, without the gRPC status it has
	 * no key for. */
	ck_assert_int_eq(tl_access_parse_with((const struct tl_access_fmt *const *)&ij, 1, line,
					      strlen(line), &r, &why),
			 0);
	ck_assert_int_eq(r.grpc_status, -1);
	ck_assert_str_eq(r.flags, "URX");
	/* omit_empty_values: the keys left out are not missing fields. */
	cut = strstr(line, "\"grpc_status\":\"Unavailable\",");
	ck_assert_ptr_nonnull(cut);
	memmove(cut, cut + strlen("\"grpc_status\":\"Unavailable\","),
		strlen(cut + strlen("\"grpc_status\":\"Unavailable\",")) + 1);
	cut = strstr(line, "\"route_name\":\"-\",");
	ck_assert_ptr_nonnull(cut);
	memmove(cut, cut + strlen("\"route_name\":\"-\","),
		strlen(cut + strlen("\"route_name\":\"-\",")) + 1);
	ck_assert_int_eq(tl_access_parse_with(both, 2, line, strlen(line), &r, &why), 0);
	ck_assert_int_eq(r.grpc_status, -1);
	ck_assert_str_eq(r.request_id, str(json_object_object_get(e, "expect"), "request_id"));
	/* A value that is not what its operator prints: neither mapping reads
	 * the line; its shape does, without the duration. */
	cut = strstr(line, "\"duration\":\"");
	ck_assert_ptr_nonnull(cut);
	cut[strlen("\"duration\":\"")] = 'x';
	ck_assert_int_eq(tl_access_parse_with(both, 2, line, strlen(line), &r, &why), 0);
	ck_assert_int_eq(r.format, TL_ACCESS_ISTIO_JSON);
	ck_assert_int_eq(r.duration_ms, -1);
	ck_assert_int_eq(r.grpc_status, -1);
	free(line);
	/* Nested objects and constants are not fields; no key with an
	 * operator is an error. */
	tl_access_format_free(ij);
	ck_assert_int_eq(
	    tl_access_format_compile(
		"{\"a\": {\"b\": \"%DURATION%\"}, \"n\": 1, \"code\": \"%RESPONSE_CODE%\"}", &ij,
		err, sizeof(err)),
	    0);
	ck_assert_int_eq(tl_access_parse_with((const struct tl_access_fmt *const *)&ij, 1,
					      "{\"a\":{\"b\":\"7\"},\"n\":1,\"code\":503}",
					      strlen("{\"a\":{\"b\":\"7\"},\"n\":1,\"code\":503}"),
					      &r, &why),
			 0);
	ck_assert_int_eq(r.status, 503);
	ck_assert_int_eq(r.duration_ms, -1);
	tl_access_format_free(ij);
	ck_assert_int_eq(tl_access_format_compile("{\"a\": {\"b\": \"%DURATION%\"}, \"n\": 1}", &ij,
						  err, sizeof(err)),
			 -EINVAL);
	ck_assert_str_eq(err, "no key maps to a command operator");
}
END_TEST

/* Operators termline does not read are fields it skips, whatever they
 * print: Envoy's %CEL(...)% (envoyproxy/envoy#31483 puts
 * %CEL(response.grpc_status)% right after the time), %ENVIRONMENT(...)%,
 * %DYNAMIC_METADATA(...)%, a length limit, and Kuma's own. */
START_TEST(test_unknown_operators)
{
	static const char spec[] =
	    "[%START_TIME%] %CEL(response.grpc_status)% \"%REQ(:METHOD)% "
	    "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH):256% %PROTOCOL%\" %RESPONSE_CODE% %RESPONSE_FLAGS% "
	    "\"%DYNAMIC_METADATA(istio.mixer:status)%\" %KUMA_MESH% %ENVIRONMENT(POD_NAME)% "
	    "%DURATION% "
	    "\"%REQ(X-REQUEST-ID)%\" %DOWNSTREAM_REMOTE_ADDRESS% %GRPC_STATUS(NUMBER)%\n";
	static const char line[] =
	    "[2023-12-21T10:00:00.123Z] 2 \"POST /helloworld.Greeter/SayHello HTTP/2\" 200 - \"-\" "
	    "default "
	    "app-7d4f9 22 \"23a8cd6c-8eb8-43f6-ab4a-738a91fb15d5\" [fd00:10::7]:50514 14";
	struct tl_access_fmt *f;
	struct tl_access_record r;
	enum tl_access_unparsed why;
	char err[256];

	ck_assert_int_eq(tl_access_format_compile(spec, &f, err, sizeof(err)), 0);
	ck_assert_int_eq(tl_access_parse_with((const struct tl_access_fmt *const *)&f, 1, line,
					      strlen(line), &r, &why),
			 0);
	ck_assert_str_eq(r.method, "POST");
	ck_assert_str_eq(r.path, "/helloworld.Greeter/SayHello");
	ck_assert_str_eq(r.protocol, "HTTP/2");
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.flags, "");
	ck_assert_int_eq(r.duration_ms, 22);
	ck_assert_str_eq(r.request_id, "23a8cd6c-8eb8-43f6-ab4a-738a91fb15d5");
	ck_assert_str_eq(r.peer, "[fd00:10::7]:50514");
	ck_assert_int_eq(r.grpc_status, 14);
	tl_access_format_free(f);
}
END_TEST

/* A format that cannot be compiled fails the agent's start with one line
 * naming the format and what is wrong; the formats before stay. */
START_TEST(test_configure_errors)
{
	static const struct {
		const char *spec, *err;
	} bad[] = {
	    {"[%START_TIME%] \"%REQ(:METHOD)% %RESPONSE_CODE",
	     "access-log format 2 ('[%START_TIME%] \"%REQ(:METHOD)% %RESPONSE_CODE'): "
	     "%RESPONSE_CODE at offset 31 has no closing '%'"},
	    {"%REQ(X-REQUEST-ID% %RESPONSE_CODE%",
	     "access-log format 2 ('%REQ(X-REQUEST-ID% %RESPONSE_CODE%'): %REQ( at offset 0 has no "
	     "')'"},
	    {"100% %RESPONSE_CODE%", "access-log format 2 ('100% %RESPONSE_CODE%'): a '%' at "
				     "offset 3 starts no command operator"},
	    {"[plain text, no operator]", "access-log format 2 ('[plain text, no operator]'): no "
					  "command operator (e.g. %RESPONSE_CODE%)"},
	    /* A mapping cut short while pasting it. */
	    {"{ \"start_time\": \"%START_TIME%\", \"cluster_id\": "
	     "\"%ENVIRONMENT(ISTIO_META_ASM_CLUSTER_ID)%\"",
	     "access-log format 2 ('{ \"start_time\": \"%START_TIME%\", \"cluster_id\": "
	     "\"%ENVIR...'): not a JSON object of keys to format strings"},
	};
	const char *ok = str(
	    json_object_object_get(json_object_object_get(corpus, "formats"), "kuma-http"), "spec");
	const char *line =
	    "[2025-06-26T13:19:18.314Z] default \"GET /api?timeout=32s HTTP/1.1\" 404 NR 0 0 0 - "
	    "\"10.42.1.26\" \"kubectl\" \"-\" \"0efbfa26\" \"localhost:8080\" \"unknown\" \"gw\" "
	    "\"10.42.3.27\" \"-\"";
	struct tl_access_record r;
	char err[512];

	ck_assert_int_eq(tl_access_configure(&ok, 1, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *specs[2] = {ok, bad[i].spec};

		err[0] = '\0';
		ck_assert_msg(tl_access_configure(specs, 2, err, sizeof(err)) == -EINVAL,
			      "compiled: %s", bad[i].spec);
		ck_assert_str_eq(err, bad[i].err);
		ck_assert_ptr_null(strchr(err, '\n'));
		/* The Kuma format configured before still reads its line. */
		ck_assert_int_eq(tl_access_parse(line, strlen(line), &r), 0);
		ck_assert_int_eq(r.format, TL_ACCESS_CONFIGURED);
		ck_assert_str_eq(r.request_id, "0efbfa26");
	}
	tl_access_configure_clear();
	ck_assert_int_eq(tl_access_parse(line, strlen(line), &r), -EINVAL);
}
END_TEST

/* Every line of the corpus, cut at every byte and with every byte
 * flipped, read with every format configured: a record or -EINVAL with a
 * reason, never a read past the end (ASan). */
START_TEST(test_hostile_variants)
{
	struct json_object *lines;

	ck_assert(json_object_object_get_ex(corpus, "lines", &lines));
	for (size_t i = 0; i < json_object_array_length(lines); i++) {
		const char *line = str(json_object_array_get_idx(lines, i), "line");
		size_t n = strlen(line);
		char *p = malloc(n + 1);

		for (size_t k = 0; k <= n; k++) {
			struct tl_access_record r;
			enum tl_access_unparsed why = TL_ACCESS_UNPARSED_NONE;
			char *q = malloc(k ? k : 1);

			memcpy(q, line, k);
			if (tl_access_parse_with((const struct tl_access_fmt *const *)fmts, n_fmts,
						 q, k, &r, &why) < 0)
				ck_assert_int_ne(why, TL_ACCESS_UNPARSED_NONE);
			free(q);
			if (k < n) {
				memcpy(p, line, n);
				p[k] = (char)(p[k] ^ 0x22);
				why = TL_ACCESS_UNPARSED_NONE;
				if (tl_access_parse_with((const struct tl_access_fmt *const *)fmts,
							 n_fmts, p, n, &r, &why) < 0)
					ck_assert_int_ne(why, TL_ACCESS_UNPARSED_NONE);
			}
		}
		free(p);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("access-real");
	TCase *tc = tcase_create("corpus");

	tcase_add_checked_fixture(tc, load, unload);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_every_line);
	tcase_add_test(tc, test_coverage);
	tcase_add_test(tc, test_agent_counts_unparsed);
	tcase_add_test(tc, test_json_mappings);
	tcase_add_test(tc, test_unknown_operators);
	tcase_add_test(tc, test_configure_errors);
	tcase_add_test(tc, test_hostile_variants);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
