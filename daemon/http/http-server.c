/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <microhttpd.h>

#include "clock.h"
#include "drain-agent.h"
#include "export-json.h"
#include "http-api.h"
#include "http-server.h"
#include "metrics.h"
#include "macro.h"

/* Peer-controlled sizes: the per-connection memory pool bounds the request
 * line plus headers; bodies are never read (read-only API).
 *
 * Anyone on the node network reaches this port, and the kubelet's probes
 * must still get through (docs/hostile-peers.md):
 * - HTTP_CONN_GENERAL connections for everyone, HTTP_PER_IP_LIMIT per
 *   address, and HTTP_CONN_RESERVED more only for peers whose address is
 *   one of this host's (the kubelet probing a hostNetwork Pod, a local
 *   curl): a flood from other addresses cannot take the last slots;
 * - a request's header must be complete HTTP_HEADER_DEADLINE_S after the
 *   connection opened or the previous answer went out, however slowly its
 *   bytes trickle in (MHD's own timeout is reset by every byte);
 * - idle keep-alive connections go after HTTP_TIMEOUT_S. */
#define HTTP_CONN_GENERAL 64
#define HTTP_CONN_RESERVED 8
#define HTTP_CONN_LIMIT (HTTP_CONN_GENERAL + HTTP_CONN_RESERVED)
#define HTTP_PER_IP_LIMIT 16
#define HTTP_CONN_MEMORY (32 * 1024)
#define HTTP_TIMEOUT_S 30
#define HTTP_HEADER_DEADLINE_S 10
#define HTTP_BACKLOG 64
/* MHD is run at least this often: whatever state it is in (at its
 * connection limit, its listening socket out of its epoll set), it is
 * never left waiting for an event that cannot come. */
#define HTTP_WATCHDOG_MS 1000
/* The host's addresses are read again at most this often. */
#define HTTP_LOCAL_ADDRS_MS 10000
#define HTTP_MAX_LOCAL_ADDRS 64
/* Query parameters of one request at most. */
#define HTTP_MAX_ARGS 16
#define PREFIX "/v1/timelines"
#define PODS_PREFIX "/v1/pods/"

struct http_conn {
	struct http_conn *prev, *next;
	int fd;
	uint64_t since_ms; /* waiting for a request's header since */
	bool in_request;
	bool cut;          /* shut down at its deadline; MHD closes it */
	bool local;        /* counted against the reserved slots */
};

struct tl_http {
	struct MHD_Daemon *mhd;
	struct tl_loop *loop;
	struct tl_timelines *t;
	struct tl_timer *timer;
	struct tl_drain_agent *drain; /* GET /v1/pods/{uid}/drained; may be NULL */
	int epfd;
	bool (*ready)(void *ud);
	void *ud;
	uint16_t port;
	struct http_conn *conns;
	unsigned nconns, nlocal;
	struct sockaddr_storage local[HTTP_MAX_LOCAL_ADDRS];
	unsigned nlocal_addrs;
	uint64_t local_read_ms;
	bool stopping;
	struct tl_metric *m_refused, *m_header_timeouts, *m_open;
};

static int parse_listen(const char *s, struct sockaddr_storage *ss, bool *v6)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h = s;
	size_t hlen;
	char *end;
	unsigned long port;

	if (!s)
		return -EINVAL;
	if (*s == '[') {
		const char *rb = strchr(s, ']');

		if (!rb || rb[1] != ':')
			return -EINVAL;
		h = s + 1;
		hlen = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (*s == '[') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return -EINVAL;
		*v6 = true;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return -EINVAL;
		*v6 = false;
	}
	return 0;
}

static enum MHD_Result respond_ext(struct MHD_Connection *conn, unsigned status, const char *type,
				   char *body, size_t len, bool must_free, bool no_store)
{
	struct MHD_Response *resp;
	enum MHD_Result r;

	resp = MHD_create_response_from_buffer(len, body,
					       must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		if (must_free)
			free(body);
		return MHD_NO;
	}
	if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type) == MHD_NO ||
	    (no_store &&
	     MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") == MHD_NO) ||
	    (status == MHD_HTTP_METHOD_NOT_ALLOWED &&
	     MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") == MHD_NO)) {
		MHD_destroy_response(resp);
		return MHD_NO;
	}
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type,
			       char *body, size_t len, bool must_free)
{
	return respond_ext(conn, status, type, body, len, must_free, false);
}

static enum MHD_Result respond_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
	return respond(conn, status, "text/plain; charset=utf-8", (char *)text, strlen(text), false);
}

static enum MHD_Result respond_error(struct MHD_Connection *conn, unsigned status, const char *msg)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "{\"error\":\"%s\"}", msg);
	char *body = strdup(buf);

	if (n < 0 || !body) {
		free(body);
		return MHD_NO;
	}
	return respond(conn, status, "application/json", body, strlen(body), true);
}

/* The drained endpoint's answers: JSON with a "summary", never cached
 * (docs/drain.md). */
static enum MHD_Result respond_drain(struct MHD_Connection *conn, unsigned status, char *body,
				     size_t len)
{
	return respond_ext(conn, status, "application/json", body, len, true, true);
}

static enum MHD_Result respond_drain_error(struct MHD_Connection *conn, unsigned status,
					   const char *msg)
{
	size_t len;
	char *body = tl_http_error_json(msg, true, &len);

	return body ? respond_drain(conn, status, body, len) : MHD_NO;
}

static enum MHD_Result respond_json(struct MHD_Connection *conn, struct json_object *o)
{
	size_t len;
	const char *s = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	char *body = s ? malloc(len + 1) : NULL;

	if (!body)
		return respond_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	memcpy(body, s, len + 1);
	return respond(conn, MHD_HTTP_OK, "application/json", body, len, true);
}

static enum MHD_Result serve_metrics(struct MHD_Connection *conn)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int r;

	if (!f)
		return respond_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	r = tl_metrics_render(f);
	if (fclose(f) != 0 || r < 0) {
		free(buf);
		return respond_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "metrics unavailable");
	}
	return respond(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", buf, len, true);
}

static ssize_t doc_reader_cb(void *cls, uint64_t pos _unused_, char *buf, size_t max)
{
	ssize_t n = tl_doc_read(cls, buf, max);

	if (n == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return n < 0 ? MHD_CONTENT_READER_END_WITH_ERROR : n;
}

static void doc_reader_free_cb(void *cls)
{
	tl_doc_reader_free(cls);
}

static enum MHD_Result serve_timeline(struct tl_http *h, struct MHD_Connection *conn,
				      const char *rest)
{
	char ns[256], name[256];
	const char *slash = strchr(rest, '/');
	const char *uid = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "uid");
	struct tl_doc_reader *reader = NULL;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t nslen;
	int r;

	if (!slash || strchr(slash + 1, '/'))
		return respond_error(conn, MHD_HTTP_NOT_FOUND, "not found");
	nslen = (size_t)(slash - rest);
	if (nslen == 0 || nslen >= sizeof(ns) || strlen(slash + 1) >= sizeof(name))
		return respond_error(conn, MHD_HTTP_NOT_FOUND, "not found");
	memcpy(ns, rest, nslen);
	ns[nslen] = '\0';
	snprintf(name, sizeof(name), "%s", slash + 1);
	if (!tl_export_name_ok(ns) || !tl_export_name_ok(name))
		return respond_error(conn, MHD_HTTP_NOT_FOUND, "not found");
	if (uid && !tl_export_name_ok(uid))
		return respond_error(conn, MHD_HTTP_BAD_REQUEST, "bad uid");
	/* Streamed as the client reads (64 KiB per callback) from a snapshot
	 * or the document's file: a GET never serializes a whole timeline on
	 * the loop, and a slow reader holds one compact copy, not the text. */
	r = tl_timelines_open_doc(h->t, ns, name, uid, &reader);
	if (r == -ENOENT)
		return respond_error(conn, MHD_HTTP_NOT_FOUND, "no such timeline");
	if (r == -EBUSY)
		return respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "too many documents being served");
	if (r < 0)
		return respond_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "timeline unavailable");
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, doc_reader_cb, reader,
						 doc_reader_free_cb);
	if (!resp) {
		tl_doc_reader_free(reader);
		return MHD_NO;
	}
	if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") == MHD_NO) {
		MHD_destroy_response(resp);
		return MHD_NO;
	}
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* Query parameters are taken once each and whole: a name twice, or a
 * name or value with a NUL in it (%00), makes the request a bad one
 * rather than one read partly. */
struct args {
	char seen[HTTP_MAX_ARGS][64];
	size_t n;
	bool bad;
};

static enum MHD_Result arg_cb(void *cls, enum MHD_ValueKind kind _unused_, const char *key,
			      size_t key_size, const char *value, size_t value_size)
{
	struct args *a = cls;

	if (!key || strlen(key) != key_size || key_size >= sizeof(a->seen[0]) ||
	    (value && strlen(value) != value_size) || a->n == HTTP_MAX_ARGS) {
		a->bad = true;
		return MHD_NO;
	}
	for (size_t i = 0; i < a->n; i++) {
		if (strcmp(a->seen[i], key) == 0) {
			a->bad = true;
			return MHD_NO;
		}
	}
	memcpy(a->seen[a->n++], key, key_size + 1);
	return MHD_YES;
}

static bool args_ok(struct MHD_Connection *conn)
{
	struct args a = { .n = 0 };

	MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, arg_cb, &a);
	return !a.bad;
}

/* The query of GET /v1/timelines (docs/http-api.md): names as in
 * Kubernetes, times in RFC 3339. -EINVAL on anything else. */
static int list_filter(struct MHD_Connection *conn, struct tl_list_filter *f, bool *detail)
{
	static const char *const names[] = { "namespace", "ownerKind", "ownerName" };
	const char **dst[] = { &f->ns, &f->owner_kind, &f->owner_name };
	const char *since = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "since");
	const char *until = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "until");
	const char *d = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "detail");

	memset(f, 0, sizeof(*f));
	if (!args_ok(conn))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, names[i]);

		if (v && !tl_export_name_ok(v))
			return -EINVAL;
		*dst[i] = v;
	}
	if ((since && tl_time_parse(since, &f->since_ns) < 0) ||
	    (until && tl_time_parse(until, &f->until_ns) < 0))
		return -EINVAL;
	if (d && strcmp(d, "true") != 0 && strcmp(d, "false") != 0)
		return -EINVAL;
	*detail = d && strcmp(d, "true") == 0;
	return 0;
}

/* ---- GET /v1/pods/{uid}/drained: a long-poll (docs/drain.md) ----
 *
 * A wait is a suspended MHD connection: the drain agent answers it from
 * the loop, and the connection is resumed with the answer. MHD stops
 * watching a suspended connection, so the server watches its socket for
 * the client going away: a client that closed its connection frees its
 * wait at once, not at its timeout. A client that only closed its sending
 * side (a shutdown(SHUT_WR) after the request, as some clients do) still
 * waits for its answer: over HTTP/1.1 it is sent an interim "102
 * Processing" at once, which a client that is gone answers with a reset. */

struct http_wait {
	struct tl_http *h;
	struct MHD_Connection *conn;
	struct tl_drain_wait *w; /* pending; NULL once answered or abandoned */
	int fd;                  /* watched while suspended; -1 */
	bool http11, suspended, answered, gone, probed;
	unsigned status;
	char *body;
	size_t len;
};

static void run_deferred(struct tl_loop *loop, void *ud);

/* Resumed connections are ready at once, with no socket event to wake
 * MHD: it runs after the loop's current callbacks. */
static void run_soon(struct tl_http *h)
{
	if (h->stopping)
		return; /* tl_http_free runs MHD itself */
	if (tl_loop_defer(h->loop, run_deferred, h) < 0)
		tl_timer_arm(h->timer, 1, 0);
}

static void unwatch(struct http_wait *hw)
{
	if (hw->fd >= 0) {
		tl_loop_del_io(hw->h->loop, hw->fd);
		hw->fd = -1;
	}
}

static void resume(struct http_wait *hw)
{
	unwatch(hw);
	if (hw->suspended) {
		hw->suspended = false;
		MHD_resume_connection(hw->conn);
		run_soon(hw->h);
	}
}

static void on_answer(void *ud, const struct tl_drain_answer *a)
{
	struct http_wait *hw = ud;

	hw->w = NULL;
	hw->answered = true;
	switch (a->outcome) {
	case TL_DRAIN_DRAINED:
		hw->status = MHD_HTTP_OK;
		hw->body = tl_http_drain_json(a, &hw->len);
		break;
	case TL_DRAIN_TIMEOUT:
		hw->status = MHD_HTTP_GATEWAY_TIMEOUT;
		hw->body = tl_http_drain_json(a, &hw->len);
		break;
	default:
		/* stopping: termline-wait asks the next agent */
		hw->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		hw->body = tl_http_error_json("agent stopping", true, &hw->len);
		break;
	}
	resume(hw);
}

static void abandon(struct http_wait *hw)
{
	tl_drain_wait_abandon(hw->w);
	hw->w = NULL;
	hw->gone = true;
	resume(hw); /* MHD then closes it (the handler says MHD_NO) */
}

static int client_event(struct tl_loop *loop, int fd, uint32_t events, void *userdata)
{
	static const char interim[] = "HTTP/1.1 102 Processing\r\n\r\n";
	struct http_wait *hw = userdata;

	if ((events & (EPOLLERR | EPOLLHUP)) || (events & EPOLLRDHUP && !hw->http11)) {
		if (events & (EPOLLERR | EPOLLHUP))
			abandon(hw);
		else /* HTTP/1.0: no interim answer; it waits (and fails to be written) */
			tl_loop_mod_io(loop, fd, 0);
		return 0;
	}
	/* End of the client's stream: closed, or only its sending side.
	 * Nothing of the response is written yet (the connection is
	 * suspended): an interim answer tells the two apart. */
	if (hw->probed || send(fd, interim, sizeof(interim) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		abandon(hw);
		return 0;
	}
	hw->probed = true;
	tl_loop_mod_io(loop, fd, 0); /* only errors and hang-ups from now */
	return 0;
}

static void http_wait_free(struct http_wait *hw)
{
	if (!hw)
		return;
	unwatch(hw);
	tl_drain_wait_abandon(hw->w);
	free(hw->body);
	free(hw);
}

static bool drained_path(const char *rest, char *uid, size_t size)
{
	const char *slash = strchr(rest, '/');
	size_t n = slash ? (size_t)(slash - rest) : 0;

	if (!slash || strcmp(slash, "/drained") != 0 || n == 0 || n >= size)
		return false;
	memcpy(uid, rest, n);
	uid[n] = '\0';
	return true;
}

/* quiet and timeout: each at most once, whole, in the documented form. */
static int drained_args(struct MHD_Connection *conn, int64_t *quiet_ms, int64_t *timeout_ms)
{
	const char *v;
	size_t n;

	if (!args_ok(conn))
		return -EINVAL;
	if (MHD_lookup_connection_value_n(conn, MHD_GET_ARGUMENT_KIND, "quiet", 5, &v, &n) == MHD_YES &&
	    (!v || tl_http_parse_duration(v, n, quiet_ms) < 0))
		return -EINVAL;
	if (MHD_lookup_connection_value_n(conn, MHD_GET_ARGUMENT_KIND, "timeout", 7, &v, &n) == MHD_YES &&
	    (!v || tl_http_parse_duration(v, n, timeout_ms) < 0 || *timeout_ms < 1))
		return -E2BIG;
	return 0;
}

static enum MHD_Result serve_drained(struct tl_http *h, struct MHD_Connection *conn,
				     const char *rest, const char *version, void **con_cls)
{
	int64_t quiet_ms = TL_DRAIN_DEFAULT_QUIET_MS, timeout_ms = TL_DRAIN_DEFAULT_TIMEOUT_MS;
	struct http_wait *hw = *con_cls;
	const union MHD_ConnectionInfo *ci;
	char uid[TL_UID_MAX];
	char *body;
	int r;

	if (hw) {
		/* resumed: answered, or its client left */
		if (hw->gone || !hw->answered)
			return MHD_NO;
		if (!hw->body)
			return respond_drain_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
		body = hw->body;
		hw->body = NULL;
		return respond_drain(conn, hw->status, body, hw->len);
	}
	if (!h->drain || !drained_path(rest, uid, sizeof(uid)))
		return respond_drain_error(conn, MHD_HTTP_NOT_FOUND, "not found");
	r = drained_args(conn, &quiet_ms, &timeout_ms);
	if (r == -EINVAL)
		return respond_drain_error(conn, MHD_HTTP_BAD_REQUEST,
					   "bad quiet (500ms, 1.5s, 2m; at most 1h)");
	if (r < 0)
		return respond_drain_error(conn, MHD_HTTP_BAD_REQUEST,
					   "bad timeout (500ms, 1.5s, 2m; at most 1h)");
	hw = calloc(1, sizeof(*hw));
	if (!hw)
		return respond_drain_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	hw->h = h;
	hw->conn = conn;
	hw->fd = -1;
	hw->http11 = version && strcmp(version, MHD_HTTP_VERSION_1_1) == 0;
	r = tl_drain_agent_wait(h->drain, uid, quiet_ms, timeout_ms, on_answer, hw, &hw->w);
	if (r == 0) {
		/* drained already: answered during the call */
		unsigned status = hw->status;
		size_t len = hw->len;

		body = hw->body;
		hw->body = NULL;
		http_wait_free(hw);
		if (!body)
			return respond_drain_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
		return respond_drain(conn, status, body, len);
	}
	if (r < 0) {
		http_wait_free(hw);
		switch (r) {
		case -EINVAL:
			return respond_drain_error(conn, MHD_HTTP_BAD_REQUEST, "bad pod uid");
		case -EAGAIN:
			return respond_drain_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
						   "not synced with the API yet");
		case -ENOENT:
			return respond_drain_error(conn, MHD_HTTP_NOT_FOUND, "unknown pod");
		case -EBUSY:
			return respond_drain_error(conn, MHD_HTTP_TOO_MANY_REQUESTS, "too many pending waits");
		default:
			return respond_drain_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
		}
	}
	*con_cls = hw;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci && ci->connect_fd >= 0 &&
	    tl_loop_add_io(h->loop, ci->connect_fd, EPOLLRDHUP, client_event, hw) == 0)
		hw->fd = ci->connect_fd;
	hw->suspended = true;
	MHD_suspend_connection(conn);
	return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version,
			      const char *upload_data _unused_, size_t *upload_data_size _unused_,
			      void **con_cls)
{
	struct tl_http *h = cls;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct http_conn *c = ci ? ci->socket_context : NULL;

	/* the header is complete: its deadline no longer applies */
	if (c)
		c->in_request = true;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return respond_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed");
	if (strcmp(url, "/healthz") == 0)
		return respond_text(conn, MHD_HTTP_OK, "ok\n");
	if (strcmp(url, "/readyz") == 0) {
		if (!h->ready || h->ready(h->ud))
			return respond_text(conn, MHD_HTTP_OK, "ready\n");
		return respond_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready\n");
	}
	if (strcmp(url, "/metrics") == 0)
		return serve_metrics(conn);
	if (strcmp(url, PREFIX) == 0) {
		struct tl_list_filter f;
		struct json_object *list;
		enum MHD_Result r;
		bool detail = false;

		if (list_filter(conn, &f, &detail) < 0)
			return respond_error(conn, MHD_HTTP_BAD_REQUEST,
					     "bad namespace, ownerKind, ownerName, since, until or detail");
		if (tl_http_list_json(h->t, &f, detail, &list) < 0)
			return respond_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
		r = respond_json(conn, list);
		json_object_put(list);
		return r;
	}
	if (strncmp(url, PREFIX "/", strlen(PREFIX "/")) == 0)
		return serve_timeline(h, conn, url + strlen(PREFIX "/"));
	if (strncmp(url, PODS_PREFIX, strlen(PODS_PREFIX)) == 0)
		return serve_drained(h, conn, url + strlen(PODS_PREFIX), version, con_cls);
	return respond_error(conn, MHD_HTTP_NOT_FOUND, "not found");
}

static void completed(void *cls _unused_, struct MHD_Connection *conn, void **con_cls,
		      enum MHD_RequestTerminationCode toe _unused_)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct http_conn *c = ci ? ci->socket_context : NULL;

	http_wait_free(*con_cls);
	*con_cls = NULL;
	/* the next request on a kept-alive connection has its own deadline */
	if (c) {
		c->in_request = false;
		c->since_ms = tl_now_mono_ms();
	}
}

static bool same_addr(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	if (a->sa_family != b->ss_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
	return false;
}

static void read_local_addrs(struct tl_http *h, uint64_t now)
{
	struct ifaddrs *ifa, *i;

	if (h->local_read_ms && now - h->local_read_ms < HTTP_LOCAL_ADDRS_MS)
		return;
	h->local_read_ms = now;
	if (getifaddrs(&ifa) < 0)
		return; /* the last list stays */
	h->nlocal_addrs = 0;
	for (i = ifa; i && h->nlocal_addrs < HTTP_MAX_LOCAL_ADDRS; i = i->ifa_next) {
		if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
				     i->ifa_addr->sa_family != AF_INET6))
			continue;
		memset(&h->local[h->nlocal_addrs], 0, sizeof(h->local[0]));
		memcpy(&h->local[h->nlocal_addrs], i->ifa_addr,
		       i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
							  sizeof(struct sockaddr_in6));
		h->nlocal_addrs++;
	}
	freeifaddrs(ifa);
}

/* A peer whose address is one of this host's: the kubelet probing a
 * hostNetwork Pod connects from the node's address to the node's address. */
static bool peer_is_local(struct tl_http *h, const struct sockaddr *addr)
{
	read_local_addrs(h, tl_now_mono_ms());
	for (unsigned i = 0; i < h->nlocal_addrs; i++)
		if (same_addr(addr, &h->local[i]))
			return true;
	return false;
}

static enum MHD_Result accept_cb(void *cls, const struct sockaddr *addr,
				 socklen_t addrlen _unused_)
{
	struct tl_http *h = cls;

	if (h->nconns - h->nlocal < HTTP_CONN_GENERAL)
		return MHD_YES;
	if (h->nlocal < HTTP_CONN_RESERVED && peer_is_local(h, addr))
		return MHD_YES;
	tl_metric_inc(h->m_refused, 1);
	return MHD_NO;
}

static void conn_cb(void *cls, struct MHD_Connection *conn, void **socket_context,
		    enum MHD_ConnectionNotificationCode code)
{
	struct tl_http *h = cls;
	struct http_conn *c = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fi =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ai =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		c = calloc(1, sizeof(*c));
		if (!c)
			return; /* not tracked: MHD's idle timeout still ends it */
		c->fd = fi ? fi->connect_fd : -1;
		c->since_ms = tl_now_mono_ms();
		/* beyond the general slots only a local peer was let in */
		c->local = h->nconns - h->nlocal >= HTTP_CONN_GENERAL && ai && ai->client_addr &&
			   peer_is_local(h, ai->client_addr);
		c->next = h->conns;
		if (h->conns)
			h->conns->prev = c;
		h->conns = c;
		h->nconns++;
		h->nlocal += c->local;
		tl_metric_put(h->m_open, (int64_t)h->nconns);
		*socket_context = c;
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED || !c)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	h->nconns--;
	h->nlocal -= c->local;
	tl_metric_put(h->m_open, (int64_t)h->nconns);
	free(c);
	*socket_context = NULL;
}

/* Connections whose header is late are shut down: MHD sees the end of the
 * stream at its next run and closes them as usual (the fd stays MHD's). */
static void cut_late_headers(struct tl_http *h)
{
	uint64_t now = tl_now_mono_ms();

	for (struct http_conn *c = h->conns; c; c = c->next) {
		if (c->in_request || c->cut || c->fd < 0 ||
		    now - c->since_ms < HTTP_HEADER_DEADLINE_S * 1000ull)
			continue;
		if (shutdown(c->fd, SHUT_RDWR) == 0 || errno == ENOTCONN) {
			c->cut = true;
			tl_metric_inc(h->m_header_timeouts, 1);
		}
	}
}

/* MHD has no thread of its own: run it when its epoll fd is readable, when
 * its own timeout (idle connections, queued work) expires, and at least
 * every HTTP_WATCHDOG_MS. MHD puts its listening socket back into its epoll
 * set only at the start of a run: after a run that frees a slot at the
 * connection limit, nothing else would call it again and the server would
 * stay deaf. So a run that closed connections is followed by another, and
 * the watchdog catches whatever else. */
static void reschedule(struct tl_http *h)
{
	MHD_UNSIGNED_LONG_LONG ms = HTTP_WATCHDOG_MS;

	if (MHD_get_timeout(h->mhd, &ms) != MHD_YES || ms > HTTP_WATCHDOG_MS)
		ms = HTTP_WATCHDOG_MS;
	tl_timer_arm(h->timer, ms ? ms : 1, 0);
}

static int run(struct tl_http *h)
{
	unsigned before = h->nconns;
	enum MHD_Result r = MHD_run(h->mhd);

	if (r == MHD_YES && h->nconns < before)
		r = MHD_run(h->mhd);
	cut_late_headers(h);
	reschedule(h);
	return r == MHD_YES ? 0 : -EIO;
}

static int io_cb(struct tl_loop *loop _unused_, int fd _unused_, uint32_t events _unused_,
		 void *userdata)
{
	return run(userdata);
}

static void timer_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	run(userdata);
}

/* The drained long-poll resumed connections: they are ready now. */
static void run_deferred(struct tl_loop *loop _unused_, void *userdata)
{
	struct tl_http *h = userdata;

	MHD_run(h->mhd);
	reschedule(h);
}

int tl_http_new(const struct tl_http_config *cfg, struct tl_loop *loop, struct tl_timelines *t,
		struct tl_http **ret, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	struct tl_http *h;
	bool v6 = false;
	/* Suspend/resume: the drained long-poll (docs/drain.md). */
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
	int r;

	if (parse_listen(cfg->listen, &ss, &v6) < 0) {
		snprintf(err, errlen, "listen address \"%s\" is not ADDR:PORT", cfg->listen ? cfg->listen : "");
		return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->loop = loop;
	h->t = t;
	h->ready = cfg->ready;
	h->ud = cfg->ud;
	h->drain = cfg->drain;
	h->epfd = -1;
	if (v6)
		flags |= MHD_USE_IPv6;
	h->m_refused = tl_metric_new("termline_http_connections_refused_total", NULL, TL_METRIC_COUNTER,
				     "HTTP connections refused: the general slots were taken");
	h->m_header_timeouts = tl_metric_new("termline_http_header_timeouts_total", NULL,
					     TL_METRIC_COUNTER,
					     "HTTP connections closed because a request header came too slowly");
	h->m_open = tl_metric_new("termline_http_connections_open", NULL, TL_METRIC_GAUGE,
				  "HTTP connections the server holds now (this scrape's included)");
	h->mhd = MHD_start_daemon(flags, 0, accept_cb, h, handle, h,
				  MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONN_LIMIT,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTP_PER_IP_LIMIT,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
				  MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)HTTP_BACKLOG,
				  MHD_OPTION_NOTIFY_COMPLETED, completed, h,
				  MHD_OPTION_NOTIFY_CONNECTION, conn_cb, h,
				  MHD_OPTION_END);
	if (!h->mhd) {
		snprintf(err, errlen, "cannot listen on %s (address in use or not local?)", cfg->listen);
		r = -EADDRNOTAVAIL;
		goto fail;
	}
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info || info->epoll_fd < 0) {
		snprintf(err, errlen, "HTTP server has no epoll fd");
		r = -EIO;
		goto fail;
	}
	h->epfd = info->epoll_fd;
	info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : 0;
	r = tl_loop_add_timer(loop, 0, 0, timer_cb, h, &h->timer);
	if (r < 0) {
		snprintf(err, errlen, "cannot create HTTP timer: %s", strerror(-r));
		goto fail;
	}
	r = tl_loop_add_io(loop, h->epfd, EPOLLIN, io_cb, h);
	if (r < 0) {
		h->epfd = -1;
		snprintf(err, errlen, "cannot watch HTTP server: %s", strerror(-r));
		goto fail;
	}
	reschedule(h);
	*ret = h;
	return 0;
fail:
	tl_http_free(h);
	return r;
}

uint16_t tl_http_port(const struct tl_http *h)
{
	return h->port;
}

void tl_http_free(struct tl_http *h)
{
	if (!h)
		return;
	h->stopping = true;
	if (h->mhd) {
		/* Pending drained waits are answered before MHD stops. */
		tl_drain_agent_release_all(h->drain);
		MHD_run(h->mhd);
	}
	if (h->epfd >= 0)
		tl_loop_del_io(h->loop, h->epfd);
	tl_timer_free(h->timer);
	if (h->mhd)
		MHD_stop_daemon(h->mhd);
	tl_loop_cancel_defer(h->loop, run_deferred, h);
	free(h);
}
