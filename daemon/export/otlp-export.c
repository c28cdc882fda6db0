/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter's queue and its one request in flight (otlp-export.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <limits.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "child.h"
#include "curl-multi.h"
#include "fileio.h"
#include "json-util.h"
#include "macro.h"
#include "metrics.h"
#include "otlp-export.h"
#include "termline-config.h"

#define RESP_MAX 4096 /* of an answer's body: a partial success or an error's start */
#define LABEL_MAX 160
#define JSON_DEPTH 64

/* A document added with a key: how many of its batches are still to be
 * answered, and whether one was not sent. */
struct ticket {
	char *key;
	unsigned batches;
	bool unsent;
};

struct tickets {
	struct ticket **v;
	size_t n, cap;
};

struct batch {
	struct batch *next;
	struct tickets tickets; /* the keyed documents it carries */
	enum tl_otlp_signal signal;
	char *body;
	size_t len;
	uint32_t items;
	unsigned attempts;
	uint64_t first_ms; /* first attempt, monotonic; 0 = not tried yet */
	char label[LABEL_MAX];
};

struct pending {
	struct tl_otlp_piece **pieces;
	size_t n, cap;
	struct tickets tickets;
	uint32_t items;
	size_t bytes;
	unsigned docs;
	char label[LABEL_MAX];
};

/* The helper encoding one document off the loop. */
struct helper_run {
	struct tl_child child;
	char *path;
	char *key;
	char *out;
	size_t len, cap, max;
	bool too_big;
	struct tl_timer *poll; /* without a pidfd: polls its exit */
};

struct tl_otlp_exporter {
	struct tl_loop *loop;
	/* documents waiting for the helper, and the one it encodes */
	struct docq_entry {
		char *path, *key;
	} *docq;
	size_t docq_head, docq_n;
	struct helper_run *run;
	struct tl_otlp_config cfg;
	struct tl_otlp_exporter_opts o;
	struct tl_otlp_encode_opts enc;
	struct tl_curlm *curlm;
	struct tl_timer *flush_timer, *retry_timer;
	bool flush_armed, waiting;
	struct pending pend[2];
	struct batch *head, *tail;
	struct tl_otlp_stats st;
	uint64_t rng;
	/* the request in flight (of head) */
	struct tl_curlm_xfer xfer;
	CURL *easy;
	struct curl_slist *hdrs;
	char resp[RESP_MAX + 1];
	size_t resp_len;
	int retry_after_s;
	char errbuf[CURL_ERROR_SIZE];
};

static void report(struct tl_otlp_exporter *x, const struct tl_otlp_report *r)
{
	if (x->o.report)
		x->o.report(x->o.ud, r, &x->st);
}

static void label_add(char *label, unsigned *docs, const char *what)
{
	(*docs)++;
	if (*docs == 1)
		snprintf(label, LABEL_MAX, "%s", what ? what : "(unnamed)");
	else {
		char *plus = strstr(label, " +");

		if (plus)
			*plus = '\0';
		snprintf(label + strlen(label), LABEL_MAX - strlen(label), " +%u", *docs - 1);
	}
}

/* ---- documents with a key: their one report ---- */

static void doc_done(struct tl_otlp_exporter *x, const char *key, enum tl_otlp_doc_outcome o)
{
	if (key && x->o.document_done)
		x->o.document_done(x->o.ud, key, o);
}

static void ticket_answered(struct tl_otlp_exporter *x, struct ticket *t, bool sent)
{
	if (!sent)
		t->unsent = true;
	if (--t->batches)
		return;
	doc_done(x, t->key, t->unsent ? TL_OTLP_DOC_NOT_SENT : TL_OTLP_DOC_SENT);
	free(t->key);
	free(t);
}

static int tickets_add(struct tickets *ts, struct ticket *t)
{
	if (ts->n == ts->cap) {
		size_t c = ts->cap ? ts->cap * 2 : 8;
		struct ticket **v = realloc(ts->v, c * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ts->v = v;
		ts->cap = c;
	}
	ts->v[ts->n++] = t;
	t->batches++;
	return 0;
}

/* Every document of ts had this batch answered (sent or not). */
static void tickets_answered(struct tl_otlp_exporter *x, struct tickets *ts, bool sent)
{
	for (size_t i = 0; i < ts->n; i++)
		ticket_answered(x, ts->v[i], sent);
	free(ts->v);
	memset(ts, 0, sizeof(*ts));
}

/* ---- the queue ---- */

static void batch_free(struct batch *b)
{
	if (!b)
		return;
	free(b->body);
	free(b);
}

/* The head is done with: sent (a 2xx) or not. */
static void pop(struct tl_otlp_exporter *x, bool sent)
{
	struct batch *b = x->head;

	x->head = b->next;
	if (!x->head)
		x->tail = NULL;
	x->st.queued[b->signal] -= b->items;
	x->st.queue_bytes -= b->len;
	tickets_answered(x, &b->tickets, sent);
	batch_free(b);
}

static void kick(struct tl_otlp_exporter *x);
static int helper_add(struct tl_otlp_exporter *x, const char *path, const char *key);

static int seal(struct tl_otlp_exporter *x, enum tl_otlp_signal sig)
{
	struct pending *p = &x->pend[sig];
	struct batch *b;
	int r;

	if (!p->n)
		return 0;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	r = tl_otlp_body(x->cfg.protocol, sig, p->pieces, p->n, &b->body, &b->len);
	if (r < 0) {
		free(b);
		return r;
	}
	b->signal = sig;
	b->items = p->items;
	b->tickets = p->tickets;
	memset(&p->tickets, 0, sizeof(p->tickets));
	memcpy(b->label, p->label, sizeof(b->label));
	for (size_t i = 0; i < p->n; i++)
		free(p->pieces[i]);
	x->st.queue_bytes = x->st.queue_bytes - p->bytes + b->len;
	p->n = 0;
	p->items = 0;
	p->bytes = 0;
	p->docs = 0;
	p->label[0] = '\0';
	if (x->tail)
		x->tail->next = b;
	else
		x->head = b;
	x->tail = b;
	kick(x);
	return 0;
}

static void flush_cb(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *ud)
{
	struct tl_otlp_exporter *x = ud;

	x->flush_armed = false;
	tl_otlp_exporter_flush(x);
}

void tl_otlp_exporter_flush(struct tl_otlp_exporter *x)
{
	for (int s = 0; s < 2; s++) {
		if (seal(x, (enum tl_otlp_signal)s) < 0) {
			/* out of memory: the pieces wait for the next flush */
			if (!x->flush_armed && tl_timer_arm(x->flush_timer, 1000, 0) == 0)
				x->flush_armed = true;
		}
	}
}

/* e's pieces into the pending batches; key (NULL: none) is reported once
 * every batch carrying them is answered. */
static int queue_doc(struct tl_otlp_exporter *x, const char *label, struct tl_otlp_encoded *e,
		     const char *key)
{
	uint64_t bytes = 0;
	uint32_t items[2] = {0, 0};
	bool any[2] = {false, false};
	struct ticket *t = NULL;

	for (size_t i = 0; i < e->n_pieces; i++) {
		bytes += e->pieces[i]->len;
		items[e->pieces[i]->signal] += e->pieces[i]->items;
		any[e->pieces[i]->signal] = true;
	}
	x->st.documents++;
	if (x->st.queue_bytes + bytes > x->cfg.queue_bytes) {
		for (int s = 0; s < 2; s++) {
			struct tl_otlp_report r = {.signal = (enum tl_otlp_signal)s,
						   .what = TL_OTLP_DROPPED,
						   .items = items[s],
						   .label = label};

			if (!any[s])
				continue;
			x->st.dropped[s] += items[s];
			report(x, &r);
		}
		doc_done(x, key, TL_OTLP_DOC_NOT_SENT);
		return 0;
	}
	if (key && (any[0] || any[1])) {
		t = calloc(1, sizeof(*t));
		if (!t || !(t->key = strdup(key))) {
			free(t);
			doc_done(x, key, TL_OTLP_DOC_NOT_SENT);
			return -ENOMEM;
		}
		/* held until its pieces are queued: a seal below cannot finish it */
		t->batches = 1;
	}
	for (size_t i = 0; i < e->n_pieces; i++) {
		struct tl_otlp_piece *pc = e->pieces[i];
		struct pending *p = &x->pend[pc->signal];

		if (p->n == p->cap) {
			size_t c = p->cap ? p->cap * 2 : 16;
			struct tl_otlp_piece **q = realloc(p->pieces, c * sizeof(*q));

			if (!q)
				goto nomem; /* the rest stays with e, freed by the caller */
			p->pieces = q;
			p->cap = c;
		}
		p->pieces[p->n++] = pc;
		e->pieces[i] = NULL;
		p->items += pc->items;
		p->bytes += pc->len;
		x->st.queued[pc->signal] += pc->items;
		x->st.queue_bytes += pc->len;
	}
	for (int s = 0; s < 2; s++)
		if (t && any[s] && tickets_add(&x->pend[s].tickets, t) < 0)
			goto nomem;
	if (t)
		ticket_answered(x, t, true); /* the hold */
	else if (!any[0] && !any[1])
		doc_done(x, key, TL_OTLP_DOC_SENT); /* nothing to send */
	t = NULL;
	for (int s = 0; s < 2; s++) {
		if (!any[s])
			continue;
		label_add(x->pend[s].label, &x->pend[s].docs, label);
		if (x->pend[s].items >= TL_OTLP_BATCH_ITEMS && seal(x, (enum tl_otlp_signal)s) < 0)
			return -ENOMEM;
	}
	if ((x->pend[0].n || x->pend[1].n) && !x->flush_armed) {
		if (tl_timer_arm(x->flush_timer, x->o.batch_delay_ms, 0) < 0)
			tl_otlp_exporter_flush(x);
		else
			x->flush_armed = true;
	}
	return 0;
nomem:
	/* what is queued goes out; the document is reported not sent */
	if (t) {
		t->unsent = true;
		ticket_answered(x, t, false);
	}
	return -ENOMEM;
}

static void bad_doc(struct tl_otlp_exporter *x, const char *label, const char *why)
{
	struct tl_otlp_report rep = {.what = TL_OTLP_BAD_DOC, .error = why, .label = label};

	x->st.document_errors++;
	report(x, &rep);
}

static int add_json(struct tl_otlp_exporter *x, const char *label, struct json_object *doc,
		    const char *key)
{
	struct tl_otlp_encoded e = {0};
	struct json_object *pod = tl_json_object(doc, "pod");
	const char *ns = tl_json_str(pod, "namespace"), *name = tl_json_str(pod, "name");
	char buf[LABEL_MAX];
	int r;

	if (ns && name) {
		snprintf(buf, sizeof(buf), "%s/%s", ns, name);
		label = buf;
	}
	r = tl_otlp_encode(doc, &x->enc, &e);
	if (r == -EINVAL) {
		bad_doc(x, label, "not a timeline document");
		doc_done(x, key, TL_OTLP_DOC_BAD);
		return 0;
	}
	if (r < 0) {
		doc_done(x, key, TL_OTLP_DOC_NOT_SENT);
		return r;
	}
	r = queue_doc(x, label, &e, key);
	tl_otlp_encoded_done(&e);
	return r;
}

int tl_otlp_exporter_add_json(struct tl_otlp_exporter *x, const char *label,
			      struct json_object *doc)
{
	return add_json(x, label, doc, NULL);
}

static int add(struct tl_otlp_exporter *x, const char *path, const char *text, size_t len,
	       const char *key)
{
	struct json_tokener *tok;
	struct json_object *doc = NULL;
	const char *why = NULL;
	char *buf = NULL;
	int r = 0;

	if (!text && path && x->o.helper)
		return helper_add(x, path, key);
	if (!text) {
		if (!path)
			return -EINVAL;
		r = tl_read_file(path, TL_OTLP_MAX_DOC_BYTES, &buf, &len);
		if (r == -ENOMEM) {
			doc_done(x, key, TL_OTLP_DOC_NOT_SENT);
			return r;
		}
		if (r < 0) {
			why = r == -EFBIG ? "larger than 256 MiB" : strerror(-r);
			goto bad;
		}
		text = buf;
	}
	if (len > TL_OTLP_MAX_DOC_BYTES || len > INT32_MAX) {
		why = "larger than 256 MiB";
		goto bad;
	}
	tok = json_tokener_new_ex(JSON_DEPTH);
	if (!tok) {
		free(buf);
		doc_done(x, key, TL_OTLP_DOC_NOT_SENT);
		return -ENOMEM;
	}
	doc = json_tokener_parse_ex(tok, text, (int)len);
	if (!doc || json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(doc);
		doc = NULL;
	}
	json_tokener_free(tok);
	free(buf);
	buf = NULL;
	if (!doc) {
		why = "not JSON";
		goto bad;
	}
	r = add_json(x, path, doc, key);
	json_object_put(doc);
	return r;
bad:
	free(buf);
	bad_doc(x, path, why);
	doc_done(x, key, TL_OTLP_DOC_BAD);
	return 0;
}

int tl_otlp_exporter_add(struct tl_otlp_exporter *x, const char *path, const char *text,
			 size_t len)
{
	return add(x, path, text, len, NULL);
}

int tl_otlp_exporter_add_doc(struct tl_otlp_exporter *x, const char *path, const char *key)
{
	if (!path || !key)
		return -EINVAL;
	return add(x, path, NULL, 0, key);
}

/* ---- encoding off the loop (termline-otlp pieces) ---- */

static void helper_next(struct tl_otlp_exporter *x);

static void helper_end(struct tl_otlp_exporter *x)
{
	struct helper_run *h = x->run;

	if (!h)
		return;
	if (h->child.out_fd >= 0) {
		tl_loop_del_io(x->loop, h->child.out_fd);
		close(h->child.out_fd);
	}
	if (h->child.pid_fd >= 0) {
		tl_loop_del_io(x->loop, h->child.pid_fd);
		close(h->child.pid_fd);
	}
	if (h->child.pid > 0)
		tl_child_kill(&h->child);
	tl_timer_free(h->poll);
	free(h->path);
	free(h->key);
	free(h->out);
	free(h);
	x->run = NULL;
}

/* The helper's output as pieces (its format: termline-otlp.c, cmd_pieces). */
static int helper_parse(struct tl_otlp_exporter *x, struct helper_run *h)
{
	struct tl_otlp_encoded e = {0};
	char label[LABEL_MAX] = "", *p = h->out, *end = h->out + h->len;
	size_t cap = 0;
	int r = -EBADMSG;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		int sig;
		unsigned items;
		size_t len;

		if (!nl)
			goto out;
		*nl = '\0';
		if (p[0] == 'L' && p[1] == ' ') {
			snprintf(label, sizeof(label), "%s", p + 2);
		} else if (p[0] == 'E') {
			r = 0;
			break;
		} else if (sscanf(p, "P %d %u %zu", &sig, &items, &len) == 3 && (sig == 0 || sig == 1) &&
			   len <= (size_t)(end - nl - 1)) {
			struct tl_otlp_piece *pc = malloc(sizeof(*pc) + len), **q;

			if (!pc) {
				r = -ENOMEM;
				goto out;
			}
			pc->signal = (enum tl_otlp_signal)sig;
			pc->items = items;
			pc->len = len;
			memcpy(pc->data, nl + 1, len);
			if (e.n_pieces == cap) {
				cap = cap ? cap * 2 : 8;
				q = realloc(e.pieces, cap * sizeof(*q));
				if (!q) {
					free(pc);
					r = -ENOMEM;
					goto out;
				}
				e.pieces = q;
			}
			e.pieces[e.n_pieces++] = pc;
			nl += len;
		} else {
			goto out;
		}
		p = nl + 1;
	}
	if (r == 0) {
		/* it reports the key, now or once sent */
		r = queue_doc(x, label[0] ? label : h->path, &e, h->key);
		tl_otlp_encoded_done(&e);
		return r;
	}
out:
	if (r == -EBADMSG) {
		bad_doc(x, h->path, "termline-otlp's output is malformed");
		doc_done(x, h->key, TL_OTLP_DOC_BAD);
	} else {
		doc_done(x, h->key, TL_OTLP_DOC_NOT_SENT);
	}
	tl_otlp_encoded_done(&e);
	return r == -EBADMSG ? 0 : r;
}

static void helper_exited(struct tl_otlp_exporter *x)
{
	struct helper_run *h = x->run;
	int status = 0, r;
	char why[96];

	r = tl_child_reap(&h->child, &status);
	if (r == 0)
		return; /* still running */
	if (h->too_big) {
		snprintf(why, sizeof(why), "its encoding is larger than the free room of the queue");
		bad_doc(x, h->path, why);
		doc_done(x, h->key, TL_OTLP_DOC_NOT_SENT);
	} else if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(why, sizeof(why), "termline-otlp failed (%s %d)",
			 r < 0 ? "error" : WIFEXITED(status) ? "exit" : "signal",
			 r < 0 ? -r : WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		bad_doc(x, h->path, why);
		/* it exits 1 for a document it cannot read or encode; killed
		 * by a signal, it may do better another time */
		doc_done(x, h->key, r > 0 && WIFEXITED(status) ? TL_OTLP_DOC_BAD : TL_OTLP_DOC_NOT_SENT);
	} else if (helper_parse(x, h) < 0) {
		bad_doc(x, h->path, "out of memory");
	}
	helper_end(x);
	helper_next(x);
}

static int helper_pid_cb(struct tl_loop *loop _unused_, int fd _unused_, uint32_t events _unused_,
			 void *ud)
{
	helper_exited(ud);
	return 0;
}

static void helper_poll_cb(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *ud)
{
	helper_exited(ud);
}

static int helper_out_cb(struct tl_loop *loop _unused_, int fd, uint32_t events _unused_, void *ud)
{
	struct tl_otlp_exporter *x = ud;
	struct helper_run *h = x->run;

	for (;;) {
		ssize_t n;

		if (h->len == h->cap) {
			size_t c = h->cap ? h->cap * 2 : 64 * 1024;
			char *q;

			if (h->cap >= h->max) {
				/* more than the queue could take: stop reading, stop it */
				h->too_big = true;
				tl_child_kill(&h->child);
				break;
			}
			if (c > h->max)
				c = h->max;
			q = realloc(h->out, c);
			if (!q) {
				h->too_big = true;
				tl_child_kill(&h->child);
				break;
			}
			h->out = q;
			h->cap = c;
		}
		n = read(fd, h->out + h->len, h->cap - h->len);
		if (n > 0) {
			h->len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		break; /* EOF or an error: the output is complete */
	}
	tl_loop_del_io(x->loop, fd);
	close(fd);
	h->child.out_fd = -1;
	if (h->child.pid <= 0 || h->child.pid_fd < 0 ||
	    tl_loop_add_io(x->loop, h->child.pid_fd, EPOLLIN, helper_pid_cb, x) < 0) {
		/* no pidfd to wait on: poll */
		if (h->child.pid > 0 && tl_loop_add_timer(x->loop, 1, 20, helper_poll_cb, x, &h->poll) == 0)
			return 0;
		helper_exited(x);
	}
	return 0;
}

static void helper_next(struct tl_otlp_exporter *x)
{
	while (!x->run && x->docq_n) {
		char *path = x->docq[x->docq_head].path, *key = x->docq[x->docq_head].key;
		struct helper_run *h;
		char *argv[8 + 2 * TL_OTLP_MAX_RESOURCE_ATTRS], *envp[] = {NULL};
		char *attr_args[TL_OTLP_MAX_RESOURCE_ATTRS] = {NULL};
		int a = 0, r;

		memset(&x->docq[x->docq_head], 0, sizeof(x->docq[0]));
		x->docq_head = (x->docq_head + 1) % TL_OTLP_MAX_PENDING_DOCS;
		x->docq_n--;
		h = calloc(1, sizeof(*h));
		if (!h) {
			bad_doc(x, path, "out of memory");
			doc_done(x, key, TL_OTLP_DOC_NOT_SENT);
			free(path);
			free(key);
			continue;
		}
		h->path = path;
		h->key = key;
		h->max = x->cfg.queue_bytes > x->st.queue_bytes
				 ? (size_t)(x->cfg.queue_bytes - x->st.queue_bytes) + 4096
				 : 4096;
		argv[a++] = (char *)x->o.helper;
		argv[a++] = "pieces";
		argv[a++] = "--protocol";
		argv[a++] = (char *)tl_otlp_protocol_name(x->cfg.protocol);
		if (x->cfg.logs)
			argv[a++] = "--logs";
		argv[a++] = "--service-name";
		argv[a++] = x->cfg.service_name ? x->cfg.service_name : "termline";
		r = 0;
		for (size_t i = 0; i < x->cfg.n_resource_attrs; i++) {
			if (asprintf(&attr_args[i], "%s=%s", x->cfg.resource_attrs[i].key,
				     x->cfg.resource_attrs[i].value) < 0) {
				attr_args[i] = NULL;
				r = -ENOMEM;
				break;
			}
			argv[a++] = "--resource-attr";
			argv[a++] = attr_args[i];
		}
		argv[a++] = path;
		argv[a] = NULL;
		if (r == 0)
			r = tl_child_spawn(x->o.helper, false, argv, envp, &h->child);
		for (size_t i = 0; i < x->cfg.n_resource_attrs; i++)
			free(attr_args[i]);
		x->run = h;
		if (r < 0) {
			h->child.out_fd = h->child.pid_fd = -1;
			h->child.pid = -1;
			bad_doc(x, path, r == -ENOMEM ? "out of memory" : "termline-otlp could not be started");
			doc_done(x, key, TL_OTLP_DOC_NOT_SENT);
			helper_end(x);
			continue;
		}
		if (tl_loop_add_io(x->loop, h->child.out_fd, EPOLLIN, helper_out_cb, x) < 0) {
			bad_doc(x, path, "cannot watch termline-otlp");
			doc_done(x, key, TL_OTLP_DOC_NOT_SENT);
			helper_end(x);
			continue;
		}
	}
}

static int helper_add(struct tl_otlp_exporter *x, const char *path, const char *key)
{
	struct docq_entry *q;

	if (x->docq_n >= TL_OTLP_MAX_PENDING_DOCS) {
		bad_doc(x, path, "more documents wait to be encoded than the exporter holds");
		doc_done(x, key, TL_OTLP_DOC_NOT_SENT);
		return 0;
	}
	if (!x->docq) {
		x->docq = calloc(TL_OTLP_MAX_PENDING_DOCS, sizeof(*x->docq));
		if (!x->docq) {
			doc_done(x, key, TL_OTLP_DOC_NOT_SENT);
			return -ENOMEM;
		}
	}
	q = &x->docq[(x->docq_head + x->docq_n) % TL_OTLP_MAX_PENDING_DOCS];
	q->path = strdup(path);
	q->key = key ? strdup(key) : NULL;
	if (!q->path || (key && !q->key)) {
		free(q->path);
		free(q->key);
		memset(q, 0, sizeof(*q));
		doc_done(x, key, TL_OTLP_DOC_NOT_SENT);
		return -ENOMEM;
	}
	x->docq_n++;
	helper_next(x);
	return 0;
}

char *tl_otlp_helper_find(void)
{
	static const char *const rel[] = {"termline-otlp", "export/termline-otlp",
					  "../bin/termline-otlp"};
	char exe[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
		if (access(cand, X_OK) == 0)
			return strdup(cand);
	}
	return NULL;
}

/* ---- the request in flight ---- */

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct tl_otlp_exporter *x = ud;
	size_t len = size * nmemb, n = RESP_MAX - x->resp_len;

	/* the start of the body is all that is read; the rest is skipped */
	if (n > len)
		n = len;
	memcpy(x->resp + x->resp_len, ptr, n);
	x->resp_len += n;
	return len;
}

static size_t header_cb(char *buf, size_t size, size_t nitems, void *ud)
{
	struct tl_otlp_exporter *x = ud;
	size_t len = size * nitems;
	static const char name[] = "retry-after:";

	if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
		x->retry_after_s = -1; /* a new response (after 100 Continue) */
	} else if (len > sizeof(name) - 1 && strncasecmp(buf, name, sizeof(name) - 1) == 0) {
		char v[64];
		size_t n = len - (sizeof(name) - 1);
		char *p = v, *end;
		long s;

		if (n >= sizeof(v))
			return len;
		memcpy(v, buf + sizeof(name) - 1, n);
		v[n] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		p[strcspn(p, "\r\n")] = '\0';
		if (isdigit((unsigned char)*p)) {
			/* delay-seconds (RFC 9110 section 10.2.3) */
			s = strtol(p, &end, 10);
			if (*end == '\0' && s >= 0)
				x->retry_after_s = s > TL_OTLP_RETRY_AFTER_MAX_S ? TL_OTLP_RETRY_AFTER_MAX_S
										: (int)s;
		} else {
			/* or an HTTP-date */
			time_t t = curl_getdate(p, NULL), now = time(NULL);

			if (t != (time_t)-1)
				x->retry_after_s = t <= now ? 0
						   : t - now > TL_OTLP_RETRY_AFTER_MAX_S
						       ? TL_OTLP_RETRY_AFTER_MAX_S
						       : (int)(t - now);
		}
	}
	return len;
}

static void request_end(struct tl_otlp_exporter *x)
{
	if (x->easy)
		curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->hdrs);
	x->easy = NULL;
	x->hdrs = NULL;
}

static uint64_t rnd(struct tl_otlp_exporter *x)
{
	/* xorshift64: jitter only */
	x->rng ^= x->rng << 13;
	x->rng ^= x->rng >> 7;
	x->rng ^= x->rng << 17;
	return x->rng;
}

/* The head failed in a way worth another try: wait and try again, unless
 * the retries have run out. */
static void retry_or_fail(struct tl_otlp_exporter *x, long status, const char *error)
{
	struct batch *b = x->head;
	struct tl_otlp_report r = {.signal = b->signal, .items = b->items, .status = status,
				   .error = error, .label = b->label};
	uint64_t now = tl_now_mono_ms(), wait;

	b->attempts++;
	if (x->retry_after_s >= 0) {
		wait = (uint64_t)x->retry_after_s * 1000;
	} else {
		unsigned shift = b->attempts - 1 < 16 ? b->attempts - 1 : 16;
		uint64_t base = (uint64_t)x->o.retry_initial_ms << shift;

		if (base > x->o.retry_max_ms)
			base = x->o.retry_max_ms;
		/* equal jitter: between half and all of the backoff */
		wait = base / 2 + (base / 2 ? rnd(x) % (base / 2 + 1) : 0);
	}
	if (wait == 0)
		wait = 1;
	if (now + wait - b->first_ms > x->o.retry_max_elapsed_ms ||
	    tl_timer_arm(x->retry_timer, wait, 0) < 0) {
		char label[LABEL_MAX];

		x->st.failed[b->signal] += b->items;
		r.what = TL_OTLP_FAILED;
		memcpy(label, b->label, sizeof(label)); /* the batch goes */
		r.label = label;
		pop(x, false);
		report(x, &r);
		return;
	}
	x->waiting = true;
	x->st.retries++;
	r.what = TL_OTLP_RETRYING;
	r.retry_ms = (uint32_t)wait;
	report(x, &r);
}

static void req_done(struct tl_curlm_xfer *xf, CURL *easy, CURLcode result)
{
	struct tl_otlp_exporter *x = (struct tl_otlp_exporter *)((char *)xf -
								 offsetof(struct tl_otlp_exporter, xfer));
	struct batch *b = x->head;
	long status = 0;
	char msg[256], label[LABEL_MAX];

	if (curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
		status = 0;
	x->resp[x->resp_len] = '\0';
	x->st.requests++;
	if (result != CURLE_OK) {
		snprintf(msg, sizeof(msg), "%s", x->errbuf[0] ? x->errbuf : curl_easy_strerror(result));
		request_end(x);
		retry_or_fail(x, 0, msg);
	} else if (status >= 200 && status <= 299) {
		struct tl_otlp_report r = {.signal = b->signal, .what = TL_OTLP_SENT,
					   .items = b->items, .status = status, .label = b->label};
		int64_t rej = tl_otlp_rejected(x->cfg.protocol, b->signal, x->resp, x->resp_len, msg,
					       sizeof(msg));

		if (rej > b->items)
			rej = b->items;
		r.rejected = rej;
		r.error = rej ? msg : NULL;
		x->st.sent[b->signal] += b->items - (uint64_t)rej;
		x->st.failed[b->signal] += (uint64_t)rej;
		request_end(x);
		memcpy(label, b->label, sizeof(label)); /* the batch goes */
		r.label = label;
		pop(x, true);
		report(x, &r);
	} else if (status == 429 || status == 502 || status == 503 || status == 504) {
		snprintf(msg, sizeof(msg), "%.*s", (int)strcspn(x->resp, "\r\n"), x->resp);
		request_end(x);
		retry_or_fail(x, status, msg);
	} else {
		struct tl_otlp_report r = {.signal = b->signal, .what = TL_OTLP_FAILED,
					   .items = b->items, .status = status, .label = b->label};

		snprintf(msg, sizeof(msg), "%.*s", (int)strcspn(x->resp, "\r\n"), x->resp);
		r.error = msg;
		x->st.failed[b->signal] += b->items;
		request_end(x);
		memcpy(label, b->label, sizeof(label));
		r.label = label;
		pop(x, false);
		report(x, &r);
	}
	kick(x);
}

#define SETOPT(opt, val)                                             \
	do {                                                         \
		if (curl_easy_setopt(x->easy, (opt), (val)) != CURLE_OK) \
			goto fail;                                   \
	} while (0)

static int start(struct tl_otlp_exporter *x)
{
	struct batch *b = x->head;
	const char *url = b->signal == TL_OTLP_TRACES ? x->cfg.traces_url : x->cfg.logs_url;
	char line[64 + 8192];
	struct curl_slist *l;

	x->resp_len = 0;
	x->retry_after_s = -1;
	x->errbuf[0] = '\0';
	x->easy = curl_easy_init();
	if (!x->easy)
		return -ENOMEM;
	snprintf(line, sizeof(line), "Content-Type: %s", tl_otlp_content_type(x->cfg.protocol));
	l = curl_slist_append(NULL, line);
	if (!l)
		goto fail;
	x->hdrs = l;
	/* no "Expect: 100-continue" round trip before a large body */
	if (!(l = curl_slist_append(x->hdrs, "Expect:")))
		goto fail;
	for (size_t i = 0; i < x->cfg.n_headers; i++) {
		snprintf(line, sizeof(line), "%s: %s", x->cfg.headers[i].name, x->cfg.headers[i].value);
		if (!(l = curl_slist_append(x->hdrs, line)))
			goto fail;
	}
	SETOPT(CURLOPT_URL, url);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_ERRORBUFFER, x->errbuf);
	SETOPT(CURLOPT_HTTPHEADER, x->hdrs);
	SETOPT(CURLOPT_POST, 1L);
	SETOPT(CURLOPT_POSTFIELDS, b->body);
	SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b->len);
	SETOPT(CURLOPT_WRITEFUNCTION, write_cb);
	SETOPT(CURLOPT_WRITEDATA, x);
	SETOPT(CURLOPT_HEADERFUNCTION, header_cb);
	SETOPT(CURLOPT_HEADERDATA, x);
	SETOPT(CURLOPT_USERAGENT, "termlined/" TERMLINE_VERSION);
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_TIMEOUT_MS, (long)x->cfg.timeout_ms);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long)x->cfg.timeout_ms);
	SETOPT(CURLOPT_TCP_KEEPALIVE, 1L);
	if (x->cfg.insecure) {
		SETOPT(CURLOPT_SSL_VERIFYPEER, 0L);
		SETOPT(CURLOPT_SSL_VERIFYHOST, 0L);
	} else {
		SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
		SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	}
	if (x->cfg.certificate)
		SETOPT(CURLOPT_CAINFO, x->cfg.certificate);
	if (x->cfg.client_certificate) {
		SETOPT(CURLOPT_SSLCERT, x->cfg.client_certificate);
		SETOPT(CURLOPT_SSLKEY, x->cfg.client_key);
	}
	if (tl_curlm_add(x->curlm, x->easy, &x->xfer) < 0)
		goto fail;
	if (!b->first_ms)
		b->first_ms = tl_now_mono_ms();
	return 0;
fail:
	request_end(x);
	return -EIO;
}

static void kick(struct tl_otlp_exporter *x)
{
	while (x->head && !x->easy && !x->waiting) {
		int r = start(x);

		if (r == 0)
			return;
		/* a request that could not even be set up: as a transport error */
		if (!x->head->first_ms)
			x->head->first_ms = tl_now_mono_ms();
		x->retry_after_s = -1;
		x->st.requests++;
		retry_or_fail(x, 0, r == -ENOMEM ? "out of memory" : "the request could not be set up");
	}
}

static void retry_cb(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *ud)
{
	struct tl_otlp_exporter *x = ud;

	x->waiting = false;
	kick(x);
}

/* ---- life ---- */

int tl_otlp_exporter_new(struct tl_loop *loop, const struct tl_otlp_config *cfg,
			 const struct tl_otlp_exporter_opts *opts, struct tl_otlp_exporter **ret)
{
	struct tl_otlp_exporter *x;
	int r;

	if (!cfg->enabled || !cfg->traces_url || (cfg->logs && !cfg->logs_url))
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->loop = loop;
	x->xfer.done = req_done;
	if (opts)
		x->o = *opts;
	if (!x->o.batch_delay_ms)
		x->o.batch_delay_ms = TL_OTLP_BATCH_DELAY_MS;
	if (!x->o.retry_initial_ms)
		x->o.retry_initial_ms = TL_OTLP_RETRY_INITIAL_MS;
	if (!x->o.retry_max_ms)
		x->o.retry_max_ms = TL_OTLP_RETRY_MAX_MS;
	if (!x->o.retry_max_elapsed_ms)
		x->o.retry_max_elapsed_ms = TL_OTLP_RETRY_MAX_ELAPSED_MS;
	if (getrandom(&x->rng, sizeof(x->rng), GRND_NONBLOCK) != sizeof(x->rng))
		x->rng = tl_now_mono_ms() ^ ((uint64_t)getpid() << 32);
	x->rng |= 1;
	r = tl_otlp_config_copy(&x->cfg, cfg);
	if (r < 0)
		goto fail;
	x->enc.protocol = x->cfg.protocol;
	x->enc.logs = x->cfg.logs;
	x->enc.service_name = x->cfg.service_name;
	x->enc.resource_attrs = x->cfg.resource_attrs;
	x->enc.n_resource_attrs = x->cfg.n_resource_attrs;
	r = tl_curlm_new(loop, &x->curlm);
	if (r < 0)
		goto fail;
	r = tl_loop_add_timer(loop, 0, 0, flush_cb, x, &x->flush_timer);
	if (r < 0)
		goto fail;
	r = tl_loop_add_timer(loop, 0, 0, retry_cb, x, &x->retry_timer);
	if (r < 0)
		goto fail;
	*ret = x;
	return 0;
fail:
	tl_otlp_exporter_free(x);
	return r;
}

void tl_otlp_exporter_free(struct tl_otlp_exporter *x)
{
	if (!x)
		return;
	if (x->run)
		doc_done(x, x->run->key, TL_OTLP_DOC_NOT_SENT);
	helper_end(x);
	for (size_t i = 0; x->docq && i < x->docq_n; i++) {
		struct docq_entry *q = &x->docq[(x->docq_head + i) % TL_OTLP_MAX_PENDING_DOCS];

		doc_done(x, q->key, TL_OTLP_DOC_NOT_SENT);
		free(q->path);
		free(q->key);
	}
	free(x->docq);
	if (x->easy)
		tl_curlm_remove(x->curlm, x->easy);
	request_end(x);
	while (x->head) {
		x->st.dropped[x->head->signal] += x->head->items;
		pop(x, false);
	}
	for (int s = 0; s < 2; s++) {
		struct pending *p = &x->pend[s];

		x->st.dropped[s] += p->items;
		tickets_answered(x, &p->tickets, false);
		for (size_t i = 0; i < p->n; i++)
			free(p->pieces[i]);
		free(p->pieces);
	}
	tl_timer_free(x->flush_timer);
	tl_timer_free(x->retry_timer);
	tl_curlm_free(x->curlm);
	tl_otlp_config_free(&x->cfg);
	free(x);
}

bool tl_otlp_exporter_idle(const struct tl_otlp_exporter *x)
{
	return !x->head && !x->pend[0].n && !x->pend[1].n && !x->easy && !x->run && !x->docq_n;
}

void tl_otlp_exporter_stats(const struct tl_otlp_exporter *x, struct tl_otlp_stats *ret)
{
	*ret = x->st;
}

/* The counts' names and help: one table for both ways of showing them. */
static const struct {
	const char *name, *help;
	size_t off;
} counters[] = {
	{"termline_otlp_spans_sent_total", "Spans the OTLP receiver accepted.",
	 offsetof(struct tl_otlp_stats, sent[TL_OTLP_TRACES])},
	{"termline_otlp_spans_failed_total",
	 "Spans the receiver refused, or that still failed when the retries ran out.",
	 offsetof(struct tl_otlp_stats, failed[TL_OTLP_TRACES])},
	{"termline_otlp_spans_dropped_total",
	 "Spans never sent: the export queue was full, or the agent stopped.",
	 offsetof(struct tl_otlp_stats, dropped[TL_OTLP_TRACES])},
	{"termline_otlp_log_records_sent_total", "Log records the OTLP receiver accepted.",
	 offsetof(struct tl_otlp_stats, sent[TL_OTLP_LOGS])},
	{"termline_otlp_log_records_failed_total",
	 "Log records the receiver refused, or that still failed when the retries ran out.",
	 offsetof(struct tl_otlp_stats, failed[TL_OTLP_LOGS])},
	{"termline_otlp_log_records_dropped_total",
	 "Log records never sent: the export queue was full, or the agent stopped.",
	 offsetof(struct tl_otlp_stats, dropped[TL_OTLP_LOGS])},
	{"termline_otlp_requests_total", "OTLP requests that got an answer or a transport error.",
	 offsetof(struct tl_otlp_stats, requests)},
	{"termline_otlp_retries_total",
	 "OTLP requests tried again after 429, 502, 503, 504 or a transport error.",
	 offsetof(struct tl_otlp_stats, retries)},
	{"termline_otlp_documents_total", "Closed timeline documents encoded for export.",
	 offsetof(struct tl_otlp_stats, documents)},
	{"termline_otlp_document_errors_total",
	 "Closed timeline documents that could not be read or encoded.",
	 offsetof(struct tl_otlp_stats, document_errors)},
};

#define QUEUE_LENGTH_HELP "Spans and log records waiting to be sent."
#define QUEUE_BYTES_HELP "Bytes of encoded requests waiting to be sent."

static uint64_t count_of(const struct tl_otlp_stats *s, size_t i)
{
	return *(const uint64_t *)((const char *)s + counters[i].off);
}

int tl_otlp_metrics_write(const struct tl_otlp_stats *s, FILE *out)
{
	int r = 0;

	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		if (fprintf(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", counters[i].name,
			    counters[i].help, counters[i].name, counters[i].name,
			    (unsigned long long)count_of(s, i)) < 0)
			r = -EIO;
	if (fprintf(out,
		    "# HELP termline_otlp_queue_length " QUEUE_LENGTH_HELP "\n"
		    "# TYPE termline_otlp_queue_length gauge\n"
		    "termline_otlp_queue_length{signal=\"traces\"} %llu\n"
		    "termline_otlp_queue_length{signal=\"logs\"} %llu\n"
		    "# HELP termline_otlp_queue_bytes " QUEUE_BYTES_HELP "\n"
		    "# TYPE termline_otlp_queue_bytes gauge\n"
		    "termline_otlp_queue_bytes %llu\n",
		    (unsigned long long)s->queued[TL_OTLP_TRACES],
		    (unsigned long long)s->queued[TL_OTLP_LOGS],
		    (unsigned long long)s->queue_bytes) < 0)
		r = -EIO;
	return r;
}

void tl_otlp_metrics_publish(const struct tl_otlp_stats *s)
{
	static bool described;

	if (!described) {
		for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
			tl_metric_describe(counters[i].name, TL_METRIC_COUNTER, counters[i].help);
		tl_metric_describe("termline_otlp_queue_length", TL_METRIC_GAUGE, QUEUE_LENGTH_HELP);
		tl_metric_describe("termline_otlp_queue_bytes", TL_METRIC_GAUGE, QUEUE_BYTES_HELP);
		described = true;
	}
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		tl_metric_set(counters[i].name, NULL, (int64_t)count_of(s, i));
	tl_metric_set("termline_otlp_queue_length", "signal=\"traces\"",
		      (int64_t)s->queued[TL_OTLP_TRACES]);
	tl_metric_set("termline_otlp_queue_length", "signal=\"logs\"", (int64_t)s->queued[TL_OTLP_LOGS]);
	tl_metric_set("termline_otlp_queue_bytes", NULL, (int64_t)s->queue_bytes);
}
