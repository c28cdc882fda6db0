// SPDX-License-Identifier: Apache-2.0
/* Helpers the verbs share: JSON access, the one time formatter, escaping
 * for the terminal, wrapping, colours, output files and formats. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli.h"
#include "clock.h"
#include "findings.h"
#include "json-util.h"
#include "term-escape.h"

const char *json_str(struct json_object *o, const char *key)
{
	return tl_json_str(o, key);
}

struct json_object *json_path(struct json_object *o, const char *dotted)
{
	char key[128];

	while (o && *dotted) {
		const char *dot = strchr(dotted, '.');
		size_t n = dot ? (size_t)(dot - dotted) : strlen(dotted);
		struct json_object *v;

		if (n >= sizeof(key) || !json_object_is_type(o, json_type_object))
			return NULL;
		memcpy(key, dotted, n);
		key[n] = 0;
		if (!json_object_object_get_ex(o, key, &v))
			return NULL;
		o = v;
		dotted += n + (dot ? 1 : 0);
	}
	return o;
}

int split_ns_name(const char *arg, const char *dflt_ns, char **ret_ns, char **ret_name)
{
	static const char *const kinds[] = {"pod/", "pods/", "po/"};
	const char *slash;

	*ret_ns = *ret_name = NULL;
	/* kubectl's TYPE/NAME: the namespace comes from -n or the context */
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strncmp(arg, kinds[i], strlen(kinds[i])) == 0) {
			arg += strlen(kinds[i]);
			if (!*arg || strchr(arg, '/'))
				return -EINVAL;
			slash = NULL;
			goto bare;
		}
	slash = strchr(arg, '/');
	if (slash) {
		if (slash == arg || !slash[1] || strchr(slash + 1, '/'))
			return -EINVAL;
		*ret_ns = strndup(arg, (size_t)(slash - arg));
		*ret_name = strdup(slash + 1);
		goto done;
	}
bare:
	if (!*arg)
		return -EINVAL;
	*ret_ns = strdup(dflt_ns ? dflt_ns : "default");
	*ret_name = strdup(arg);
done:
	if (!*ret_ns || !*ret_name) {
		free(*ret_ns);
		free(*ret_name);
		*ret_ns = *ret_name = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- time ---- */

static void secs3(char *buf, size_t len, int64_t ns, bool offset)
{
	/* rounded to the millisecond, as the findings' numbers are; what
	 * rounds to zero has no sign to show */
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	uint64_t ms = (a + 500000) / 1000000;

	snprintf(buf, len, "%s%llu.%03llu s",
		 ns < 0 && ms ? "-"
		 : offset     ? "+"
			      : "",
		 (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000));
}

const char *fmt_offset(char *buf, int64_t t, int64_t ref)
{
	int64_t d;

	/* a time the document does not hold validly (findings-model.c reads
	 * it as 0): no offset can be told */
	if (!t || !ref) {
		snprintf(buf, OFFSET_LEN, "invalid time");
		return buf;
	}
	d = t - ref; /* both within 1970..2200: no overflow */
	secs3(buf, OFFSET_LEN, d, true);
	return buf;
}

const char *fmt_secs(char *buf, int64_t ns)
{
	secs3(buf, OFFSET_LEN, ns, false);
	return buf;
}

const char *fmt_span(const struct cli *cli, char *buf, size_t len, int64_t from, int64_t to,
		     int64_t ref)
{
	char a[OFFSET_LEN], b[OFFSET_LEN];

	fmt_offset(a, from, ref);
	fmt_offset(b, to, ref);
	if (strcmp(a, b) == 0) {
		snprintf(buf, len, "%s", a);
		return buf;
	}
	/* "+0.105 s" and "+1.406 s" -> "+0.105…+1.406 s" */
	if (strlen(a) > 2 && strcmp(a + strlen(a) - 2, " s") == 0)
		a[strlen(a) - 2] = 0;
	snprintf(buf, len, "%s%s%s", a, glyph_ellipsis(cli), b);
	return buf;
}

const char *fmt_age(char *buf, size_t len, int64_t ns)
{
	/* kubectl's HumanDuration */
	long long s = ns / 1000000000LL, m = s / 60, h = s / 3600, d = h / 24;

	if (ns <= 0)
		snprintf(buf, len, "0s");
	else if (s < 120)
		snprintf(buf, len, "%llds", s);
	else if (m < 10)
		snprintf(buf, len, "%lldm%llds", m, s % 60);
	else if (m < 180)
		snprintf(buf, len, "%lldm", m);
	else if (h < 8)
		snprintf(buf, len, "%lldh%lldm", h, m % 60);
	else if (h < 48)
		snprintf(buf, len, "%lldh", h);
	else if (h < 24 * 8)
		snprintf(buf, len, "%lldd%lldh", d, h % 24);
	else if (d < 365 * 2)
		snprintf(buf, len, "%lldd", d);
	else if (d < 365 * 8)
		snprintf(buf, len, "%lldy%lldd", d / 365, d % 365);
	else
		snprintf(buf, len, "%lldy", d / 365);
	return buf;
}

/* ---- escaping ---- */

/* Escaped copies live until exit: a CLI prints them once and ends. */
static struct kept {
	struct kept *next;
	char s[];
} * kept;

static void kept_free(void)
{
	while (kept) {
		struct kept *k = kept;

		kept = k->next;
		free(k);
	}
}

const char *tx(const char *s)
{
	size_t n, need;
	struct kept *k;

	if (!s)
		return "";
	n = strlen(s);
	if (!tl_term_needs_escape(s, n))
		return s;
	need = tl_term_escape(NULL, 0, s, n);
	k = malloc(sizeof(*k) + need + 1);
	if (!k)
		return "(unprintable)";
	tl_term_escape(k->s, need + 1, s, n);
	if (!kept)
		atexit(kept_free);
	k->next = kept;
	kept = k;
	return k->s;
}

static int escape_tree(struct json_object *o)
{
	if (json_object_is_type(o, json_type_string)) {
		const char *s = json_object_get_string(o);
		size_t n = (size_t)json_object_get_string_len(o);
		char *e;
		int r;

		if (!tl_term_needs_escape(s, n))
			return 0;
		e = tl_term_escape_dup(s, n);
		if (!e)
			return -ENOMEM;
		r = json_object_set_string(o, e) ? 0 : -ENOMEM;
		free(e);
		return r;
	}
	if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			int r = escape_tree(json_object_array_get_idx(o, i));

			if (r < 0)
				return r;
		}
		return 0;
	}
	if (json_object_is_type(o, json_type_object)) {
		struct json_object *rename = NULL;
		int r = 0;

		json_object_object_foreach(o, k, v)
		{
			if (r == 0)
				r = escape_tree(v);
			if (r == 0 && tl_term_needs_escape(k, strlen(k))) {
				if (!rename)
					rename = json_object_new_array();
				if (!rename ||
				    json_object_array_add(rename, json_object_new_string(k)) < 0)
					r = -ENOMEM;
			}
		}
		for (size_t i = 0; r == 0 && rename && i < json_object_array_length(rename); i++) {
			const char *k =
			    json_object_get_string(json_object_array_get_idx(rename, i));
			struct json_object *v = json_object_get(json_object_object_get(o, k));
			char *e = tl_term_escape_dup(k, strlen(k));

			json_object_object_del(o, k);
			if (!e || json_object_object_add(o, e, v) < 0) {
				json_object_put(v);
				r = -ENOMEM;
			}
			free(e);
		}
		json_object_put(rename);
		return r;
	}
	return 0;
}

int doc_escape(struct json_object *doc)
{
	return escape_tree(doc);
}

/* ---- output ---- */

FILE *open_out(const struct cli *cli)
{
	if (!cli->out_file || strcmp(cli->out_file, "-") == 0)
		return stdout;
	return fopen(cli->out_file, "we");
}

int close_out(const struct cli *cli, FILE *f)
{
	int r = 0;

	if (fflush(f) != 0 || ferror(f))
		r = errno == EPIPE ? -EPIPE : -EIO;
	if (f != stdout && fclose(f) != 0)
		r = -EIO;
	/* a reader that went away (| head) is not an error: main() ends quietly */
	if (r < 0 && r != -EPIPE)
		cli_err(cli, "%s: write failed", cli->out_file ? tx(cli->out_file) : "stdout");
	return r;
}

const char *col(const struct cli *cli, const char *which)
{
	if (!cli->color)
		return "";
	if (strcmp(which, "red") == 0)
		return "\033[31m";
	if (strcmp(which, "boldred") == 0)
		return "\033[1;31m";
	if (strcmp(which, "yellow") == 0)
		return "\033[33m";
	if (strcmp(which, "green") == 0)
		return "\033[32m";
	if (strcmp(which, "bold") == 0)
		return "\033[1m";
	if (strcmp(which, "dim") == 0)
		return "\033[2m";
	if (strcmp(which, "cyan") == 0)
		return "\033[36m";
	return "\033[0m";
}

const char *glyph_ellipsis(const struct cli *cli)
{
	return cli->utf8 ? "\u2026" : "...";
}

const char *glyph_times(const struct cli *cli)
{
	return cli->utf8 ? "\u00d7" : "x";
}

size_t text_cols(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

void wrap(const struct cli *cli, FILE *f, int first_indent, int indent, const char *text)
{
	int width = cli->width > 100 ? 100 : cli->width < 40 ? 40 : cli->width;
	int at = first_indent;
	const char *p = text;
	bool line_empty = true;

	fprintf(f, "%*s", first_indent, "");
	while (*p) {
		const char *w = p;
		size_t len, cols;
		char word[1024];

		while (*p && *p != ' ')
			p++;
		/* a number and its unit stay together ("1.908 s", "1.908 s.") */
		if (*p == ' ' && p > w && p[-1] >= '0' && p[-1] <= '9' &&
		    (p[1] == 's' || (p[1] == 'm' && p[2] == 's'))) {
			const char *u = p + 1 + (p[1] == 'm');

			if (!u[1] || strchr(" .,;:)", u[1]))
				for (p = u + 1; *p && *p != ' ';)
					p++;
		}
		len = (size_t)(p - w);
		snprintf(word, sizeof(word), "%.*s",
			 (int)(len < sizeof(word) ? len : sizeof(word) - 1), w);
		cols = text_cols(word);
		if (!line_empty && at + 1 + (int)cols > width) {
			fprintf(f, "\n%*s", indent, "");
			at = indent;
			line_empty = true;
		}
		if (!line_empty) {
			fputc(' ', f);
			at++;
		}
		fwrite(w, 1, len, f);
		at += (int)cols;
		line_empty = false;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

size_t doc_failed_requests(struct json_object *doc)
{
	uint64_t n = 0;

	tl_findings_failed_requests(doc, &n);
	return (size_t)n;
}

bool event_failed(struct json_object *ev)
{
	/* failed as in docs/findings.md: the one rule of every count
	 * (findings-model.h), gRPC's status included */
	return tl_http_event_failed(ev);
}

int print_json(FILE *f, struct json_object *o)
{
	const char *s = json_object_to_json_string_ext(
	    o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);

	if (!s)
		return -ENOMEM;
	return fprintf(f, "%s\n", s) < 0 ? -EIO : 0;
}

bool output_is(const struct cli *cli, const char *what)
{
	return cli->output && strcmp(cli->output, what) == 0;
}

int print_structured(const struct cli *cli, struct json_object *o)
{
	int r = output_is(cli, "yaml") ? print_yaml(stdout, o) : print_json(stdout, o);

	if (r == -EILSEQ) {
		cli_err(cli, "-o yaml: the answer holds text that is not UTF-8, which YAML cannot "
			     "carry exactly; use -o json");
		return EXIT_USAGE;
	}
	return r < 0 && r != -EIO ? EXIT_USAGE : EXIT_FOUND;
}

int doc_findings(struct json_object *doc, struct json_object **ret)
{
	return tl_findings_compute(doc, ret);
}

void cli_err(const struct cli *cli, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s%s%s: %s\n", cli->prog, cli->verb ? " " : "",
		cli->verb ? cli->verb->name : "", tx(msg));
}

/* ---- events ---- */

static long long jint(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) ? (long long)json_object_get_int64(v) : 0;
}

#define S(k) (json_str(ev, k) ? json_str(ev, k) : "?")

int64_t prestop_of(const struct tl_model *m, struct json_object *evs, const char *ctr)
{
	int i = tl_model_ctr(m, ctr);
	int64_t term = i >= 0 ? m->ctr[i].sigterm_ns : 0;

	if (i < 0 || !m->deletion_ns)
		return 0;
	for (size_t k = 0; evs && k < json_object_array_length(evs); k++) {
		struct json_object *ev = json_object_array_get_idx(evs, k);
		const char *ty = json_str(ev, "type"), *cn = json_str(ev, "container");
		int64_t at = tl_event_time(ev);

		if (ty && cn && at && strcmp(ty, "process.exec") == 0 && strcmp(cn, ctr) == 0 &&
		    at >= m->deletion_ns - PRESTOP_SKEW_NS && (!term || at < term))
			return at;
	}
	return 0;
}

bool event_is_api(struct json_object *ev)
{
	const char *src = json_str(ev, "source"), *t = json_str(ev, "type");

	if (src)
		return strcmp(src, "api") == 0;
	return t && (strncmp(t, "pod.", 4) == 0 || strncmp(t, "endpoint.", 9) == 0);
}

const char *kind_name(struct json_object *ev)
{
	static const struct {
		const char *type, *name;
	} names[] = {
	    {"pod.deletion_requested", "deletion requested"},
	    {"pod.condition", "Pod condition"},
	    {"container.terminated", "container terminated"},
	    {"pod.deleted", "Pod deleted"},
	    {"endpoint.condition", "endpoint condition"},
	    {"endpoint.removed", "endpoint removed"},
	    {"process.signal_delivered", "signal handled"},
	    {"process.exec", "exec"},
	    {"process.exit", "process exit"},
	    {"socket.listen", "listening"},
	    {"socket.listen_closed", "listener closed"},
	    {"tcp.reset_sent", "TCP reset sent"},
	    {"tcp.reset_received", "TCP reset received"},
	    {"http.request", "HTTP request"},
	    {"http2.goaway", "HTTP/2 GOAWAY"},
	    {"http2.rst_stream", "HTTP/2 stream reset"},
	    {"http2.connection", "HTTP/2 connection ended"},
	    {"tcp.accepted", "connections accepted"},
	    {"events.aggregated", "events aggregated"},
	};
	const char *t = json_str(ev, "type");

	if (!t)
		return "event";
	if (strcmp(t, "process.signal") == 0)
		return json_str(ev, "signal") ? json_str(ev, "signal") : "signal";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i].type, t) == 0)
			return names[i].name;
	return t;
}

/* gRPC's status names (0 OK ... 16 UNAUTHENTICATED). */
const char *grpc_status_name(long long code)
{
	static const char *const names[] = {
	    "OK",		 "CANCELLED",	     "UNKNOWN",		 "INVALID_ARGUMENT",
	    "DEADLINE_EXCEEDED", "NOT_FOUND",	     "ALREADY_EXISTS",	 "PERMISSION_DENIED",
	    "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",	 "OUT_OF_RANGE",
	    "UNIMPLEMENTED",	 "INTERNAL",	     "UNAVAILABLE",	 "DATA_LOSS",
	    "UNAUTHENTICATED",
	};

	return code >= 0 && code < (long long)(sizeof(names) / sizeof(names[0])) ? names[code]
										: "CODE";
}

/* An HTTP/2 request's facts after its HTTP/1 line: " h2 stream N",
 * gRPC's status by name, why it did not complete. */
static void describe_h2_request(struct json_object *ev, char *buf, size_t len)
{
	const char *proto = json_str(ev, "protocol"), *err = json_str(ev, "error");
	size_t n = strlen(buf);
	int64_t g;

	if (!proto || strcmp(proto, "h2") != 0 || n + 1 >= len)
		return;
	n += (size_t)snprintf(buf + n, len - n, " h2");
	if (n < len && json_object_object_get_ex(ev, "streamId", NULL))
		n += (size_t)snprintf(buf + n, len - n, " stream %lld", jint(ev, "streamId"));
	if (n < len && tl_json_int(ev, "grpcStatus", &g))
		n += (size_t)snprintf(buf + n, len - n, " grpc %s", grpc_status_name(g));
	if (n < len && err)
		n += (size_t)snprintf(buf + n, len - n, " (%s)", err);
	if (n < len && tl_json_bool(ev, "afterGoaway", false))
		snprintf(buf + n, len - n, " after GOAWAY");
}

void describe_event(struct json_object *ev, char *buf, size_t len)
{
	const char *t = json_str(ev, "type");

	if (!t)
		t = "?";
	if (strcmp(t, "pod.deletion_requested") == 0)
		snprintf(buf, len, "deletion requested (grace %lld s)",
			 jint(ev, "gracePeriodSeconds"));
	else if (strcmp(t, "pod.condition") == 0)
		snprintf(buf, len, "condition %s=%s", S("condition"), S("status"));
	else if (strcmp(t, "container.terminated") == 0)
		snprintf(buf, len, "terminated: exit code %lld (%s)", jint(ev, "exitCode"),
			 S("reason"));
	else if (strcmp(t, "pod.deleted") == 0)
		snprintf(buf, len, "Pod deleted");
	else if (strcmp(t, "endpoint.condition") == 0)
		snprintf(buf, len, "endpoint in %s: ready=%s serving=%s terminating=%s",
			 S("endpointSlice"), tl_json_bool(ev, "ready", true) ? "true" : "false",
			 tl_json_bool(ev, "serving", true) ? "true" : "false",
			 tl_json_bool(ev, "terminating", false) ? "true" : "false");
	else if (strcmp(t, "endpoint.removed") == 0)
		snprintf(buf, len, "endpoint removed from %s", S("endpointSlice"));
	else if (strcmp(t, "process.signal") == 0)
		snprintf(buf, len, "%s to %s(%lld) from %s(%lld): %s", S("signal"), S("comm"),
			 jint(ev, "pid"), S("senderComm"), jint(ev, "senderPid"), S("result"));
	else if (strcmp(t, "process.signal_delivered") == 0)
		snprintf(buf, len, "%s reached a handler in %s(%lld)", S("signal"), S("comm"),
			 jint(ev, "pid"));
	else if (strcmp(t, "process.exec") == 0)
		snprintf(buf, len, "exec %s (%s, pid %lld)", S("filename"), S("comm"),
			 jint(ev, "pid"));
	else if (strcmp(t, "process.exit") == 0) {
		if (jint(ev, "exitSignal"))
			snprintf(buf, len, "%s(%lld) exited: killed by signal %lld", S("comm"),
				 jint(ev, "pid"), jint(ev, "exitSignal"));
		else
			snprintf(buf, len, "%s(%lld) exited: code %lld", S("comm"), jint(ev, "pid"),
				 jint(ev, "exitCode"));
	} else if (strcmp(t, "socket.listen") == 0)
		snprintf(buf, len, "listening on %s:%lld", S("address"), jint(ev, "port"));
	else if (strcmp(t, "socket.listen_closed") == 0)
		snprintf(buf, len, "stopped listening on %s:%lld", S("address"), jint(ev, "port"));
	else if (strcmp(t, "tcp.reset_sent") == 0)
		snprintf(buf, len, "reset sent %s -> %s", S("local"), S("remote"));
	else if (strcmp(t, "tcp.reset_received") == 0)
		snprintf(buf, len, "reset received %s <- %s", S("local"), S("remote"));
	else if (strcmp(t, "http.request") == 0) {
		struct json_object *d;
		double ms =
		    json_object_object_get_ex(ev, "durationMs", &d) ? json_object_get_double(d) : 0;
		const char *fl = json_str(ev, "responseFlags"), *peer = json_str(ev, "peer");
		long long st = jint(ev, "status");
		char status[32];

		if (st)
			snprintf(status, sizeof(status), "%lld", st);
		else
			snprintf(status, sizeof(status), "no response");
		snprintf(buf, len, "%s %s %s%s%s %s -> %s%s%s id=%s (%.0f ms)", S("direction"),
			 S("method"), S("path"),
			 !peer					       ? ""
			 : json_str(ev, "direction") &&
				 strcmp(json_str(ev, "direction"), "outbound") == 0
			     ? " to "
			     : " from ",
			 peer ? peer : "",
			 json_str(ev, "source") && strcmp(json_str(ev, "source"), "log") == 0
			     ? "[log]"
			     : "[socket]",
			 status, fl && strcmp(fl, "-") ? " " : "", fl && strcmp(fl, "-") ? fl : "",
			 json_str(ev, "requestId") ? json_str(ev, "requestId") : "-", ms);
		describe_h2_request(ev, buf, len);
	} else if (strcmp(t, "http2.goaway") == 0)
		snprintf(buf, len, "GOAWAY %s on connection %lld%s%s: last-stream-id %lld, %s",
			 S("direction"), jint(ev, "conn"), json_str(ev, "peer") ? " with " : "",
			 json_str(ev, "peer") ? json_str(ev, "peer") : "", jint(ev, "lastStreamId"),
			 S("errorName"));
	else if (strcmp(t, "http2.rst_stream") == 0)
		snprintf(buf, len, "RST_STREAM %s on connection %lld: stream %lld, %s%s%s%s%s",
			 S("direction"), jint(ev, "conn"), jint(ev, "streamId"), S("errorName"),
			 json_str(ev, "path") ? " " : "", json_str(ev, "path") ? json_str(ev, "path") : "",
			 json_str(ev, "requestId") ? " id=" : "",
			 json_str(ev, "requestId") ? json_str(ev, "requestId") : "");
	else if (strcmp(t, "http2.connection") == 0)
		snprintf(buf, len,
			 "%s HTTP/2 connection %lld%s%s %s: %lld streams (%lld headers unknown), %lld open "
			 "at its end, GOAWAY sent %lld received %lld",
			 json_str(ev, "direction") ? json_str(ev, "direction") : "an",
			 jint(ev, "conn"), json_str(ev, "peer") ? " with " : "",
			 json_str(ev, "peer") ? json_str(ev, "peer") : "", S("end"),
			 jint(ev, "streams"), jint(ev, "streamsHeadersUnknown"),
			 jint(ev, "streamsOpenAtEnd"), jint(ev, "goawaysSent"),
			 jint(ev, "goawaysReceived"));
	else if (strcmp(t, "tcp.accepted") == 0) {
		long long n = jint(ev, "count");
		int64_t first = tl_event_time(ev), last = 0;
		char d[OFFSET_LEN] = "";

		if (n > 1 && json_str(ev, "last") && tl_time_parse(json_str(ev, "last"), &last) == 0 &&
		    first && last >= first)
			fmt_secs(d, last - first);
		snprintf(buf, len, "accepted %lld connection%s on :%lld from %s%s%s%s", n > 1 ? n : 1,
			 n > 1 ? "s" : "", jint(ev, "port"), S("peer"), n > 1 ? " (the first)" : "",
			 d[0] ? " over " : "", d);
	} else if (strcmp(t, "events.aggregated") == 0)
		snprintf(buf, len, "%lld x %s (aggregated)", jint(ev, "count"),
			 S("aggregatedType"));
	else
		snprintf(buf, len, "%s", t);
}
