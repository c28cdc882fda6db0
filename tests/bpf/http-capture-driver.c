/* SPDX-License-Identifier: Apache-2.0 */
/* Loads the HTTP capture program, tracks the cgroups named on the command
 * line and prints each request/response exchange the kernel saw as one JSON
 * line, until SIGTERM or SIGINT; then it drains the ring, detaches and
 * prints "dropped N" (records lost to a full ring) on stderr. Requests
 * still pending then stay unreported. SIGUSR1 untracks the cgroups,
 * SIGUSR2 tracks them again (the kernel's cgroup table loses the ids and
 * has them back). Driven by
 * tests/bpf/test-http-capture.py. Needs root.
 *   http-capture-driver [--prefix N] [--ring BYTES] [--variant V] [--drain-ms MS]
 *                       [--opens 1] CGROUP_ID...
 * Each exchange names its connection: "peer" ("ip:port", null when not
 * known), "connStart" (boot ns, 0 when the connection predates the
 * programs), "conn" (a number per connection, from 1) and "connClose".
 * --opens 1: each connection's OPEN record is printed too, as
 * {"open":"peer","accepted":bool,"cgroup":N}.
 * --drain-ms: the drain timer's slow period (a long one leaves the
 * programs' wake-ups to drain the ring alone).
 * V: auto (default), sock, rdonly_cast or probe_read (http-bpf.h). Prints
 * "ready VARIANT" once attached. */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "clock.h"
#include "http-bpf.h"
#include "http-pair.h"
#include "loop.h"
#include "macro.h"

static struct tl_http_tracker *tracker;
static struct tl_http_bpf *bpf;
#define MAX_CG 16
static uint64_t cgroups[MAX_CG];
static int n_cgroups;

static const char *dir_name(enum tl_http_direction d)
{
	return d == TL_HTTP_DIR_INBOUND ? "inbound" : d == TL_HTTP_DIR_OUTBOUND ? "outbound" : "unknown";
}

static bool print_opens;
static uint32_t next_conn;

/* "\"ip:port\"" ("[v6]:port") or null */
static const char *peer_json(const struct tl_http_peer *p, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];

	if (!p->family || !inet_ntop(p->family, p->addr, a, sizeof(a)))
		return "null";
	snprintf(buf, len, p->family == AF_INET6 ? "\"[%s]:%u\"" : "\"%s:%u\"", a, p->port);
	return buf;
}

static void on_exchange(void *ud _unused_, const struct tl_http_exchange *x)
{
	char peer[80];

	if (!*x->conn_no)
		*x->conn_no = ++next_conn;
	printf("{\"id\":\"%s\",\"method\":\"%s\",\"path\":\"%s\",\"status\":%u,\"direction\":\"%s\","
	       "\"error\":\"%s\",\"tgid\":%u,\"cgroup\":%llu,\"cut\":%s,\"durationNs\":%lld,"
	       "\"peer\":%s,\"connStart\":%lld,\"conn\":%u,\"connClose\":%s,\"startNs\":%lld}\n",
	       x->id, x->method, x->path, x->status, dir_name(x->direction), x->error ? x->error : "",
	       x->tgid, (unsigned long long)x->cgroup_id, x->head_cut ? "true" : "false",
	       (long long)(x->end_ns - x->start_ns), peer_json(&x->peer, peer, sizeof(peer)),
	       (long long)x->conn_start_ns, *x->conn_no, x->conn_close ? "true" : "false",
	       (long long)x->start_ns);
	fflush(stdout);
}

static void on_rec(void *ud _unused_, const struct tl_http_rec *r, const uint8_t *data)
{
	struct tl_http_peer p = { 0 };
	char peer[80];

	if (print_opens && r->kind == TL_HTTP_REC_OPEN) {
		tl_http_rec_peer(r, &p);
		printf("{\"id\":\"\",\"open\":%s,\"accepted\":%s,\"cgroup\":%llu,\"startNs\":%lld}\n",
		       peer_json(&p, peer, sizeof(peer)), r->flags & TL_HTTP_RF_ACCEPTED ? "true" : "false",
		       (unsigned long long)r->cgroup_id, (long long)r->ktime_ns);
		fflush(stdout);
	}
	tl_http_tracker_record(tracker, r, data);
}

static int on_signal(struct tl_loop *loop, int fd, uint32_t ev _unused_, void *ud _unused_)
{
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo == SIGUSR1 || si.ssi_signo == SIGUSR2) {
		for (int i = 0; i < n_cgroups; i++) {
			int r = si.ssi_signo == SIGUSR1 ? tl_http_bpf_untrack_cgroup(bpf, cgroups[i])
							: tl_http_bpf_track_cgroup(bpf, cgroups[i]);

			if (r < 0)
				fprintf(stderr, "%s %llu: %s\n", si.ssi_signo == SIGUSR1 ? "untrack" : "track",
					(unsigned long long)cgroups[i], strerror(-r));
		}
		return 0;
	}
	tl_loop_quit(loop, 0);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct tl_http_tracker_config tc = {
		.want = { .names = { "x-request-id", "traceparent" }, .n = 2 },
	};
	struct tl_http_bpf_config bc = { 0 };
	struct tl_http_bpf *b = NULL;
	struct tl_loop *loop = NULL;
	char err[256] = "";
	sigset_t mask;
	int i = 1, r, sfd;

	while (i + 1 < argc && strncmp(argv[i], "--", 2) == 0) {
		if (strcmp(argv[i], "--prefix") == 0)
			bc.prefix_bytes = (uint32_t)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--ring") == 0)
			bc.ringbuf_bytes = (uint32_t)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--variant") == 0)
			bc.variant = argv[i + 1];
		else if (strcmp(argv[i], "--drain-ms") == 0)
			bc.drain_ms = (uint32_t)atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--opens") == 0)
			print_opens = atoi(argv[i + 1]) != 0;
		else
			return 2;
		i += 2;
	}
	if (tl_http_tracker_new(&tc, on_exchange, NULL, &tracker) < 0 || tl_loop_new(&loop) < 0)
		return 1;
	r = tl_http_bpf_new(&bc, on_rec, NULL, &b, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	bpf = b;
	for (; i < argc; i++) {
		if (n_cgroups == MAX_CG)
			return 2;
		cgroups[n_cgroups++] = strtoull(argv[i], NULL, 10);
		r = tl_http_bpf_track_cgroup(b, cgroups[n_cgroups - 1]);
		if (r < 0) {
			fprintf(stderr, "track %s: %s\n", argv[i], strerror(-r));
			return 1;
		}
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || tl_loop_add_io(loop, sfd, EPOLLIN, on_signal, NULL) < 0)
		return 1;
	r = tl_http_bpf_attach_loop(b, loop);
	if (r == 0)
		r = tl_http_bpf_attach(b);
	if (r < 0) {
		fprintf(stderr, "attach: %s\n", strerror(-r));
		return 1;
	}
	printf("ready %s\n", tl_http_bpf_variant(b));
	fflush(stdout);
	tl_loop_run(loop);
	tl_http_bpf_detach(b);
	fprintf(stderr, "dropped %llu\n", (unsigned long long)tl_http_bpf_dropped(b));
	fprintf(stderr, "states %u\n", tl_http_bpf_sock_states(b));
	tl_http_bpf_free(b);
	tl_http_tracker_free(tracker);
	tl_loop_del_io(loop, sfd);
	close(sfd);
	tl_loop_free(loop);
	return 0;
}
