/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP/1.x heads as captured from sockets: a table of real and hostile
 * inputs, each also split at every byte offset (as two reads or writes), and
 * request/response pairing per connection. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "http-pair.h"
#include "http-parse.h"
#include "termline-http.h"
#include "../check-run.h"

static const struct tl_http_want want = { .names = { "x-request-id", "traceparent" }, .n = 2 };

struct head_case {
	const char *name;
	const char *in;
	int ret;                 /* of the whole input */
	enum tl_http_kind kind;
	const char *method, *path, *id;
	int id_header;
	int status;
	bool chunked, close, upgrade, cont, path_cut;
	long length;             /* -1: none */
};

static const struct head_case cases[] = {
	{ "curl", "GET /api/v1/items?x=1 HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: curl/7.88.1\r\n"
		  "Accept: */*\r\nX-Request-Id: 7f3c-abc\r\n\r\n",
	  0, TL_HTTP_REQUEST, "GET", "/api/v1/items?x=1", "7f3c-abc", 0, 0, .length = -1 },
	{ "nginx 404", "HTTP/1.1 404 Not Found\r\nServer: nginx/1.22.1\r\nDate: Tue, 01 Dec 2026 03:00:00 GMT\r\n"
		       "Content-Type: text/html\r\nContent-Length: 153\r\nConnection: keep-alive\r\n\r\n",
	  0, TL_HTTP_RESPONSE, "", "", "", -1, 404, .length = 153 },
	{ "python 1.0", "HTTP/1.0 200 OK\r\nServer: BaseHTTP/0.6 Python/3.11.2\r\nx-request-id: r-1\r\n\r\n",
	  0, TL_HTTP_RESPONSE, "", "", "r-1", 0, 200, .length = -1 },
	{ "chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\nConnection: close\r\n\r\n",
	  0, TL_HTTP_RESPONSE, "", "", "", -1, 200, .chunked = true, .close = true, .length = -1 },
	{ "expect", "PUT /up HTTP/1.1\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n",
	  0, TL_HTTP_REQUEST, "PUT", "/up", "", -1, 0, .cont = true, .length = 10 },
	{ "traceparent only", "GET / HTTP/1.1\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n\r\n",
	  0, TL_HTTP_REQUEST, "GET", "/", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", 1, 0, .length = -1 },
	{ "id header priority", "GET / HTTP/1.1\r\nTraceparent: tp\r\nX-REQUEST-ID:   rid  \r\nx-request-id: second\r\n\r\n",
	  0, TL_HTTP_REQUEST, "GET", "/", "rid", 0, 0, .length = -1 },
	{ "bare LF", "DELETE /x HTTP/1.1\nx-request-id: lf\n\n",
	  0, TL_HTTP_REQUEST, "DELETE", "/x", "lf", 0, 0, .length = -1 },
	{ "upgrade", "GET /ws HTTP/1.1\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n\r\n",
	  0, TL_HTTP_REQUEST, "GET", "/ws", "", -1, 0, .upgrade = true, .length = -1 },
	{ "101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
	  0, TL_HTTP_RESPONSE, "", "", "", -1, 101, .upgrade = true, .length = -1 },
	{ "no reason", "HTTP/1.1 204\r\n\r\n", 0, TL_HTTP_RESPONSE, "", "", "", -1, 204, .length = -1 },
	{ "control bytes", "GET /a\x01\x7f HTTP/1.1\r\nx-request-id: a\x02z\r\n\r\n",
	  0, TL_HTTP_REQUEST, "GET", "/a??", "a?z", 0, 0, .length = -1 },
	{ "length overflow", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
	  0, TL_HTTP_RESPONSE, "", "", "", -1, 200, .length = -1 },
	{ "length garbage", "HTTP/1.1 200 OK\r\nContent-Length: 12a\r\nno colon line\r\n: empty name\r\n\r\n",
	  0, TL_HTTP_RESPONSE, "", "", "", -1, 200, .length = -1 },
	{ "obs-fold", "GET / HTTP/1.1\r\nX-Other: a\r\n x-request-id: folded\r\n\r\n",
	  0, TL_HTTP_REQUEST, "GET", "/", "", -1, 0, .length = -1 },
	/* hostile or not HTTP/1.x */
	{ .name = "lower-case method", .in = "get / HTTP/1.1\r\n\r\n", .ret = -EBADMSG, .kind = TL_HTTP_NONE },
	{ .name = "double space", .in = "GET  / HTTP/1.1\r\n\r\n", .ret = -EBADMSG, .kind = TL_HTTP_NONE },
	{ .name = "space in target", .in = "GET /a b HTTP/1.1\r\n\r\n", .ret = -EBADMSG, .kind = TL_HTTP_NONE },
	{ .name = "HTTP/2 version", .in = "GET / HTTP/2.0\r\n\r\n", .ret = -EBADMSG, .kind = TL_HTTP_NONE },
	{ .name = "two-digit status", .in = "HTTP/1.1 20 OK\r\n\r\n", .ret = -EBADMSG, .kind = TL_HTTP_NONE },
	{ .name = "status 099", .in = "HTTP/1.1 099 X\r\n\r\n", .ret = -EBADMSG, .kind = TL_HTTP_NONE },
	{ .name = "status glued", .in = "HTTP/1.1 2000\r\n\r\n", .ret = -EBADMSG, .kind = TL_HTTP_NONE },
	{ .name = "h2 preface", .in = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", .ret = -EBADMSG, .kind = TL_HTTP_H2 },
	{ .name = "tls hello", .in = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", .ret = -EBADMSG, .kind = TL_HTTP_TLS },
	{ .name = "method too long", .in = "ABCDEFGHIJKLMNOPQ / HTTP/1.1\r\n\r\n", .ret = -EBADMSG, .kind = TL_HTTP_NONE },
	{ .name = "binary", .in = "\x00\x01\x02\x03", .ret = -EBADMSG, .kind = TL_HTTP_NONE },
	{ "no blank line", "GET / HTTP/1.1\r\nHost: x\r\n", -EAGAIN, TL_HTTP_REQUEST, "GET", "/", "", -1, 0, .length = -1 },
};

static size_t case_len(const struct head_case *c)
{
	/* "binary" holds NULs: its length is its literal's. */
	return strcmp(c->name, "binary") == 0 ? 4 : strlen(c->in);
}

static void check_head(const struct head_case *c, int r, const struct tl_http_head *h)
{
	ck_assert_msg(r == c->ret, "%s: returned %d, want %d", c->name, r, c->ret);
	ck_assert_msg(h->kind == c->kind, "%s: kind %d, want %d", c->name, h->kind, c->kind);
	if (c->ret != 0 && c->ret != -EAGAIN)
		return;
	ck_assert_str_eq(h->method, c->method);
	ck_assert_str_eq(h->path, c->path);
	ck_assert_str_eq(h->id, c->id);
	ck_assert_int_eq(h->id_header, c->id_header);
	ck_assert_int_eq(h->status, c->status);
	if (c->ret != 0)
		return;
	ck_assert_int_eq(h->head_len, case_len(c));
	ck_assert_int_eq(h->chunked, c->chunked);
	ck_assert_int_eq(h->conn_close, c->close);
	ck_assert_int_eq(h->upgrade, c->upgrade);
	ck_assert_int_eq(h->expect_continue, c->cont);
	ck_assert_int_eq(h->has_length, c->length >= 0);
	if (c->length >= 0)
		ck_assert_uint_eq(h->content_length, (uint64_t)c->length);
}

START_TEST(test_table)
{
	const struct head_case *c = &cases[_i];
	struct tl_http_head h;
	size_t n = case_len(c);
	uint8_t *copy = malloc(n); /* exact size: valgrind/ASan see any overread */

	memcpy(copy, c->in, n);
	check_head(c, tl_http_parse_head(copy, n, &want, &h), &h);
	/* Every proper prefix of a complete head is incomplete, or already
	 * known not to be HTTP; never a different message. */
	for (size_t k = 0; k < n; k++) {
		uint8_t *p = malloc(k ? k : 1);
		int r;

		memcpy(p, copy, k);
		r = tl_http_parse_head(p, k, &want, &h);
		if (c->ret == 0 || c->ret == -EAGAIN)
			ck_assert_msg(r == -EAGAIN || (k == 0 && r == -EBADMSG),
				      "%s: prefix %zu returned %d", c->name, k, r);
		else
			ck_assert_msg(r == -EAGAIN || r == -EBADMSG, "%s: prefix %zu returned %d", c->name, k, r);
		free(p);
	}
	free(copy);
}
END_TEST

START_TEST(test_cut_and_limits)
{
	struct tl_http_head h;
	char *big = malloc(TL_HTTP_HEAD_MAX + 100);
	size_t n;

	/* A path longer than the field is cut and flagged. */
	n = (size_t)sprintf(big, "GET /%0600d HTTP/1.1\r\n\r\n", 7);
	ck_assert_int_eq(tl_http_parse_head((uint8_t *)big, n, &want, &h), 0);
	ck_assert_int_eq(strlen(h.path), TL_HTTP_PATH_MAX - 1);
	ck_assert(h.path_cut);
	/* A head without end past the limit is refused. */
	memset(big, 'a', TL_HTTP_HEAD_MAX + 100);
	memcpy(big, "GET / HTTP/1.1\r\nx: ", 19);
	ck_assert_int_eq(tl_http_parse_head((uint8_t *)big, TL_HTTP_HEAD_MAX + 100, &want, &h), -E2BIG);
	/* A request-id longer than the field is cut and flagged. */
	n = (size_t)sprintf(big, "GET / HTTP/1.1\r\nx-request-id: %0300d\r\n\r\n", 1);
	ck_assert_int_eq(tl_http_parse_head((uint8_t *)big, n, &want, &h), 0);
	ck_assert_int_eq(strlen(h.id), TL_HTTP_ID_MAX - 1);
	ck_assert(h.id_cut);
	/* No wanted headers at all. */
	n = (size_t)sprintf(big, "GET / HTTP/1.1\r\nx-request-id: a\r\n\r\n");
	ck_assert_int_eq(tl_http_parse_head((uint8_t *)big, n, NULL, &h), 0);
	ck_assert_str_eq(h.id, "");
	free(big);
}
END_TEST

/* ---- pairing ---- */

#define MAXX 64
static struct tl_http_exchange got[MAXX];
static int ngot;

static uint32_t next_conn;

static void on_x(void *ud, const struct tl_http_exchange *x)
{
	(void)ud;
	ck_assert_int_lt(ngot, MAXX);
	/* numbered as the capture does: at the connection's first exchange */
	if (!*x->conn_no)
		*x->conn_no = ++next_conn;
	got[ngot] = *x;
	got[ngot].conn_seq = *x->conn_no;
	got[ngot++].conn_no = NULL;
}

static struct tl_http_tracker *tracker(uint32_t max_conns, uint32_t max_pending)
{
	struct tl_http_tracker_config cfg = { .want = want, .max_conns = max_conns,
					      .max_pending = max_pending };
	struct tl_http_tracker *t;

	ngot = 0;
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(tl_http_tracker_new(&cfg, on_x, NULL, &t), 0);
	return t;
}

static void feed(struct tl_http_tracker *t, uint64_t conn, bool rd, const char *s, int64_t ts)
{
	ck_assert_int_eq(tl_http_tracker_data(t, conn, 100, 7, rd, (const uint8_t *)s, strlen(s),
					      strlen(s), ts), 0);
}

#define REQ(id) "GET /r HTTP/1.1\r\nHost: h\r\nx-request-id: " id "\r\n\r\n"
#define RESP(st) "HTTP/1.1 " st "\r\nContent-Length: 2\r\n\r\nok"

static void expect(int i, const char *id, int status, const char *error, enum tl_http_direction d)
{
	ck_assert_int_gt(ngot, i);
	ck_assert_str_eq(got[i].id, id);
	ck_assert_int_eq(got[i].status, status);
	if (error)
		ck_assert_str_eq(got[i].error, error);
	else
		ck_assert_ptr_null(got[i].error);
	ck_assert_int_eq(got[i].direction, d);
}

START_TEST(test_keepalive_inbound)
{
	struct tl_http_tracker *t = tracker(0, 0);
	struct tl_http_tracker_stats st;

	feed(t, 1, true, REQ("a"), 10);
	feed(t, 1, false, RESP("200 OK"), 15);
	feed(t, 1, true, REQ("b"), 20);
	feed(t, 1, false, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 30);
	feed(t, 1, true, "ok", 31); /* a request body: not a head */
	ck_assert_int_eq(ngot, 2);
	expect(0, "a", 200, NULL, TL_HTTP_DIR_INBOUND);
	expect(1, "b", 404, NULL, TL_HTTP_DIR_INBOUND);
	ck_assert_int_eq(got[0].start_ns, 10);
	ck_assert_int_eq(got[0].end_ns, 15);
	ck_assert_str_eq(got[0].method, "GET");
	ck_assert_str_eq(got[0].path, "/r");
	tl_http_tracker_close(t, 1, 40);
	ck_assert_int_eq(ngot, 2);
	tl_http_tracker_stats(t, &st);
	ck_assert_int_eq(st.conns, 0);
	tl_http_tracker_free(t);
}
END_TEST

START_TEST(test_pipelined_outbound)
{
	struct tl_http_tracker *t = tracker(0, 0);

	feed(t, 2, false, REQ("1") REQ("2") "POST /p HTTP/1.1\r\nContent-Length: 3\r\nx-request-id: 3\r\n\r\nabc" REQ("4"), 5);
	ck_assert_int_eq(ngot, 0);
	feed(t, 2, true, RESP("200 OK") RESP("201 Created") RESP("503 Service Unavailable"), 9);
	feed(t, 2, true, "HTTP/1.1 100 Continue\r\n\r\n", 10);
	feed(t, 2, true, "HTTP/1.1 204 No Content\r\n\r\n", 11);
	ck_assert_int_eq(ngot, 4);
	expect(0, "1", 200, NULL, TL_HTTP_DIR_OUTBOUND);
	expect(1, "2", 201, NULL, TL_HTTP_DIR_OUTBOUND);
	expect(2, "3", 503, NULL, TL_HTTP_DIR_OUTBOUND);
	expect(3, "4", 204, NULL, TL_HTTP_DIR_OUTBOUND);
	ck_assert_str_eq(got[2].method, "POST");
	tl_http_tracker_free(t);
}
END_TEST

/* The pending ring starts small and grows: requests stay in order when it
 * grows wrapped around (its head not at the first slot), and the bound
 * still drops the oldest once it is reached. */
START_TEST(test_pending_grows_in_order)
{
	struct tl_http_tracker *t = tracker(0, 3);
	struct tl_http_tracker_stats st;

	feed(t, 4, true, REQ("a") REQ("b"), 1);
	feed(t, 4, false, RESP("200 OK"), 2);     /* a answered: the head moves on */
	feed(t, 4, true, REQ("c") REQ("d"), 3); /* c wraps to the first slot, d grows */
	feed(t, 4, true, REQ("e"), 4);          /* over the bound of 3: b goes */
	feed(t, 4, false, RESP("201 Created") RESP("202 Accepted") RESP("203 Info"), 5);
	ck_assert_int_eq(ngot, 4);
	expect(0, "a", 200, NULL, TL_HTTP_DIR_INBOUND);
	expect(1, "c", 201, NULL, TL_HTTP_DIR_INBOUND);
	expect(2, "d", 202, NULL, TL_HTTP_DIR_INBOUND);
	expect(3, "e", 203, NULL, TL_HTTP_DIR_INBOUND);
	tl_http_tracker_stats(t, &st);
	ck_assert_int_eq(st.pending_overflow, 1);
	tl_http_tracker_free(t);

	/* Unbounded enough: 40 pipelined requests, answered in order. */
	t = tracker(0, 0);
	for (int i = 0; i < 40; i++) {
		char req[96];

		snprintf(req, sizeof(req), "GET /r HTTP/1.1\r\nx-request-id: r%d\r\n\r\n", i);
		feed(t, 5, true, req, 10 + i);
		if (i % 7 == 6)
			feed(t, 5, false, RESP("200 OK"), 10 + i);
	}
	for (int i = 0; i < 40 - 40 / 7; i++)
		feed(t, 5, false, RESP("200 OK"), 100 + i);
	ck_assert_int_eq(ngot, 40);
	for (int i = 0; i < 40; i++) {
		char id[16];

		snprintf(id, sizeof(id), "r%d", i);
		expect(i, id, 200, NULL, TL_HTTP_DIR_INBOUND);
	}
	tl_http_tracker_stats(t, &st);
	ck_assert_int_eq(st.pending_overflow, 0);
	tl_http_tracker_free(t);
}
END_TEST

/* The kernel's records as the ring hands them over (tl_http_tracker_record):
 * DATA, the end of stream, and the sock variant's CLOSE at the socket's
 * destruction, which carries a reset the process never read. */
static void rec(struct tl_http_tracker *t, uint16_t kind, uint16_t flags, uint64_t key, int32_t err,
		const char *data, int64_t ts)
{
	struct tl_http_rec r = {
		.kind = kind,
		.flags = flags,
		.len = data ? (uint32_t)strlen(data) : 0,
		.ktime_ns = (uint64_t)ts,
		.cgroup_id = 77,
		.sock = key,
		.pid = 10,
		.tgid = 10,
		.total = data ? (uint32_t)strlen(data) : 0,
		.err = err,
	};

	tl_http_tracker_record(t, &r, (const uint8_t *)data);
}

START_TEST(test_records)
{
	struct tl_http_tracker *t = tracker(0, 0);

	/* read a request, wrote its answer, read the next: the socket is
	 * destroyed after a reset the process never read */
	rec(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 9, 0, REQ("a"), 1);
	rec(t, TL_HTTP_REC_DATA, 0, 9, 0, RESP("200 OK"), 2);
	rec(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 9, 0, REQ("b"), 3);
	rec(t, TL_HTTP_REC_CLOSE, 0, 9, -ECONNRESET, NULL, 4);
	ck_assert_int_eq(ngot, 2);
	expect(0, "a", 200, NULL, TL_HTTP_DIR_INBOUND);
	ck_assert_uint_eq(got[0].cgroup_id, 77);
	expect(1, "b", 0, "reset", TL_HTTP_DIR_INBOUND);
	ck_assert_int_eq(got[1].end_ns, 4);

	/* a plain close: "closed" */
	rec(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 10, 0, REQ("c"), 5);
	rec(t, TL_HTTP_REC_CLOSE, 0, 10, 0, NULL, 6);
	expect(2, "c", 0, "closed", TL_HTTP_DIR_INBOUND);

	/* the end of stream ends the connection; a read error is a reset */
	rec(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 11, 0, REQ("d"), 7);
	rec(t, TL_HTTP_REC_EOF, 0, 11, 0, NULL, 8);
	expect(3, "d", 0, "closed", TL_HTTP_DIR_INBOUND);
	rec(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 12, 0, REQ("e"), 9);
	rec(t, TL_HTTP_REC_ERROR, 0, 12, -ECONNRESET, NULL, 10);
	expect(4, "e", 0, "reset", TL_HTTP_DIR_INBOUND);

	/* a loss mark: what was pending is dropped, not paired with the
	 * answer that follows */
	rec(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 13, 0, REQ("f"), 11);
	rec(t, TL_HTTP_REC_DATA, TL_HTTP_RF_LOST, 13, 0, RESP("200 OK"), 12);
	ck_assert_int_eq(ngot, 5);
	tl_http_tracker_free(t);
}
END_TEST

/* A record with the peer fields (OPEN, or DATA that starts a request). */
static void rec_peer(struct tl_http_tracker *t, uint16_t kind, uint16_t flags, uint64_t key,
		     uint16_t family, const uint8_t *addr, uint16_t port, const char *data, int64_t ts)
{
	struct tl_http_rec r = {
		.kind = kind,
		.flags = flags | TL_HTTP_RF_PEER,
		.len = data ? (uint32_t)strlen(data) : 0,
		.ktime_ns = (uint64_t)ts,
		.cgroup_id = 77,
		.sock = key,
		.tgid = 10,
		.total = data ? (uint32_t)strlen(data) : 0,
		.peer_port = port,
		.local_port = 15006,
		.family = family,
	};

	memcpy(r.peer_addr, addr, family == TL_HTTP_AF_INET ? 4 : 16);
	tl_http_tracker_record(t, &r, (const uint8_t *)data);
}

START_TEST(test_peers)
{
	static const uint8_t v4[4] = { 10, 1, 2, 3 };
	static const uint8_t v6[16] = { 0xfd, 0, [15] = 1 };
	static const uint8_t mapped[16] = { [10] = 0xff, [11] = 0xff, 10, 9, 8, 7 };
	struct tl_http_tracker *t = tracker(0, 0);
	struct tl_http_tracker_stats st;

	ngot = 0;
	/* accepted while attached: the OPEN names the peer and the start,
	 * the requests after it carry neither */
	rec_peer(t, TL_HTTP_REC_OPEN, TL_HTTP_RF_ACCEPTED, 20, TL_HTTP_AF_INET, v4, 51234, NULL, 100);
	rec(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 20, 0, REQ("p1"), 110);
	rec(t, TL_HTTP_REC_DATA, 0, 20, 0, RESP("200 OK"), 120);
	rec(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 20, 0, REQ("p2"), 130);
	rec(t, TL_HTTP_REC_DATA, 0, 20, 0,
	    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 140);
	ck_assert_int_eq(ngot, 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_eq(got[i].peer.family, TL_HTTP_AF_INET);
		ck_assert_mem_eq(got[i].peer.addr, v4, 4);
		ck_assert_uint_eq(got[i].peer.port, 51234);
		ck_assert_int_eq(got[i].conn_start_ns, 100);
		ck_assert_uint_eq(got[i].direction, TL_HTTP_DIR_INBOUND);
	}
	ck_assert_uint_eq(got[0].conn_seq, got[1].conn_seq);
	ck_assert(!got[0].conn_close && got[1].conn_close);

	/* opened before the capture: the request head names the peer (IPv6),
	 * no start; another connection, another number */
	rec_peer(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 21, TL_HTTP_AF_INET6, v6, 443, REQ("p3"), 150);
	rec(t, TL_HTTP_REC_DATA, 0, 21, 0, RESP("503 Service Unavailable"), 160);
	ck_assert_int_eq(ngot, 3);
	ck_assert_uint_eq(got[2].peer.family, TL_HTTP_AF_INET6);
	ck_assert_mem_eq(got[2].peer.addr, v6, 16);
	ck_assert_int_eq(got[2].conn_start_ns, 0);
	ck_assert_uint_ne(got[2].conn_seq, got[0].conn_seq);

	/* an IPv4 client of a dual-stack socket is said as IPv4 */
	rec_peer(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 22, TL_HTTP_AF_INET6, mapped, 9, REQ("p4"), 170);
	rec(t, TL_HTTP_REC_DATA, 0, 22, 0, RESP("200 OK"), 180);
	ck_assert_uint_eq(got[3].peer.family, TL_HTTP_AF_INET);
	ck_assert_mem_eq(got[3].peer.addr, mapped + 12, 4);

	/* an OPEN for a key still held (a socket address reused, its end not
	 * seen): the old connection's pending request is closed, the new one
	 * starts clean with its own peer */
	rec(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 21, 0, REQ("p5"), 190);
	rec_peer(t, TL_HTTP_REC_OPEN, 0, 21, TL_HTTP_AF_INET, v4, 8080, NULL, 200);
	ck_assert_int_eq(ngot, 5);
	expect(4, "p5", 0, "closed", TL_HTTP_DIR_INBOUND);
	rec(t, TL_HTTP_REC_DATA, 0, 21, 0, REQ("p6"), 210);
	rec(t, TL_HTTP_REC_DATA, TL_HTTP_RF_READ, 21, 0, RESP("200 OK"), 220);
	ck_assert_int_eq(ngot, 6);
	/* connected (not accepted): outbound, its peer the server */
	expect(5, "p6", 200, NULL, TL_HTTP_DIR_OUTBOUND);
	ck_assert_uint_eq(got[5].peer.port, 8080);
	ck_assert_int_eq(got[5].conn_start_ns, 200);
	tl_http_tracker_stats(t, &st);
	ck_assert_uint_eq(st.opened, 2);
	tl_http_tracker_free(t);
}
END_TEST

START_TEST(test_head_and_chunked)
{
	struct tl_http_tracker *t = tracker(0, 0);

	feed(t, 3, true, "HEAD /h HTTP/1.1\r\nx-request-id: h\r\n\r\n" REQ("after"), 1);
	/* The HEAD answer announces 5 bytes it does not send; the next
	 * response follows at once. */
	feed(t, 3, false, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 500 Oops\r\n"
			  "Transfer-Encoding: chunked\r\n\r\n5\r\nHTTP/\r\n", 2);
	ck_assert_int_eq(ngot, 2);
	expect(0, "h", 200, NULL, TL_HTTP_DIR_INBOUND);
	expect(1, "after", 500, NULL, TL_HTTP_DIR_INBOUND);
	tl_http_tracker_free(t);
}
END_TEST

START_TEST(test_reset_close_upgrade)
{
	struct tl_http_tracker *t = tracker(0, 0);

	feed(t, 4, true, REQ("r1"), 1);
	tl_http_tracker_reset(t, 4, 5);
	ck_assert_int_eq(ngot, 1);
	expect(0, "r1", 0, "reset", TL_HTTP_DIR_INBOUND);
	ck_assert_int_eq(got[0].end_ns, 5);
	tl_http_tracker_close(t, 4, 6);
	ck_assert_int_eq(ngot, 1);

	feed(t, 5, true, REQ("c1"), 1);
	feed(t, 5, true, REQ("c2"), 2);
	tl_http_tracker_close(t, 5, 9);
	ck_assert_int_eq(ngot, 3);
	expect(1, "c1", 0, "closed", TL_HTTP_DIR_INBOUND);
	expect(2, "c2", 0, "closed", TL_HTTP_DIR_INBOUND);

	/* The same key after close is a new connection (fd reuse): this
	 * time the process writes the request. */
	feed(t, 5, false, REQ("n"), 10);
	feed(t, 5, true, RESP("200 OK"), 11);
	expect(3, "n", 200, NULL, TL_HTTP_DIR_OUTBOUND);

	feed(t, 6, true, "GET /ws HTTP/1.1\r\nUpgrade: websocket\r\nx-request-id: u\r\n\r\n", 1);
	feed(t, 6, false, "HTTP/1.1 101 Switching Protocols\r\n\r\n", 2);
	feed(t, 6, true, REQ("inside-ws"), 3);
	feed(t, 6, false, RESP("200 OK"), 4);
	ck_assert_int_eq(ngot, 5);
	expect(4, "u", 101, NULL, TL_HTTP_DIR_INBOUND);
	tl_http_tracker_free(t);
}
END_TEST

START_TEST(test_not_http_and_midstream)
{
	struct tl_http_tracker *t = tracker(0, 0);
	struct tl_http_tracker_stats st;

	feed(t, 7, true, "\x16\x03\x01\x00\x05hello", 1);
	feed(t, 7, true, REQ("hidden"), 2);
	feed(t, 7, false, RESP("200 OK"), 3);
	/* First seen at a response: nothing to pair it with. */
	feed(t, 8, false, RESP("200 OK"), 1);
	feed(t, 8, true, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 2);
	ck_assert_int_eq(ngot, 0);
	tl_http_tracker_stats(t, &st);
	ck_assert_int_eq(st.not_http, 2);
	ck_assert_int_eq(st.unmatched_responses, 1);
	tl_http_tracker_free(t);
}
END_TEST

START_TEST(test_bounds)
{
	struct tl_http_tracker *t = tracker(2, 2);
	struct tl_http_tracker_stats st;

	feed(t, 1, true, REQ("p1") REQ("p2") REQ("p3"), 1);
	feed(t, 2, true, REQ("x"), 2);
	feed(t, 3, true, REQ("y"), 3); /* evicts connection 1, least recent */
	tl_http_tracker_stats(t, &st);
	ck_assert_int_eq(st.pending_overflow, 1);
	ck_assert_int_eq(st.evicted, 1);
	ck_assert_int_eq(st.conns, 2);
	ck_assert_int_eq(ngot, 2);
	expect(0, "p2", 0, "evicted", TL_HTTP_DIR_INBOUND);
	expect(1, "p3", 0, "evicted", TL_HTTP_DIR_INBOUND);
	tl_http_tracker_expire(t, 3);
	ck_assert_int_eq(ngot, 3);
	expect(2, "x", 0, "closed", TL_HTTP_DIR_INBOUND);
	tl_http_tracker_free(t);
}
END_TEST

/* Records lost to a full ring: what was pending is dropped, not paired with
 * the next response (which would give it another request's status). */
START_TEST(test_lost)
{
	struct tl_http_tracker *t = tracker(0, 0);
	struct tl_http_tracker_stats st;

	feed(t, 11, true, REQ("before-loss"), 1);
	/* its response was lost; the next record says so */
	tl_http_tracker_lost(t, 11);
	feed(t, 11, true, REQ("after-loss"), 3);
	feed(t, 11, false, RESP("404 Not Found"), 4);
	ck_assert_int_eq(ngot, 1);
	expect(0, "after-loss", 404, NULL, TL_HTTP_DIR_INBOUND);
	tl_http_tracker_stats(t, &st);
	ck_assert_int_eq(st.lost_requests, 1);
	tl_http_tracker_lost(t, 999); /* unknown connection: nothing */
	tl_http_tracker_free(t);
}
END_TEST

/* Heads split across two reads/writes at every offset pair with the whole. */
START_TEST(test_split_everywhere)
{
	const char *req = "GET /split/path HTTP/1.1\r\nHost: example\r\nUser-Agent: wrk\r\n"
			  "x-request-id: split-id-42\r\n\r\n";
	const char *resp = "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n";
	size_t n = strlen(req), m = strlen(resp);

	for (size_t k = 1; k < n; k++) {
		for (size_t j = 1; j < m; j += (k % 7) + 1) {
			struct tl_http_tracker *t = tracker(0, 0);

			tl_http_tracker_data(t, 9, 1, 1, true, (const uint8_t *)req, k, k, 1);
			tl_http_tracker_data(t, 9, 1, 1, true, (const uint8_t *)req + k, n - k, n - k, 2);
			tl_http_tracker_data(t, 9, 1, 1, false, (const uint8_t *)resp, j, j, 3);
			tl_http_tracker_data(t, 9, 1, 1, false, (const uint8_t *)resp + j, m - j, m - j, 4);
			ck_assert_msg(ngot == 1, "split %zu/%zu: %d exchanges", k, j, ngot);
			expect(0, "split-id-42", 502, NULL, TL_HTTP_DIR_INBOUND);
			ck_assert_str_eq(got[0].path, "/split/path");
			ck_assert_int_eq(got[0].start_ns, 1);
			ck_assert_int_eq(got[0].end_ns, 3);
			ck_assert(!got[0].head_cut);
			tl_http_tracker_free(t);
		}
	}
}
END_TEST

/* The kernel copied only a prefix (total > len): what the head said so far
 * is used, flagged as cut. */
START_TEST(test_prefix_cut)
{
	const char *req = "GET /cut HTTP/1.1\r\nx-request-id: early\r\nCookie: aaaaaaaaaaaaaaa";
	struct tl_http_tracker *t = tracker(0, 0);

	tl_http_tracker_data(t, 10, 1, 1, true, (const uint8_t *)req, strlen(req), 4096, 1);
	feed(t, 10, false, RESP("200 OK"), 2);
	ck_assert_int_eq(ngot, 1);
	expect(0, "early", 200, NULL, TL_HTTP_DIR_INBOUND);
	ck_assert(got[0].head_cut);
	tl_http_tracker_free(t);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("http-parse");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, test_table, 0, sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, test_cut_and_limits);
	suite_add_tcase(s, tc);
	tc = tcase_create("pair");
	tcase_add_test(tc, test_keepalive_inbound);
	tcase_add_test(tc, test_pipelined_outbound);
	tcase_add_test(tc, test_pending_grows_in_order);
	tcase_add_test(tc, test_head_and_chunked);
	tcase_add_test(tc, test_reset_close_upgrade);
	tcase_add_test(tc, test_records);
	tcase_add_test(tc, test_not_http_and_midstream);
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_split_everywhere);
	tcase_add_test(tc, test_prefix_cut);
	tcase_add_test(tc, test_lost);
	tcase_add_test(tc, test_peers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
