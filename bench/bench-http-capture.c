/* SPDX-License-Identifier: Apache-2.0 */
/* bench-http-capture: what capturing HTTP on a Pod's sockets costs.
 *
 * 1. syscalls  The cost every process on the node pays while the syscall
 *              programs are attached, in a process that is not tracked:
 *              getppid() (a syscall no hook is about) and read(2) of one
 *              byte from /dev/zero (one the hooks are about, from a process
 *              they must ignore). Variants, interleaved A B C D D C B A per
 *              round: none (nothing attached), empty (an empty tp_btf
 *              sys_exit program: the floor of the hook), raw (termlined's
 *              choice: one tp_btf program on raw_syscalls/sys_exit),
 *              classic (the per-syscall classic tracepoints a stash-based
 *              variant needs, enter and exit of the nine syscalls, each
 *              doing the cgroup check). Median CPU ns per call (the
 *              thread's CPU time, so other load on a shared machine counts
 *              little) over the rounds, with BPF run-time statistics off
 *              (they add two clock reads per run; --bpf-stats keeps them
 *              on), then each program's own run time per call with them on.
 *    tracked   A child in a tracked cgroup writes and reads a request and
 *              a response on loopback TCP (four records per iteration):
 *              CPU ns per record added by the empty and the raw program.
 * 2. server    nginx from Debian in its own cgroup under wrk (keep-alive,
 *              and a new connection per request), with capture off (A) and
 *              on with the cgroup tracked (B), interleaved A B B A per
 *              round: requests/s, nginx CPU per request (the cgroup's
 *              cpu.stat usage_usec), the consumer's CPU per captured
 *              request (this process's thread that drains the ring, pairs
 *              requests with responses and fills the event, plus its JSON
 *              line with --json, which termlined writes only with
 *              --emit-events), exchanges seen and ring drops.
 * Figures only: nothing asserts on timing. The machine may be shared:
 * the interleaving spreads drift over both sides; say so with the figures.
 *   bench-http-capture [--rounds N] [--calls N] [--seconds S] [--connections C] [--no-server]
 *                      [--no-syscalls] [--json] [--bpf-stats]
 *   bench-http-capture --tracked-only [--rounds N] [--calls N]
 *   bench-http-capture --consumer-only N [--json] [--close]   (no root: the consumer
 *                      alone, for callgrind; --close: a connection per request)
 * Needs root, nginx and wrk; exits 77 without root. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench-util.h"
#include "capture.h"
#include "http-bpf.h"
#include "cgroup-map.h"
#include "clock.h"
#include "event.h"
#include "http-pair.h"
#include "http.skel.h"
#include "macro.h"
#include "termline-http.h"
#include "tl-buf.h"

/* BOOTTIME -> UTC for the records, sampled at start (a run lasts seconds). */
static struct tl_clock bench_clock;

static uint64_t drops(void);
static int write_file(const char *path, const char *s);
static struct termline_http *skel;
/* The sys_exit variant measured as "raw": bpf_rdonly_cast in the fd walk
 * where the kernel has it or, --variant probe_read, the fallback with a
 * probe read per hop. */
static struct bpf_program *raw_prog;
/* The socket send/receive tracepoint variant termlined loads where the
 * kernel has them (>= 6.3); false: not loadable here. */
static bool have_sock;
/* What the server part measures as "capture on": V_SOCK or V_RAW. */
static int on_variant;

/* As termlined does (daemon/capture/http-bpf.c). */
static int track(uint64_t cgid, bool on)
{
	int fd = bpf_map__fd(skel->maps.http_cgroups);

	int r;

	if (on)
		return tl_cg_track(fd, &skel->bss->http_cg, cgid);
	r = tl_cg_untrack(fd, &skel->bss->http_cg, cgid);
	return r == -ENOENT ? 0 : r; /* (not tracked yet) */
}

enum variant { V_NONE, V_EMPTY, V_RAW, V_CLASSIC, V_SOCK, V_MAX };
static const char *const variant_names[] = { "none", "empty tp_btf sys_exit", "raw tp_btf sys_exit",
					     "classic sys_enter/exit x9", "sock send/recv tp_btf" };

static bool sock_prog(const struct bpf_program *prog)
{
	return prog == skel->progs.http_sock_recv || prog == skel->progs.http_sock_send ||
	       prog == skel->progs.http_tcp_destroy;
}

static struct bpf_link *links[64];
static int n_links;

static void detach_all(void)
{
	for (int i = 0; i < n_links; i++)
		bpf_link__destroy(links[i]);
	n_links = 0;
}

static int attach(enum variant v)
{
	struct bpf_program *prog;

	detach_all();
	if (v == V_NONE)
		return 0;
	bpf_object__for_each_program(prog, skel->obj) {
		enum variant pv = prog == raw_prog			    ? V_RAW
				  : prog == skel->progs.http_floor_sys_exit ? V_EMPTY
				  : sock_prog(prog)			    ? V_SOCK
									    : V_CLASSIC;
		struct bpf_link *l;

		/* the other sys_exit variant */
		if (pv != v || !bpf_program__autoload(prog) ||
		    (pv == V_CLASSIC && (prog == skel->progs.http_sys_exit ||
					 prog == skel->progs.http_sys_exit_probed)))
			continue;
		l = bpf_program__attach(prog);
		if (!l) {
			fprintf(stderr, "attach %s: %s\n", bpf_program__name(prog), strerror(errno));
			return -errno;
		}
		links[n_links++] = l;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* CPU time, not wall time: on a shared machine the wall clock measures
 * everybody else's load; the thread's CPU time holds the syscall, its
 * tracepoint programs and little else. */
static double ns_per_call(int which, uint64_t calls, int zero_fd)
{
	char c;
	uint64_t t0 = thread_cpu_ns();

	for (uint64_t i = 0; i < calls; i++) {
		if (which == 0)
			syscall(SYS_getppid);
		else if (read(zero_fd, &c, 1) != 1)
			abort();
	}
	return (double)(thread_cpu_ns() - t0) / (double)calls;
}

/* Kernel-side run time of a program (BPF_STATS_RUN_TIME). */
static void prog_stats_of(const struct bpf_program *prog, uint64_t *run_ns, uint64_t *runs)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	*run_ns = *runs = 0;
	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0) {
		*run_ns = info.run_time_ns;
		*runs = info.run_cnt;
	}
}

/* The "capture on" variant's programs, summed. */
static void prog_stats(uint64_t *run_ns, uint64_t *runs)
{
	const struct bpf_program *sock[] = { skel->progs.http_sock_recv, skel->progs.http_sock_send,
					     skel->progs.http_tcp_destroy };
	uint64_t ns, n;

	if (on_variant == V_RAW) {
		prog_stats_of(raw_prog, run_ns, runs);
		return;
	}
	*run_ns = *runs = 0;
	for (size_t i = 0; i < sizeof(sock) / sizeof(sock[0]); i++) {
		prog_stats_of(sock[i], &ns, &n);
		*run_ns += ns;
		*runs += n;
	}
}

/* ---- the tracked path: a process in a tracked cgroup on loopback TCP ---- */

/* As the agent drains the ring: on a period that follows the rate
 * (tl_http_drain_period_ms(), the default 4 MiB ring), and when the
 * programs wake it (each time the records reach another half of the ring,
 * wake_bytes). *bytes counts what each record took of it. */
static void drain_paced(struct ring_buffer *rb, volatile bool *stop, uint64_t *bytes)
{
	uint64_t period = 25;

	while (!*stop) {
		uint64_t b0 = *bytes, t0 = mono_ms(), t;

		while (!*stop && (t = mono_ms() - t0) < period)
			ring_buffer__poll(rb, (int)(period - t));
		ring_buffer__consume(rb);
		period = tl_http_drain_period_ms(period, *bytes - b0, 4u << 20, 25);
	}
	ring_buffer__consume(rb);
}

struct drainer {
	struct ring_buffer *rb;
	volatile bool stop;
	uint64_t records;
	uint64_t bytes;
};

static int ring_count_cb(void *ctx, void *data _unused_, size_t size)
{
	struct drainer *d = ctx;

	d->records++;
	d->bytes += TL_HTTP_RING_TAKEN(size);
	return 0;
}

static void *drain_thread(void *arg)
{
	struct drainer *d = arg;

	drain_paced(d->rb, &d->stop, &d->bytes);
	return NULL;
}

/* In a child moved into cgroup procs: a client and a server socket on
 * loopback TCP, each iteration a request written and read, a response
 * written and read (four records, all heads). Writes its thread CPU ns
 * per iteration to fd out. */
static void tracked_child(const char *procs, uint64_t iters, int out)
{
	static const char req[] = "GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\n"
				  "x-request-id: bench-request-0123456789\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\n"
				   "Content-Type: text/html\r\nContent-Length: 42\r\n\r\n"
				   "<html><body>termline bench</body></html>\n";
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	char me[32], buf[4096];
	int l, c, s, one = 1;
	uint64_t t0;
	double per;

	snprintf(me, sizeof(me), "%d", getpid());
	if (write_file(procs, me) < 0)
		_exit(126);
	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &alen) < 0 ||
	    connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		_exit(125);
	s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0 || setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
	    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		_exit(125);
	t0 = thread_cpu_ns();
	for (uint64_t i = 0; i < iters; i++) {
		if (write(c, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1 ||
		    read(s, buf, sizeof(buf)) != (ssize_t)sizeof(req) - 1 ||
		    write(s, resp, sizeof(resp) - 1) != (ssize_t)sizeof(resp) - 1 ||
		    read(c, buf, sizeof(buf)) != (ssize_t)sizeof(resp) - 1)
			_exit(124);
	}
	per = (double)(thread_cpu_ns() - t0) / (double)iters;
	if (write(out, &per, sizeof(per)) != sizeof(per))
		_exit(123);
	_exit(0);
}

static double tracked_run(const char *procs, uint64_t iters)
{
	int p[2];
	double per = -1;
	pid_t pid;
	int status;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		tracked_child(procs, iters, p[1]);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &per, sizeof(per)) != sizeof(per))
		per = -1;
	close(p[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return per;
}

/* What a tracked process pays per record: the same interleaving as the
 * untracked calls, CPU time of the child per iteration of four syscalls
 * that each produce a record (the ring drained by a thread here). */
static int bench_tracked(int rounds, uint64_t iters)
{
	static const enum variant order[8] = { V_NONE, V_EMPTY, V_RAW, V_SOCK,
					       V_SOCK, V_RAW, V_EMPTY, V_NONE };
	static const enum variant shown[4] = { V_NONE, V_EMPTY, V_RAW, V_SOCK };
	char mount[PATH_MAX], cg[PATH_MAX], procs[PATH_MAX];
	double res[V_MAX][32];
	int n[V_MAX] = { 0 };
	struct drainer d = { 0 };
	struct stat st;
	uint64_t cgid, drops0 = drops();
	pthread_t th;

	if (tl_cgroup_find_mount("/proc/self/mountinfo", mount, sizeof(mount)) < 0 ||
	    bench_pathf(cg, sizeof(cg), "%s/termline-bench-http-tracked-%d", mount, getpid()) < 0 ||
	    bench_pathf(procs, sizeof(procs), "%s/cgroup.procs", cg) < 0)
		return -ENOENT;
	if (mkdir(cg, 0755) < 0 || stat(cg, &st) < 0)
		return -errno;
	cgid = st.st_ino;
	if (track(cgid, true) < 0)
		return -errno;
	d.rb = ring_buffer__new(bpf_map__fd(skel->maps.http_events), ring_count_cb, &d, NULL);
	if (!d.rb || pthread_create(&th, NULL, drain_thread, &d) != 0)
		return -ENOMEM;
	tracked_run(procs, iters / 4); /* warm up */
	for (int r = 0; r < rounds && r < 16; r++)
		for (int k = 0; k < 8; k++) {
			enum variant v = order[k];

			if (v == V_SOCK && !have_sock)
				continue;
			if (attach(v) < 0)
				return -1;
			res[v][n[v]] = tracked_run(procs, iters);
			n[v]++;
		}
	detach_all();
	printf("== tracked process: loopback TCP, request and response written and read (4 records"
	       " per iteration), %llu iterations per run, %d runs per variant (median)\n",
	       (unsigned long long)iters, n[V_NONE]);
	{
		double base = median(res[V_NONE], n[V_NONE]);

		for (int i = 0; i < 4; i++) {
			double m;

			if (!n[shown[i]])
				continue;
			m = median(res[shown[i]], n[shown[i]]);

			/* median() sorted the runs: [0] is the fastest. */
			printf("%-28s %10.1f ns/iteration %+8.1f ns/record; fastest run %10.1f %+8.1f\n",
			       variant_names[shown[i]], m, (m - base) / 4, res[shown[i]][0],
			       (res[shown[i]][0] - res[V_NONE][0]) / 4);
		}
	}
	printf("   records drained %llu, ring drops %llu\n", (unsigned long long)d.records,
	       (unsigned long long)(drops() - drops0));
	/* The same runs with BPF_STATS_RUN_TIME on: the programs' own time
	 * per run, steadier than the iterations' wall clock above (each run
	 * also pays the stats' two clock reads). */
	{
		int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		const struct bpf_program *progs[3] = { raw_prog, skel->progs.http_sock_recv,
						       skel->progs.http_sock_send };
		const enum variant of[3] = { V_RAW, V_SOCK, V_SOCK };

		if (stats_fd < 0)
			fprintf(stderr, "bench-http-capture: no BPF run-time statistics: %s\n",
				strerror(errno));
		for (int i = 0; stats_fd >= 0 && i < 3; i++) {
			double best = 0;
			uint64_t runs = 0;

			if (of[i] == V_SOCK && !have_sock)
				continue;
			if (attach(of[i]) < 0)
				break;
			for (int r = 0; r < rounds && r < 16; r++) {
				uint64_t ns0, n0, ns1, n1;

				prog_stats_of(progs[i], &ns0, &n0);
				tracked_run(procs, iters);
				prog_stats_of(progs[i], &ns1, &n1);
				if (n1 > n0 && (best == 0 || (double)(ns1 - ns0) / (double)(n1 - n0) < best)) {
					best = (double)(ns1 - ns0) / (double)(n1 - n0);
					runs = n1 - n0;
				}
			}
			printf("   %-28s %-16s %6.1f ns/run (fastest of %d runs, %llu program runs)\n",
			       variant_names[of[i]], bpf_program__name(progs[i]), best, rounds,
			       (unsigned long long)runs);
		}
		detach_all();
		if (stats_fd >= 0)
			close(stats_fd);
	}
	d.stop = true;
	pthread_join(th, NULL);
	ring_buffer__free(d.rb);
	track(cgid, false);
	bench_remove_tree(cg);
	return 0;
}

/* The programs' own run time per call of an untracked process, as the
 * kernel counts it with BPF_STATS_RUN_TIME on (which adds two clock reads
 * per run to the syscall, so the interleaved runs above are made with it
 * off unless --bpf-stats). */
static void bench_syscalls_prog_time(uint64_t calls, int zero_fd)
{
	static const enum variant vs[] = { V_EMPTY, V_RAW, V_SOCK };
	int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	if (stats_fd < 0) {
		fprintf(stderr, "bench-http-capture: no BPF run-time statistics: %s\n", strerror(errno));
		return;
	}
	printf("   program run time per call (BPF_STATS_RUN_TIME, %llu calls):\n",
	       (unsigned long long)calls);
	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		const struct bpf_program *prog = vs[i] == V_RAW    ? raw_prog
						 : vs[i] == V_SOCK ? skel->progs.http_sock_recv
								   : skel->progs.http_floor_sys_exit;
		uint64_t ns0, n0, ns1, n1, ns2, n2;

		/* (the socket hooks never run here: no socket) */
		if (vs[i] == V_SOCK && !have_sock)
			continue;
		if (attach(vs[i]) < 0)
			break;
		prog_stats_of(prog, &ns0, &n0);
		ns_per_call(0, calls, zero_fd);
		prog_stats_of(prog, &ns1, &n1);
		ns_per_call(1, calls, zero_fd);
		prog_stats_of(prog, &ns2, &n2);
		printf("   %-28s getppid %6.1f ns/run   read(1) %6.1f ns/run\n", variant_names[vs[i]],
		       n1 > n0 ? (double)(ns1 - ns0) / (double)(n1 - n0) : 0.0,
		       n2 > n1 ? (double)(ns2 - ns1) / (double)(n2 - n1) : 0.0);
	}
	detach_all();
	close(stats_fd);
}

static int bench_syscalls(int rounds, uint64_t calls)
{
	static const enum variant order[10] = { V_NONE, V_EMPTY, V_RAW,	  V_CLASSIC, V_SOCK,
						V_SOCK, V_CLASSIC, V_RAW, V_EMPTY,   V_NONE };
	double *res[V_MAX][2];
	int n[V_MAX] = { 0 };
	int zero_fd, r = bench_ensure_tracefs();

	if (r < 0) {
		fprintf(stderr, "bench-http-capture: the classic tracepoints need tracefs: %s\n", strerror(-r));
		return r;
	}
	zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (zero_fd < 0)
		return -errno;
	for (int v = 0; v < V_MAX; v++)
		for (int w = 0; w < 2; w++)
			res[v][w] = calloc((size_t)rounds * 2, sizeof(double));
	ns_per_call(0, calls / 4, zero_fd); /* warm up */
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 10; k++) {
			enum variant v = order[k];

			if (v == V_SOCK && !have_sock)
				continue;
			if (attach(v) < 0)
				return -1;
			res[v][0][n[v]] = ns_per_call(0, calls, zero_fd);
			res[v][1][n[v]] = ns_per_call(1, calls, zero_fd);
			n[v]++;
		}
	}
	detach_all();
	printf("== syscalls: an untracked process, %llu calls per run, %d runs per variant (median)\n",
	       (unsigned long long)calls, n[V_NONE]);
	printf("%-28s %14s %14s %18s %18s\n", "hooks attached", "getppid ns", "read(1) ns",
	       "getppid added ns", "read added ns");
	double base[2] = { median(res[V_NONE][0], n[V_NONE]), median(res[V_NONE][1], n[V_NONE]) };
	for (int v = 0; v < V_MAX; v++) {
		double g, rd;

		if (!n[v])
			continue;
		g = median(res[v][0], n[v]);
		rd = median(res[v][1], n[v]);
		printf("%-28s %14.1f %14.1f %18.1f %18.1f\n", variant_names[v], g, rd, g - base[0],
		       rd - base[1]);
	}
	/* Other load only adds CPU time (cache and TLB refills after being
	 * preempted): on a busy machine the fastest run is the steadier
	 * figure. median() left each array sorted. */
	printf("%-28s %14s %14s %18s %18s\n", "  same, fastest run", "getppid ns", "read(1) ns",
	       "getppid added ns", "read added ns");
	for (int v = 0; v < V_MAX; v++)
		if (n[v])
			printf("%-28s %14.1f %14.1f %18.1f %18.1f\n", variant_names[v], res[v][0][0],
		       res[v][1][0], res[v][0][0] - res[V_NONE][0][0], res[v][1][0] - res[V_NONE][1][0]);
	bench_syscalls_prog_time(calls, zero_fd);
	close(zero_fd);
	for (int v = 0; v < V_MAX; v++)
		for (int w = 0; w < 2; w++)
			free(res[v][w]);
	return 0;
}

/* ---- server under wrk ---- */

struct consumer {
	struct ring_buffer *rb;
	struct tl_http_tracker *tracker;
	volatile bool stop;
	bool json;     /* also write each event's JSON line (--emit-events) */
	uint64_t exchanges;
	uint64_t cpu_ns;
	uint64_t bytes;
	struct tl_buf out;
};

static void on_exchange(void *ud, const struct tl_http_exchange *x)
{
	struct consumer *c = ud;
	struct tl_event ev;

	c->exchanges++;
	/* The agent's own work per request: the event and its JSON line. */
	if (tl_capture_kernel_event(x, tl_clock_boot_to_real(&bench_clock, (uint64_t)x->start_ns),
				    tl_clock_boot_to_real(&bench_clock, (uint64_t)x->end_ns), &ev) == 0) {
		if (c->json) {
			tl_buf_reset(&c->out);
			tl_event_append_json(&ev, true, &c->out);
		}
		tl_event_clear(&ev);
	}
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct consumer *c = ctx;
	const struct tl_http_rec *r = data;

	c->bytes += TL_HTTP_RING_TAKEN(size);
	if (size < sizeof(*r) || r->len > size - sizeof(*r))
		return 0;
	tl_http_tracker_record(c->tracker, r, (const uint8_t *)data + sizeof(*r));
	return 0;
}

static void *consume(void *arg)
{
	struct consumer *c = arg;
	struct timespec ts;

	drain_paced(c->rb, &c->stop, &c->bytes);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	c->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	return NULL;
}

static uint64_t cgroup_usage_us(const char *cg)
{
	char path[PATH_MAX], line[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cpu.stat", cg);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "usage_usec %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static uint64_t drops(void)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t total = 0, v[512];

	for (uint32_t k = 0; k < TL_HTTP_REC_KIND_MAX && ncpu > 0 && ncpu <= 512; k++)
		if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.http_drops), &k, v) == 0)
			for (int i = 0; i < ncpu; i++)
				total += v[i];
	return total;
}

/* wrk's "Requests/sec:" and "N requests in"; -1 when it failed. */
static int run_wrk(int port, int seconds, int conns, bool close_each, double *rps, uint64_t *reqs)
{
	char cmd[512], line[512];
	FILE *p;
	int ok = 0;

	snprintf(cmd, sizeof(cmd),
		 "wrk -t1 -c%d -d%ds -H 'x-request-id: bench-request-0123456789' %s "
		 "http://127.0.0.1:%d/index.html 2>&1",
		 conns, seconds, close_each ? "-H 'Connection: close'" : "", port);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long n;

		if (sscanf(line, "Requests/sec: %lf", rps) == 1)
			ok |= 1;
		if (sscanf(line, " %llu requests in", &n) == 1) {
			*reqs = n;
			ok |= 2;
		}
	}
	pclose(p);
	return ok == 3 ? 0 : -EIO;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		r = -errno;
	close(fd);
	return r;
}

static pid_t start_nginx(const char *dir, const char *cg, int port)
{
	char conf[PATH_MAX], procs[PATH_MAX], buf[2048];
	FILE *f;
	pid_t pid;

	snprintf(conf, sizeof(conf), "%s/nginx.conf", dir);
	snprintf(buf, sizeof(buf), "%s/www", dir);
	mkdir(buf, 0755);
	snprintf(buf, sizeof(buf), "%s/www/index.html", dir);
	f = fopen(buf, "we");
	if (!f)
		return -errno;
	fputs("<html><body>termline bench</body></html>\n", f);
	fclose(f);
	f = fopen(conf, "we");
	if (!f)
		return -errno;
	fprintf(f,
		"daemon off; master_process off; worker_processes 1; pid %s/nginx.pid;\n"
		"error_log %s/error.log; events { worker_connections 1024; }\n"
		"http { access_log off; client_body_temp_path %s; proxy_temp_path %s;\n"
		"  fastcgi_temp_path %s; uwsgi_temp_path %s; scgi_temp_path %s;\n"
		"  keepalive_requests 1000000;\n"
		"  server { listen 127.0.0.1:%d; root %s/www; } }\n",
		dir, dir, dir, dir, dir, dir, dir, port, dir);
	fclose(f);
	if (bench_pathf(procs, sizeof(procs), "%s/cgroup.procs", cg) < 0)
		return -ENAMETOOLONG;
	pid = fork();
	if (pid == 0) {
		char me[32];

		snprintf(me, sizeof(me), "%d", getpid());
		if (write_file(procs, me) < 0)
			_exit(126);
		execlp("nginx", "nginx", "-c", conf, "-e", "/dev/null", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int bench_server(int rounds, int seconds, int conns, bool json)
{
	char mount[PATH_MAX], cg[PATH_MAX], dir[] = "/tmp/termline-bench-http-XXXXXX";
	struct tl_http_tracker_config tc = { .want = { .names = { "x-request-id" }, .n = 1 } };
	struct consumer c = { .json = json };
	pthread_t th;
	uint64_t cgid;
	struct stat st;
	pid_t ng;
	int port = 18000 + (getpid() % 2000), r;

	if (tl_cgroup_find_mount("/proc/self/mountinfo", mount, sizeof(mount)) < 0 ||
	    bench_pathf(cg, sizeof(cg), "%s/termline-bench-http-%d", mount, getpid()) < 0)
		return -ENOENT;
	if (mkdir(cg, 0755) < 0 || stat(cg, &st) < 0 || !mkdtemp(dir))
		return -errno;
	cgid = st.st_ino;
	ng = start_nginx(dir, cg, port);
	if (ng < 0)
		return (int)ng;
	usleep(300000);
	tl_buf_init(&c.out, 0);
	if (tl_http_tracker_new(&tc, on_exchange, &c, &c.tracker) < 0)
		return -ENOMEM;
	c.rb = ring_buffer__new(bpf_map__fd(skel->maps.http_events), on_record, &c, NULL);
	if (!c.rb)
		return -errno;
	pthread_create(&th, NULL, consume, &c);

	for (int mode = 0; mode < 2; mode++) {
		double rps[2][64] = { { 0 } }, cpu_req[2][64] = { { 0 } };
		uint64_t reqs_on = 0, ex0 = c.exchanges, drops0 = drops(), pns0, pruns0, pns1, pruns1;
		int n[2] = { 0, 0 };

		prog_stats(&pns0, &pruns0);
		for (int i = 0; i < rounds * 4 && i < 64; i++) {
			/* A B B A */
			int on = (i % 4 == 1 || i % 4 == 2);
			uint64_t reqs = 0, u0, u1;
			double x;

			if (on) {
				r = track(cgid, true);
				r = r ?: attach((enum variant)on_variant);
			} else {
				r = track(cgid, false);
				r = r ?: attach(V_NONE);
			}
			if (r < 0)
				return r;
			u0 = cgroup_usage_us(cg);
			if (run_wrk(port, seconds, conns, mode == 1, &x, &reqs) < 0 || !reqs) {
				fprintf(stderr, "bench-http-capture: wrk failed\n");
				return -EIO;
			}
			u1 = cgroup_usage_us(cg);
			rps[on][n[on]] = x;
			cpu_req[on][n[on]] = (double)(u1 - u0) * 1000.0 / (double)reqs;
			n[on]++;
			if (on)
				reqs_on += reqs;
		}
		attach(V_NONE);
		usleep(50000);
		prog_stats(&pns1, &pruns1);
		{
			double ra = median(rps[0], n[0]), rb = median(rps[1], n[1]);
			double ca = median(cpu_req[0], n[0]), cb = median(cpu_req[1], n[1]);

			printf("== server: nginx under wrk -t1 -c%d, %s, %d s runs, %d runs per side (A B B A, median)\n",
			       conns, mode ? "a new connection per request" : "keep-alive", seconds, n[0]);
			printf("   capture off: %.0f req/s, nginx CPU %.2f us/request\n", ra, ca / 1000);
			printf("   capture on:  %.0f req/s (%.1f %% of off), nginx CPU %.2f us/request (%+.2f us)\n",
			       rb, 100.0 * rb / ra, cb / 1000, (cb - ca) / 1000);
			printf("   exchanges captured: %llu of %llu requests sent with capture on; ring drops %llu\n",
			       (unsigned long long)(c.exchanges - ex0), (unsigned long long)reqs_on,
			       (unsigned long long)(drops() - drops0));
			/* While attached, the raw program runs at every syscall exit
			 * on the node, the sock programs at every socket send and
			 * receive: nginx's, wrk's and everybody else's. */
			if (pruns1 > pruns0 && reqs_on)
				printf("   %s: %.0f ns per run (%s on the node), "
				       "%.2f us per request sent (runs of every process included; stats on)\n",
				       on_variant == V_RAW ? "sys_exit program" : "sock programs",
				       (double)(pns1 - pns0) / (double)(pruns1 - pruns0),
				       on_variant == V_RAW ? "every syscall" : "every socket send, receive and TCP socket's end",
				       (double)(pns1 - pns0) / 1000.0 / (double)reqs_on);
		}
	}
	c.stop = true;
	pthread_join(th, NULL);
	printf("== consumer (drain, pair, event%s): %.2f us CPU per captured request over %llu\n",
	       json ? " + JSON line" : "; no JSON line, as termlined without --emit-events",
	       c.exchanges ? (double)c.cpu_ns / 1000.0 / (double)c.exchanges : 0.0,
	       (unsigned long long)c.exchanges);
	kill(ng, SIGTERM);
	waitpid(ng, NULL, 0);
	ring_buffer__free(c.rb);
	tl_http_tracker_free(c.tracker);
	tl_buf_free(&c.out);
	bench_remove_tree(dir);
	bench_remove_tree(cg);
	return 0;
}

/* The consumer's work on synthetic records, no kernel: keep-alive request
 * and response heads as nginx and wrk write them, through the pairing and
 * the event's JSON. For instruction counts under callgrind, which sees user
 * space only:
 *   valgrind --tool=callgrind bench-http-capture --consumer-only 100000 */
static int bench_consumer_only(uint64_t n, bool json, bool close_each)
{
	static const char req[] = "GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:18080\r\n"
				  "x-request-id: bench-request-0123456789\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\n"
				   "Date: Tue, 01 Dec 2026 03:00:00 GMT\r\nContent-Type: text/html\r\n"
				   "Content-Length: 42\r\nConnection: keep-alive\r\n\r\n"
				   "<html><body>termline bench</body></html>\n";
	struct tl_http_tracker_config tc = { .want = { .names = { "x-request-id" }, .n = 1 } };
	struct consumer c = { .json = json };
	uint64_t t0, t1;

	tl_buf_init(&c.out, 0);
	if (tl_http_tracker_new(&tc, on_exchange, &c, &c.tracker) < 0)
		return -ENOMEM;
	t0 = thread_cpu_ns();
	for (uint64_t i = 0; i < n; i++) {
		/* keep-alive: 16 connections in turn; --close: one each. */
		uint64_t key = close_each ? 1 + i : 1 + i % 16;

		tl_http_tracker_data(c.tracker, key, 1, 1, true, (const uint8_t *)req, sizeof(req) - 1,
				     sizeof(req) - 1, (int64_t)(i * 1000));
		tl_http_tracker_data(c.tracker, key, 1, 1, false, (const uint8_t *)resp,
				     sizeof(resp) - 1, sizeof(resp) - 1, (int64_t)(i * 1000 + 500));
		if (close_each)
			tl_http_tracker_close(c.tracker, key, (int64_t)(i * 1000 + 600));
	}
	t1 = thread_cpu_ns();
	printf("== consumer only: %llu exchanges, %.3f us CPU each (pairing, event%s%s)\n",
	       (unsigned long long)c.exchanges, (double)(t1 - t0) / 1000.0 / (double)n,
	       json ? ", JSON line" : "", close_each ? ", a connection each" : "");
	tl_http_tracker_free(c.tracker);
	tl_buf_free(&c.out);
	return c.exchanges == n ? 0 : -EIO;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-http-capture [--rounds N] [--calls N] [--seconds S] [--connections C]\n"
		"                          [--no-server] [--no-syscalls] [--json] [--bpf-stats]\n"
		"                          [--variant auto|sock|rdonly_cast|probe_read]\n"
		"       bench-http-capture --tracked-only [--rounds N] [--calls N]\n"
		"       bench-http-capture --consumer-only N [--json] [--close]\n"
		"\n"
		"What capturing HTTP on a Pod's sockets costs (bench/README.md, bench-http-capture).\n"
		"Figures, not a test. Needs root, nginx and wrk, except --consumer-only.\n"
		"\n"
		"  --rounds N         interleaved rounds per part (default 5)\n"
		"  --calls N          syscalls per run in the syscalls part (default 2000000)\n"
		"  --seconds S        length of each wrk run (default 5)\n"
		"  --connections C    wrk connections (default 16)\n"
		"  --no-server        skip nginx under wrk\n"
		"  --no-syscalls      skip the untracked syscall costs\n"
		"  --json             the consumer also writes the JSON line (--emit-events)\n"
		"  --bpf-stats        keep BPF run-time statistics on in every run\n"
		"  --variant V        capture on in the server part: auto (as termlined: sock\n"
		"                     where the kernel has the tracepoints, else rdonly_cast),\n"
		"                     sock, rdonly_cast (raw sys_exit, the fd walk through\n"
		"                     bpf_rdonly_cast) or probe_read (a probe read per hop);\n"
		"                     the last two are also the raw program of the other parts\n"
		"  --tracked-only     only the tracked loopback TCP process\n"
		"  --consumer-only N  the consumer alone on N synthetic exchanges (for callgrind)\n"
		"  --close            with --consumer-only: a connection per request\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "calls", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 's' },
		{ "connections", required_argument, NULL, 'c' },
		{ "no-server", no_argument, NULL, 'S' },
		{ "no-syscalls", no_argument, NULL, 'Y' },
		{ "consumer-only", required_argument, NULL, 'C' },
		{ "json", no_argument, NULL, 'J' },
		{ "bpf-stats", no_argument, NULL, 'B' },
		{ "tracked-only", no_argument, NULL, 'T' },
		{ "close", no_argument, NULL, 'L' },
		{ "variant", required_argument, NULL, 'W' },
		{ 0 },
	};
	uint64_t rounds = 5, calls = 2000000, seconds = 5, conns = 16, consumer_only = 0;
	bool server = true, json = false, syscalls = true, stats_all = false,
	     tracked_only = false, close_each = false, probe_reads = false;
	const char *variant = "auto";
	int o, r, stats_fd;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 'r':
			r = bench_parse_u64(optarg, 1, 16, &rounds);
			break;
		case 'n':
			r = bench_parse_u64(optarg, 1000, 1000000000, &calls);
			break;
		case 's':
			r = bench_parse_u64(optarg, 1, 600, &seconds);
			break;
		case 'c':
			r = bench_parse_u64(optarg, 1, 1000, &conns);
			break;
		case 'S':
			server = false;
			r = 0;
			break;
		case 'Y':
			syscalls = false;
			r = 0;
			break;
		case 'J':
			json = true;
			r = 0;
			break;
		case 'B':
			stats_all = true;
			r = 0;
			break;
		case 'T':
			tracked_only = true;
			r = 0;
			break;
		case 'L':
			close_each = true;
			r = 0;
			break;
		case 'C':
			r = bench_parse_u64(optarg, 1, 100000000, &consumer_only);
			break;
		case 'W':
			variant = optarg;
			r = strcmp(optarg, "auto") == 0 || strcmp(optarg, "sock") == 0 ||
					    strcmp(optarg, "rdonly_cast") == 0 || strcmp(optarg, "probe_read") == 0
				    ? 0
				    : -EINVAL;
			probe_reads = strcmp(optarg, "probe_read") == 0;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (r < 0) {
			fprintf(stderr, "bench-http-capture: bad value '%s'\n", optarg);
			return 2;
		}
	}
	if (consumer_only) {
		tl_clock_sample(&bench_clock);
		return bench_consumer_only(consumer_only, json, close_each) < 0 ? 1 : 0;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bench-http-capture: needs root\n");
		return 77;
	}
	tl_clock_sample(&bench_clock);
	skel = termline_http__open();
	if (!skel) {
		fprintf(stderr, "bench-http-capture: open: %s\n", strerror(errno));
		return 1;
	}
	/* Everything the kernel loads, as termlined falls back: the socket
	 * variant needs its tracepoints (>= 6.3), the cast variant its kfunc
	 * (>= 6.2). */
	for (int attempt = 0; attempt < 3; attempt++) {
		/* { cast, sock } */
		const bool tries[3][2] = { { !probe_reads, true }, { !probe_reads, false }, { false, false } };
		bool cast = tries[attempt][0], sock = tries[attempt][1];

		if (attempt > 0) {
			termline_http__destroy(skel);
			skel = termline_http__open();
			if (!skel)
				return 1;
		}
		raw_prog = cast ? skel->progs.http_sys_exit : skel->progs.http_sys_exit_probed;
		bpf_program__set_autoload(cast ? skel->progs.http_sys_exit_probed : skel->progs.http_sys_exit,
					  false);
		bpf_program__set_autoload(skel->progs.http_sock_recv, sock);
		bpf_program__set_autoload(skel->progs.http_sock_send, sock);
		bpf_program__set_autoload(skel->progs.http_tcp_destroy, sock);
		have_sock = sock;
		/* (termlined's: a wake-up at each half of its 4 MiB ring) */
		skel->rodata->wake_bytes = 2u << 20;
		r = termline_http__load(skel);
		if (r == 0)
			break;
	}
	if (r < 0) {
		fprintf(stderr, "bench-http-capture: load: %s\n", strerror(-r));
		return 1;
	}
	if (strcmp(variant, "sock") == 0 && !have_sock) {
		fprintf(stderr, "bench-http-capture: the sock variant does not load on this kernel\n");
		return 1;
	}
	on_variant = strcmp(variant, "sock") == 0 || (strcmp(variant, "auto") == 0 && have_sock) ? V_SOCK
											       : V_RAW;
	printf("capture on: %s\n", on_variant == V_SOCK ? "sock (http_sock_recv, http_sock_send, http_tcp_destroy)"
							: bpf_program__name(raw_prog));
	printf("raw program: %s\n", bpf_program__name(raw_prog));
	/* Program run time, counted by the kernel while this fd is open: two
	 * clock reads more per program run, so the syscall variants run
	 * without it (as a node does, kernel.bpf_stats_enabled=0) unless
	 * --bpf-stats, and the server part with it. */
	stats_fd = stats_all ? bpf_enable_stats(BPF_STATS_RUN_TIME) : -1;
	if (tracked_only)
		return bench_tracked((int)rounds, calls / 10) < 0 ? 1 : 0;
	r = syscalls ? bench_syscalls((int)rounds, calls) : 0;
	if (r == 0 && syscalls)
		r = bench_tracked((int)rounds, calls / 10);
	if (stats_fd < 0)
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0)
		fprintf(stderr, "bench-http-capture: no BPF run-time statistics: %s\n", strerror(errno));
	if (r == 0 && server)
		r = bench_server((int)rounds, (int)seconds, (int)conns, json);
	detach_all();
	termline_http__destroy(skel);
	if (stats_fd >= 0)
		close(stats_fd);
	return r < 0 ? 1 : 0;
}
