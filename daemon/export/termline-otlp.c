/* SPDX-License-Identifier: Apache-2.0 */
/* termline-otlp: closed timeline documents as OTLP, outside the agent.
 *
 *   termline-otlp encode [--protocol P] [--logs] [--signal traces|logs] FILE
 *   termline-otlp send [--endpoint URL] [--protocol P] [--logs] [--headers H]
 *                      [--timeout D] [--certificate F] [--client-certificate F]
 *                      [--client-key F] [--insecure] [--queue-bytes N]
 *                      [--retry-initial-ms N] [--retry-max-elapsed-ms N] FILE...
 *
 * encode writes the request body the agent would send for FILE to stdout
 * and what it holds as one JSON line on stderr. send sends the documents as
 * the agent does (same queue, batching and retries; OTEL_EXPORTER_OTLP_*
 * variables for what the flags leave unset): a backfill of documents whose
 * export failed, or whose agent ran without an endpoint. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "fileio.h"
#include "loop.h"
#include "macro.h"
#include "otlp-export.h"
#include "termline-config.h"

#define PROG "termline-otlp"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " encode [--protocol http/protobuf|http/json] [--logs]\n"
		"                     [--signal traces|logs] FILE\n"
		"       " PROG " send [--endpoint URL] [--protocol P] [--logs] [--headers H]\n"
		"                   [--timeout D] [--certificate F] [--client-certificate F]\n"
		"                   [--client-key F] [--insecure] [--queue-bytes N]\n"
		"                   [--retry-initial-ms N] [--retry-max-elapsed-ms N] [--in-child] FILE...\n"
		"Closed timeline documents as OTLP (docs/export.md).\n"
		"encode: the request body for FILE on stdout, its counts as JSON on stderr.\n"
		"send: the documents to {endpoint}/v1/traces (and /v1/logs with --logs), as\n"
		"  termlined sends them; unset options come from OTEL_EXPORTER_OTLP_*;\n"
		"  --in-child encodes each in a child process, as termlined does.\n"
		"Exit status: 0 done (send: everything accepted), 1 send: something failed,\n"
		"2 bad usage or an unreadable document.\n");
}

static const char *env(const char *name)
{
	return getenv(name);
}

static int read_doc(const char *path, struct json_object **ret)
{
	struct json_tokener *tok;
	char *buf = NULL;
	size_t len = 0;
	int r = tl_read_file(path, TL_OTLP_MAX_DOC_BYTES, &buf, &len);

	if (r < 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(-r));
		return r;
	}
	tok = json_tokener_new_ex(64);
	if (!tok) {
		free(buf);
		return -ENOMEM;
	}
	*ret = json_tokener_parse_ex(tok, buf, (int)len);
	if (!*ret || json_tokener_get_error(tok) != json_tokener_success) {
		fprintf(stderr, PROG ": %s: not JSON\n", path);
		json_object_put(*ret);
		*ret = NULL;
		r = -EINVAL;
	}
	json_tokener_free(tok);
	free(buf);
	return r;
}

static int cmd_encode(int argc, char **argv)
{
	static const struct option lo[] = {{"protocol", required_argument, NULL, 'p'},
					   {"logs", no_argument, NULL, 'l'},
					   {"signal", required_argument, NULL, 's'},
					   {"help", no_argument, NULL, 'h'},
					   {NULL, 0, NULL, 0}};
	struct tl_otlp_encode_opts o = {.protocol = TL_OTLP_HTTP_PROTOBUF};
	enum tl_otlp_signal sig = TL_OTLP_TRACES;
	struct tl_otlp_piece **sel = NULL;
	struct tl_otlp_encoded e = {0};
	struct json_object *doc = NULL;
	char why[TL_OTLP_WHY_MAX];
	char *body = NULL;
	size_t n = 0, len = 0;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (tl_otlp_parse_protocol(optarg, &o.protocol, why) < 0) {
				fprintf(stderr, PROG ": --protocol: %s\n", why);
				return 2;
			}
			break;
		case 'l':
			o.logs = true;
			break;
		case 's':
			if (strcmp(optarg, "traces") == 0)
				sig = TL_OTLP_TRACES;
			else if (strcmp(optarg, "logs") == 0)
				sig = TL_OTLP_LOGS;
			else {
				fprintf(stderr, PROG ": --signal: '%s' is not traces or logs\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	if (sig == TL_OTLP_LOGS)
		o.logs = true;
	o.service_name = env("OTEL_SERVICE_NAME");
	if (read_doc(argv[optind], &doc) < 0)
		return 2;
	r = tl_otlp_encode(doc, &o, &e);
	if (r < 0) {
		fprintf(stderr, PROG ": %s: %s\n", argv[optind],
			r == -EINVAL ? "not a timeline document" : strerror(-r));
		json_object_put(doc);
		return 2;
	}
	sel = calloc(e.n_pieces ? e.n_pieces : 1, sizeof(*sel));
	if (!sel) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < e.n_pieces; i++)
		if (e.pieces[i]->signal == sig)
			sel[n++] = e.pieces[i];
	r = tl_otlp_body(o.protocol, sig, sel, n, &body, &len);
	if (r < 0)
		goto out;
	if (fwrite(body, 1, len, stdout) != len || fflush(stdout) != 0) {
		r = -EIO;
		goto out;
	}
	fprintf(stderr,
		"{\"traceId\":\"%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x\","
		"\"spans\":%u,\"spanEvents\":%u,\"links\":%u,\"requestSpans\":%u,"
		"\"requestsUnexported\":%u,\"eventsDropped\":%u,\"logRecords\":%u,\"pieces\":%zu}\n",
		e.trace_id[0], e.trace_id[1], e.trace_id[2], e.trace_id[3], e.trace_id[4],
		e.trace_id[5], e.trace_id[6], e.trace_id[7], e.trace_id[8], e.trace_id[9],
		e.trace_id[10], e.trace_id[11], e.trace_id[12], e.trace_id[13], e.trace_id[14],
		e.trace_id[15], e.spans, e.span_events, e.links, e.request_spans,
		e.requests_unexported, e.events_dropped, e.log_records, n);
out:
	if (r < 0)
		fprintf(stderr, PROG ": %s\n", strerror(-r));
	free(body);
	free(sel);
	tl_otlp_encoded_done(&e);
	json_object_put(doc);
	return r < 0 ? 2 : 0;
}

/* termline-otlp pieces: what the agent's exporter runs to encode a
 * document off its loop (otlp-export.c reads this output):
 *   L <label>\n, then per piece P <signal> <items> <length>\n<bytes>,
 *   then E <spans> <span events> <requests not exported> <events dropped>\n
 * Settings come as arguments: the agent gives its helpers an empty
 * environment. */
static int cmd_pieces(int argc, char **argv)
{
	static const struct option lo[] = {{"protocol", required_argument, NULL, 'p'},
					   {"logs", no_argument, NULL, 'l'},
					   {"service-name", required_argument, NULL, 's'},
					   {"resource-attr", required_argument, NULL, 'a'},
					   {NULL, 0, NULL, 0}};
	struct tl_otlp_attr attrs[TL_OTLP_MAX_RESOURCE_ATTRS];
	struct tl_otlp_encode_opts o = {.protocol = TL_OTLP_HTTP_PROTOBUF, .resource_attrs = attrs};
	struct tl_otlp_encoded e = {0};
	struct json_object *doc = NULL, *pod;
	char why[TL_OTLP_WHY_MAX];
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (tl_otlp_parse_protocol(optarg, &o.protocol, why) < 0) {
				fprintf(stderr, PROG ": --protocol: %s\n", why);
				return 2;
			}
			break;
		case 'l':
			o.logs = true;
			break;
		case 's':
			o.service_name = optarg;
			break;
		case 'a': {
			char *eq = strchr(optarg, '=');

			if (!eq || o.n_resource_attrs >= TL_OTLP_MAX_RESOURCE_ATTRS) {
				fprintf(stderr, PROG ": --resource-attr: '%s' is not KEY=VALUE\n", optarg);
				return 2;
			}
			*eq = '\0';
			attrs[o.n_resource_attrs].key = optarg;
			attrs[o.n_resource_attrs++].value = eq + 1;
			break;
		}
		default:
			return 2;
		}
	}
	if (optind + 1 != argc)
		return 2;
	/* The agent's end of the pipe is non-blocking, and so may be this
	 * one (one pipe2() made both): a full pipe is waited for here. */
	c = fcntl(STDOUT_FILENO, F_GETFL);
	if (c < 0 || ((c & O_NONBLOCK) && fcntl(STDOUT_FILENO, F_SETFL, c & ~O_NONBLOCK) < 0)) {
		fprintf(stderr, PROG ": stdout: %s\n", strerror(errno));
		return 2;
	}
	if (read_doc(argv[optind], &doc) < 0)
		return 2;
	r = tl_otlp_encode(doc, &o, &e);
	if (r < 0) {
		fprintf(stderr, PROG ": %s: %s\n", argv[optind],
			r == -EINVAL ? "not a timeline document" : strerror(-r));
		json_object_put(doc);
		return 2;
	}
	pod = json_object_object_get(doc, "pod");
	if (json_object_is_type(json_object_object_get(pod, "namespace"), json_type_string) &&
	    json_object_is_type(json_object_object_get(pod, "name"), json_type_string))
		printf("L %s/%s\n", json_object_get_string(json_object_object_get(pod, "namespace")),
		       json_object_get_string(json_object_object_get(pod, "name")));
	else
		printf("L %s\n", argv[optind]);
	for (size_t i = 0; i < e.n_pieces; i++) {
		const struct tl_otlp_piece *p = e.pieces[i];

		printf("P %d %u %zu\n", (int)p->signal, p->items, p->len);
		if (fwrite(p->data, 1, p->len, stdout) != p->len)
			break;
	}
	printf("E %u %u %u %u\n", e.spans, e.span_events, e.requests_unexported, e.events_dropped);
	r = fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
	tl_otlp_encoded_done(&e);
	json_object_put(doc);
	return r;
}

static const char *const what_names[] = {"sent", "retrying", "failed", "dropped", "bad document"};

/* What send saw: any failure, and each document's outcome. */
struct sent {
	bool bad;
	unsigned long long docs[3]; /* by enum tl_otlp_doc_outcome */
};

static void on_document(void *ud, const char *key _unused_, enum tl_otlp_doc_outcome o)
{
	struct sent *st = ud;

	if ((unsigned)o < 3)
		st->docs[o]++;
}

static void on_report(void *ud, const struct tl_otlp_report *r, const struct tl_otlp_stats *s _unused_)
{
	bool *bad = &((struct sent *)ud)->bad;

	if (r->what == TL_OTLP_FAILED || r->what == TL_OTLP_DROPPED || r->what == TL_OTLP_BAD_DOC)
		*bad = true;
	if (r->what == TL_OTLP_SENT && r->rejected)
		*bad = true;
	fprintf(stderr, PROG ": %s: %s %u %s", r->label ? r->label : "-", what_names[r->what],
		r->items, r->signal == TL_OTLP_TRACES ? "spans" : "log records");
	if (r->status)
		fprintf(stderr, " (HTTP %ld)", r->status);
	if (r->rejected)
		fprintf(stderr, ", %lld rejected", (long long)r->rejected);
	if (r->error && r->error[0])
		fprintf(stderr, ": %s", r->error);
	if (r->what == TL_OTLP_RETRYING)
		fprintf(stderr, "; again in %u ms", r->retry_ms);
	fputc('\n', stderr);
}

struct waiter {
	struct tl_otlp_exporter *x;
};

static void idle_cb(struct tl_loop *loop, struct tl_timer *t _unused_, void *ud)
{
	struct waiter *w = ud;

	if (tl_otlp_exporter_idle(w->x))
		tl_loop_quit(loop, 0);
}

static int cmd_send(int argc, char **argv)
{
	static const struct option lo[] = {{"endpoint", required_argument, NULL, 'e'},
					   {"protocol", required_argument, NULL, 'p'},
					   {"headers", required_argument, NULL, 'H'},
					   {"timeout", required_argument, NULL, 't'},
					   {"certificate", required_argument, NULL, 'c'},
					   {"client-certificate", required_argument, NULL, 'C'},
					   {"client-key", required_argument, NULL, 'k'},
					   {"insecure", no_argument, NULL, 'i'},
					   {"logs", no_argument, NULL, 'l'},
					   {"retry-initial-ms", required_argument, NULL, 'r'},
					   {"retry-max-elapsed-ms", required_argument, NULL, 'E'},
					   {"queue-bytes", required_argument, NULL, 'q'},
					   {"in-child", no_argument, NULL, 'K'},
					   {"help", no_argument, NULL, 'h'},
					   {NULL, 0, NULL, 0}};
	struct tl_otlp_settings set = {0};
	struct tl_otlp_config cfg = {0};
	struct tl_otlp_exporter_opts xo = {0};
	struct tl_otlp_exporter *x = NULL;
	struct tl_loop *loop = NULL;
	struct tl_timer *idle = NULL;
	struct tl_otlp_stats st;
	struct waiter w;
	struct sent sent = {0};
	bool in_child = false;
	char err[512], *helper = NULL;
	int c, r, rc = 2;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'e':
			set.endpoint = optarg;
			break;
		case 'p':
			set.protocol = optarg;
			break;
		case 'H':
			set.headers = optarg;
			break;
		case 't':
			set.timeout = optarg;
			break;
		case 'c':
			set.certificate = optarg;
			break;
		case 'C':
			set.client_certificate = optarg;
			break;
		case 'k':
			set.client_key = optarg;
			break;
		case 'i':
			set.insecure = true;
			break;
		case 'l':
			set.logs = true;
			break;
		case 'K':
			in_child = true;
			break;
		case 'r':
		case 'E':
		case 'q': {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);

			if (*end || end == optarg || v == 0 || v > UINT32_MAX) {
				fprintf(stderr, PROG ": '%s' is not a positive number\n", optarg);
				return 2;
			}
			if (c == 'r')
				xo.retry_initial_ms = (uint32_t)v;
			else if (c == 'E')
				xo.retry_max_elapsed_ms = (uint32_t)v;
			else
				set.queue_bytes = v;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	r = tl_otlp_config_resolve(&set, env, &cfg, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s\n", r == -EINVAL ? err : strerror(-r));
		return 2;
	}
	if (!cfg.enabled) {
		fprintf(stderr, PROG ": no endpoint (--endpoint or OTEL_EXPORTER_OTLP_ENDPOINT)\n");
		goto out;
	}
	xo.report = on_report;
	xo.document_done = on_document;
	xo.ud = &sent;
	if (in_child) {
		/* as termlined does it: each document encoded by a child */
		helper = tl_otlp_helper_find();
		if (!helper) {
			fprintf(stderr, PROG ": --in-child: termline-otlp not found next to itself\n");
			goto out;
		}
		xo.helper = helper;
	}
	if (tl_loop_new(&loop) < 0 || tl_otlp_exporter_new(loop, &cfg, &xo, &x) < 0) {
		fprintf(stderr, PROG ": cannot start: %s\n", strerror(ENOMEM));
		goto out;
	}
	for (int i = optind; i < argc; i++) {
		if (tl_otlp_exporter_add_doc(x, argv[i], argv[i]) < 0) {
			fprintf(stderr, PROG ": %s: out of memory\n", argv[i]);
			goto out;
		}
	}
	tl_otlp_exporter_flush(x);
	w.x = x;
	if (tl_loop_add_timer(loop, 1, 50, idle_cb, &w, &idle) < 0)
		goto out;
	tl_loop_run(loop);
	tl_otlp_exporter_stats(x, &st);
	printf("{\"spansSent\":%llu,\"spansFailed\":%llu,\"spansDropped\":%llu,"
	       "\"logRecordsSent\":%llu,\"logRecordsFailed\":%llu,\"logRecordsDropped\":%llu,"
	       "\"requests\":%llu,\"retries\":%llu,\"documents\":%llu,\"documentErrors\":%llu,"
	       "\"documentsSent\":%llu,\"documentsNotSent\":%llu,\"documentsBad\":%llu}\n",
	       (unsigned long long)st.sent[0], (unsigned long long)st.failed[0],
	       (unsigned long long)st.dropped[0], (unsigned long long)st.sent[1],
	       (unsigned long long)st.failed[1], (unsigned long long)st.dropped[1],
	       (unsigned long long)st.requests, (unsigned long long)st.retries,
	       (unsigned long long)st.documents, (unsigned long long)st.document_errors,
	       sent.docs[TL_OTLP_DOC_SENT], sent.docs[TL_OTLP_DOC_NOT_SENT], sent.docs[TL_OTLP_DOC_BAD]);
	rc = sent.bad ? 1 : 0;
out:
	tl_timer_free(idle);
	tl_otlp_exporter_free(x);
	tl_loop_free(loop);
	tl_otlp_config_free(&cfg);
	free(helper);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "encode") == 0)
		return cmd_encode(argc - 1, argv + 1);
	if (strcmp(argv[1], "send") == 0)
		return cmd_send(argc - 1, argv + 1);
	if (strcmp(argv[1], "pieces") == 0)
		return cmd_pieces(argc - 1, argv + 1);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf(PROG " %s\n", TERMLINE_VERSION);
		return 0;
	}
	usage(stderr);
	return 2;
}
