/* SPDX-License-Identifier: Apache-2.0 */
/* bench-kernel-events: what recording kernel events costs, end to end.
 *
 * Loads the BPF objects through the real loader (tl_bpf_new) on a tl_loop,
 * makes one kubelet-style container cgroup and runs worker processes in it
 * that generate kernel events as fast as they can: listen()+close() on a
 * fresh socket (socket.listen + socket.listen_closed), fork()+exit
 * (process.exit) or kill(self, SIGUSR1) to a handler (process.signal +
 * process.signal_delivered). Phases of equal length:
 *   no-bpf     nothing loaded: the workers' bare cost per operation;
 *   untracked  programs attached, the cgroup not tracked: the filter every
 *              other container on the node pays;
 *   tracked    the cgroup tracked: every operation reserves, fills and
 *              submits records, the agent drains and decodes them.
 * untracked and tracked alternate for --rounds rounds, so drift of the
 * machine (other load, frequency) hits both alike.
 * Per phase: operations/s and worker CPU per operation (the BPF programs run
 * in the workers' context, so their cost is in the workers' CPU time),
 * events/s received, ring-buffer drops, and the consumer's CPU (this
 * process: the loop, record decoding, the chosen sink).
 * Figures only: nothing here asserts on timing. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bench-util.h"
#include "bpf-loader.h"
#include "cgroup-map.h"
#include "clock.h"
#include "loop.h"
#include "metrics.h"
#include "timeline.h"
#include "macro.h"

#define MAX_WORKERS 64
#define OPS_PER_CLOCK_READ 16
#define POD_UID "7d1e0b52-5c3a-4f68-9b2e-0a4c6d8e1f37"
#define POD_UID_SYSTEMD "7d1e0b52_5c3a_4f68_9b2e_0a4c6d8e1f37"
#define CONTAINER_ID "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0"

enum mode { MODE_LISTEN, MODE_FORK, MODE_SIGNAL };
enum sink { SINK_COUNT, SINK_ATTRIBUTE, SINK_TIMELINE };

static const char *const mode_names[] = { "listen", "fork", "signal" };
static const char *const sink_names[] = { "count", "attribute", "timeline" };
/* Kernel events each operation makes in a tracked cgroup. */
static const unsigned mode_events[] = { 2, 1, 2 };

/* Event types counted separately in the report; the rest is "other". */
static const char *const kind_names[] = {
	"socket.listen", "socket.listen_closed", "process.exit", "process.signal",
	"process.signal_delivered",
};
#define N_KINDS (sizeof(kind_names) / sizeof(kind_names[0]))
#define MAX_ROUNDS 20

struct opts {
	uint64_t duration_s;
	uint64_t workers;
	uint64_t ring_bytes;
	uint64_t rounds;
	enum mode mode;
	enum sink sink;
	bool classic;
};

struct worker_result {
	uint64_t ops;
	uint64_t cpu_ns;  /* self + reaped children */
	uint64_t wall_ns;
	int err;          /* errno of the first failure, 0 when none */
};

struct phase_result {
	const char *name;
	bool ran;
	uint64_t ops, worker_cpu_ns, wall_ns;
	uint64_t events, attributed, drops;
	uint64_t consumer_cpu_ns;
	uint64_t consumer_wakeups; /* voluntary context switches: epoll waits that slept */
	uint64_t by_kind[N_KINDS + 1]; /* kind_names, then other */
};

struct bench {
	struct opts o;
	struct tl_loop *loop;
	struct tl_bpf *bpf;
	struct tl_cgroup_map *map;
	struct tl_timelines *timelines;
	int sigfd;
	bool interrupted;
	char cg_base[PATH_MAX];  /* our top directory below the cgroup2 mount */
	char cg_leaf[PATH_MAX];
	uint64_t leaf_id;
	char state_dir[PATH_MAX];
	/* sink counters of the running phase */
	bool counting;
	struct phase_result *cur;
	/* workers of the running phase */
	pid_t pids[MAX_WORKERS];
	int res_fds[MAX_WORKERS];
	struct worker_result results[MAX_WORKERS];
	bool done[MAX_WORKERS];
	unsigned n_done;
};

/* ---- workers ---- */

static int worker_op_listen(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* listen() on an unbound socket binds an ephemeral port: LISTEN, then
	 * close() takes it LISTEN -> CLOSE. No TIME_WAIT for a listener. */
	if (listen(fd, 1) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	close(fd);
	return 0;
}

static void on_usr1(int sig _unused_)
{
}

/* A handled SIGUSR1: signal_generate (process.signal) and signal_deliver
 * to a handler (process.signal_delivered), about the cheapest pair of
 * recorded kernel events a process can make. */
static int worker_op_signal(void)
{
	if (kill(getpid(), SIGUSR1) < 0)
		return -errno;
	return 0;
}

static int worker_op_fork(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(0);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return 0;
}

static uint64_t rusage_ns(int who)
{
	struct rusage ru;

	if (getrusage(who, &ru) < 0)
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

static void write_all(int fd, const void *buf, size_t len)
{
	/* One write of at most PIPE_BUF bytes is atomic; a failure leaves the
	 * parent with EOF, which it reports. */
	if (write(fd, buf, len) != (ssize_t)len)
		_exit(3);
}

/* Runs in the forked worker: joins the cgroup, says ready, waits for the
 * go (EOF on go_fd), loops for the duration, reports. Never returns. */
static void worker_main(const struct bench *b, int go_fd, int res_fd)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct worker_result res = { 0 };
	char procs[PATH_MAX + 16], c;
	uint64_t t0, deadline, cpu0;
	sigset_t none;
	int fd, r = 0;

	sigemptyset(&none);
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		_exit(7);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
		_exit(4);
	if (bench_pathf(procs, sizeof(procs), "%s/cgroup.procs", b->cg_leaf) < 0)
		_exit(5);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0\n", 2) != 2) {
		c = 'E';
		write_all(res_fd, &c, 1);
		_exit(6);
	}
	close(fd);
	c = 'R';
	write_all(res_fd, &c, 1);
	while (read(go_fd, &c, 1) > 0)
		;
	cpu0 = rusage_ns(RUSAGE_SELF) + rusage_ns(RUSAGE_CHILDREN);
	t0 = bench_now_ns();
	deadline = t0 + b->o.duration_s * 1000000000ull;
	while (!r) {
		for (int k = 0; k < OPS_PER_CLOCK_READ && !r; k++) {
			switch (b->o.mode) {
			case MODE_LISTEN: r = worker_op_listen(); break;
			case MODE_FORK: r = worker_op_fork(); break;
			case MODE_SIGNAL: r = worker_op_signal(); break;
			}
			if (!r)
				res.ops++;
		}
		if (bench_now_ns() >= deadline)
			break;
	}
	res.wall_ns = bench_now_ns() - t0;
	res.cpu_ns = rusage_ns(RUSAGE_SELF) + rusage_ns(RUSAGE_CHILDREN) - cpu0;
	res.err = -r;
	write_all(res_fd, &res, sizeof(res));
	_exit(0);
}

/* ---- sink ---- */

static void sink_emit(void *userdata, struct tl_event *ev)
{
	struct bench *b = userdata;
	struct phase_result *p = b->cur;

	if (b->counting && p) {
		size_t k = 0;

		while (k < N_KINDS && strcmp(ev->type, kind_names[k]) != 0)
			k++;
		p->events++;
		p->by_kind[k]++;
	}
	if (b->map) {
		/* As termlined attributes: cgroup id -> pod UID + container id. */
		const struct tl_cgroup_info *info = tl_cgroup_map_lookup(b->map, ev->cgroup_id);

		if (info && info->parsed.pod_uid[0]) {
			snprintf(ev->pod_uid, sizeof(ev->pod_uid), "%s", info->parsed.pod_uid);
			snprintf(ev->container_id, sizeof(ev->container_id), "%s",
				 info->parsed.container_id);
			if (b->counting && p && strcmp(ev->pod_uid, POD_UID) == 0)
				p->attributed++;
		}
	}
	if (b->timelines && ev->pod_uid[0])
		tl_timelines_add(b->timelines, ev); /* failures show as missing events */
	tl_event_clear(ev);
}

/* ---- loop callbacks ---- */

static int on_signal(struct tl_loop *loop _unused_, int fd, uint32_t events _unused_,
		     void *userdata)
{
	struct bench *b = userdata;
	struct signalfd_siginfo si;

	while (read(fd, &si, sizeof(si)) == sizeof(si))
		b->interrupted = true;
	return 0;
}

static int on_result(struct tl_loop *loop, int fd, uint32_t events _unused_, void *userdata)
{
	struct bench *b = userdata;
	unsigned i;
	ssize_t n;

	for (i = 0; i < b->o.workers; i++)
		if (b->res_fds[i] == fd)
			break;
	if (i == b->o.workers || b->done[i])
		return 0;
	n = read(fd, &b->results[i], sizeof(b->results[i]));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n != (ssize_t)sizeof(b->results[i]))
		b->results[i].err = n < 0 ? errno : EPIPE; /* died without reporting */
	b->done[i] = true;
	b->n_done++;
	tl_loop_del_io(loop, fd);
	return 0;
}

/* ---- phases ---- */

static void reap_workers(struct bench *b, bool kill_them)
{
	for (unsigned i = 0; i < b->o.workers; i++) {
		if (b->pids[i] <= 0)
			continue;
		if (kill_them)
			kill(b->pids[i], SIGKILL);
		while (waitpid(b->pids[i], NULL, 0) < 0 && errno == EINTR)
			;
		b->pids[i] = 0;
	}
	for (unsigned i = 0; i < b->o.workers; i++) {
		if (b->res_fds[i] < 0)
			continue;
		if (!b->done[i])
			tl_loop_del_io(b->loop, b->res_fds[i]);
		close(b->res_fds[i]);
		b->res_fds[i] = -1;
	}
}

static uint64_t voluntary_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (uint64_t)ru.ru_nvcsw;
}

/* Per-program run time (the producer's cost per hook), accumulated over
 * the tracked and the untracked phases apart. */
#define MAX_PROGS 32
static struct tl_bpf_prog_stat prog_before[MAX_PROGS];
static struct {
	char name[64];
	uint64_t ns[2], cnt[2]; /* [0] untracked, [1] tracked */
} prog_acc[MAX_PROGS];
static int n_progs;

static void prog_stats_mark(struct bench *b)
{
	if (b->bpf)
		n_progs = tl_bpf_prog_stats(b->bpf, prog_before, MAX_PROGS);
}

static void prog_stats_add(struct bench *b, bool tracked)
{
	struct tl_bpf_prog_stat now[MAX_PROGS];
	int n;

	if (!b->bpf || n_progs <= 0)
		return;
	n = tl_bpf_prog_stats(b->bpf, now, MAX_PROGS);
	for (int i = 0; i < n && i < n_progs; i++) {
		memcpy(prog_acc[i].name, now[i].name, sizeof(prog_acc[i].name));
		prog_acc[i].ns[tracked] += now[i].run_ns - prog_before[i].run_ns;
		prog_acc[i].cnt[tracked] += now[i].run_cnt - prog_before[i].run_cnt;
	}
}

static void print_prog_stats(void)
{
	printf("\nproducer per hook (kernel BPF run-time statistics; ns per program run):\n");
	printf("  %-28s %12s %10s %12s %10s\n", "program", "runs tracked", "ns/run", "untracked",
	       "ns/run");
	for (int i = 0; i < n_progs; i++) {
		if (!prog_acc[i].cnt[0] && !prog_acc[i].cnt[1])
			continue;
		printf("  %-28s %12llu %10.0f %12llu %10.0f\n", prog_acc[i].name,
		       (unsigned long long)prog_acc[i].cnt[1],
		       prog_acc[i].cnt[1] ? (double)prog_acc[i].ns[1] / (double)prog_acc[i].cnt[1] : 0,
		       (unsigned long long)prog_acc[i].cnt[0],
		       prog_acc[i].cnt[0] ? (double)prog_acc[i].ns[0] / (double)prog_acc[i].cnt[0] : 0);
	}
}

static int run_phase(struct bench *b, struct phase_result *p)
{
	int go[2] = { -1, -1 };
	uint64_t t0, cpu0, csw0, drops0 = 0;
	unsigned started = 0;
	int r = 0;

	memset(b->results, 0, sizeof(b->results));
	memset(b->done, 0, sizeof(b->done));
	b->n_done = 0;
	for (unsigned i = 0; i < MAX_WORKERS; i++)
		b->res_fds[i] = -1;
	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	for (; started < b->o.workers; started++) {
		int res[2];
		pid_t pid;

		if (pipe2(res, O_CLOEXEC) < 0) {
			r = -errno;
			goto out;
		}
		pid = fork();
		if (pid < 0) {
			r = -errno;
			close(res[0]);
			close(res[1]);
			goto out;
		}
		if (pid == 0) {
			close(go[1]);
			close(res[0]);
			worker_main(b, go[0], res[1]);
		}
		close(res[1]);
		b->pids[started] = pid;
		b->res_fds[started] = res[0];
	}
	for (unsigned i = 0; i < b->o.workers; i++) {
		char c = 0;

		if (read(b->res_fds[i], &c, 1) != 1 || c != 'R') {
			fprintf(stderr, "bench-kernel-events: worker %u could not join %s\n", i,
				b->cg_leaf);
			r = -EIO;
			goto out;
		}
		r = fcntl(b->res_fds[i], F_SETFL, O_NONBLOCK) < 0 ? -errno : 0;
		r = r ?: tl_loop_add_io(b->loop, b->res_fds[i], EPOLLIN, on_result, b);
		if (r < 0)
			goto out;
	}

	/* Start from an empty ring so the phase counts only its own records. */
	if (b->bpf) {
		tl_bpf_drain(b->bpf);
		drops0 = tl_bpf_dropped_total(b->bpf);
	}
	memset(p->by_kind, 0, sizeof(p->by_kind));
	p->events = p->attributed = 0;
	b->cur = p;
	b->counting = true;
	prog_stats_mark(b);
	cpu0 = bench_cpu_ns();
	csw0 = voluntary_switches();
	t0 = bench_now_ns();
	close(go[1]);
	go[1] = -1;

	while (b->n_done < b->o.workers && !b->interrupted) {
		r = tl_loop_run_once(b->loop, 100);
		if (r < 0 && r != -EINTR)
			goto out;
		r = 0;
	}
	if (b->interrupted) {
		r = -EINTR;
		goto out;
	}
	if (b->bpf) {
		tl_bpf_drain(b->bpf);
		p->drops = tl_bpf_dropped_total(b->bpf) - drops0;
	}
	p->wall_ns = bench_now_ns() - t0;
	p->consumer_cpu_ns = bench_cpu_ns() - cpu0;
	prog_stats_add(b, strcmp(p->name, "tracked") == 0);
	p->consumer_wakeups = voluntary_switches() - csw0;
	b->counting = false;
	p->ops = p->worker_cpu_ns = 0;
	for (unsigned i = 0; i < b->o.workers; i++) {
		if (b->results[i].err) {
			fprintf(stderr, "bench-kernel-events: worker %u: %s\n", i,
				strerror(b->results[i].err));
			r = -b->results[i].err;
		}
		p->ops += b->results[i].ops;
		p->worker_cpu_ns += b->results[i].cpu_ns;
	}
	p->ran = r == 0;
out:
	b->counting = false;
	b->cur = NULL;
	if (go[0] >= 0)
		close(go[0]);
	if (go[1] >= 0)
		close(go[1]);
	reap_workers(b, r < 0);
	return r;
}

/* ---- setup and cleanup ---- */

static int make_cgroups(struct bench *b)
{
	static const char *const levels[] = {
		"kubepods.slice",
		"kubepods-burstable.slice",
		"kubepods-burstable-pod" POD_UID_SYSTEMD ".slice",
		"cri-containerd-" CONTAINER_ID ".scope",
	};
	char mount[PATH_MAX], path[PATH_MAX];
	struct stat st;
	int r;

	r = tl_cgroup_find_mount("/proc/self/mountinfo", mount, sizeof(mount));
	if (r < 0) {
		fprintf(stderr, "bench-kernel-events: no cgroup2 mount: %s\n", strerror(-r));
		return r;
	}
	r = bench_pathf(b->cg_base, sizeof(b->cg_base), "%s/termline-bench-%d", mount, (int)getpid());
	if (r < 0)
		return r;
	if (mkdir(b->cg_base, 0755) < 0) {
		r = -errno;
		fprintf(stderr, "bench-kernel-events: mkdir %s: %s\n", b->cg_base, strerror(-r));
		b->cg_base[0] = '\0';
		return r;
	}
	snprintf(path, sizeof(path), "%s", b->cg_base);
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		char next[PATH_MAX];

		r = bench_pathf(next, sizeof(next), "%s/%s", path, levels[i]);
		if (r < 0)
			return r;
		if (mkdir(next, 0755) < 0) {
			r = -errno;
			fprintf(stderr, "bench-kernel-events: mkdir %s: %s\n", next, strerror(-r));
			return r;
		}
		memcpy(path, next, sizeof(path));
	}
	if (stat(path, &st) < 0)
		return -errno;
	memcpy(b->cg_leaf, path, sizeof(b->cg_leaf));
	b->leaf_id = (uint64_t)st.st_ino;
	return 0;
}

/* BOOTTIME -> UTC for the records, sampled once (a run lasts seconds). */
static struct tl_clock bench_clock;

static int setup_bpf(struct bench *b)
{
	struct tl_bpf_config cfg = { .ringbuf_bytes = (uint32_t)b->o.ring_bytes,
				     .force_classic = b->o.classic, .clock = &bench_clock };
	struct tl_emitter em = { .emit = sink_emit, .userdata = b };
	char err[512] = "";
	int r;

	r = tl_bpf_new(&cfg, &b->bpf, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "bench-kernel-events: %s\n", err[0] ? err : strerror(-r));
		return r;
	}
	r = tl_bpf_attach_loop(b->bpf, b->loop, &em);
	if (r < 0) {
		fprintf(stderr, "bench-kernel-events: ring buffer on the loop: %s\n", strerror(-r));
		return r;
	}
	if (b->o.sink >= SINK_ATTRIBUTE) {
		/* The map walks only our own tree: the leaf parses like a
		 * kubelet's below any prefix. */
		r = tl_cgroup_map_new(b->cg_base, NULL, &b->map);
		r = r ?: tl_cgroup_map_attach(b->map, b->loop);
		if (r < 0) {
			fprintf(stderr, "bench-kernel-events: cgroup map: %s\n", strerror(-r));
			return r;
		}
	}
	if (b->o.sink == SINK_TIMELINE) {
		struct tl_timelines_config tc = { .linger_s = 30 };

		r = bench_pathf(b->state_dir, sizeof(b->state_dir), "%s/termline-bench-state-XXXXXX",
				getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (r < 0)
			return r;
		if (!mkdtemp(b->state_dir)) {
			r = -errno;
			b->state_dir[0] = '\0';
			return r;
		}
		tc.state_dir = b->state_dir;
		r = tl_timelines_new(&tc, b->loop, &b->timelines);
		if (r < 0) {
			fprintf(stderr, "bench-kernel-events: timelines: %s\n", strerror(-r));
			return r;
		}
	}
	return 0;
}

static void cleanup(struct bench *b)
{
	int r;

	if (b->bpf && b->leaf_id)
		tl_bpf_untrack_cgroup(b->bpf, b->leaf_id);
	tl_timelines_free(b->timelines);
	b->timelines = NULL;
	tl_bpf_free(b->bpf);
	b->bpf = NULL;
	tl_cgroup_map_free(b->map);
	b->map = NULL;
	if (b->state_dir[0]) {
		r = bench_remove_tree(b->state_dir);
		if (r < 0)
			fprintf(stderr, "bench-kernel-events: could not remove %s: %s\n",
				b->state_dir, strerror(-r));
	}
	if (b->cg_base[0]) {
		r = bench_remove_tree(b->cg_base);
		if (r < 0)
			fprintf(stderr, "bench-kernel-events: could not remove %s: %s\n",
				b->cg_base, strerror(-r));
	}
	if (b->sigfd >= 0) {
		tl_loop_del_io(b->loop, b->sigfd);
		close(b->sigfd);
	}
	tl_loop_free(b->loop);
}

/* ---- report ---- */

static double div0(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static void print_row(const char *name, const struct phase_result *p)
{
	double secs = (double)p->wall_ns / 1e9;

	printf("%-14s %9.0f %10.0f %10.0f %6.2f %8llu %9.1f %10.0f %8.0f\n", name,
	       div0((double)p->ops, secs), div0((double)p->worker_cpu_ns, (double)p->ops),
	       div0((double)p->events, secs), div0((double)p->events, (double)p->ops),
	       (unsigned long long)p->drops,
	       div0((double)p->consumer_cpu_ns * 100.0, (double)p->wall_ns),
	       div0((double)p->consumer_cpu_ns, (double)p->events),
	       div0((double)p->consumer_wakeups, secs));
}

static void sum_into(struct phase_result *sum, const struct phase_result *p)
{
	sum->ops += p->ops;
	sum->worker_cpu_ns += p->worker_cpu_ns;
	sum->wall_ns += p->wall_ns;
	sum->events += p->events;
	sum->attributed += p->attributed;
	sum->drops += p->drops;
	sum->consumer_cpu_ns += p->consumer_cpu_ns;
	sum->consumer_wakeups += p->consumer_wakeups;
	for (size_t k = 0; k <= N_KINDS; k++)
		sum->by_kind[k] += p->by_kind[k];
	sum->ran = true;
}

/* ph[0] is no-bpf, then untracked and tracked alternate. */
static void print_report(const struct bench *b, const struct phase_result *ph, size_t n)
{
	struct phase_result untracked = { .name = "untracked" }, tracked = { .name = "tracked" };
	unsigned per_op = mode_events[b->o.mode];
	double ns_base, ns_untracked, ns_tracked;

	printf("\n%-14s %9s %10s %10s %6s %8s %9s %10s %8s\n", "phase", "ops/s", "cpu ns/op",
	       "events/s", "ev/op", "drops", "cons cpu%", "cons ns/ev", "wakeup/s");
	for (size_t i = 0; i < n; i++) {
		char name[32];

		if (!ph[i].ran)
			continue;
		if (i == 0)
			snprintf(name, sizeof(name), "%s", ph[i].name);
		else
			snprintf(name, sizeof(name), "%s #%zu", ph[i].name, (i + 1) / 2);
		print_row(name, &ph[i]);
		if (i > 0)
			sum_into(i % 2 ? &untracked : &tracked, &ph[i]);
	}
	if (!ph[0].ran || !untracked.ran || !tracked.ran)
		return;
	printf("%-14s\n", "all rounds:");
	print_row("untracked", &untracked);
	print_row("tracked", &tracked);

	printf("\ntracked: %llu events received:", (unsigned long long)tracked.events);
	for (size_t k = 0; k <= N_KINDS; k++)
		if (tracked.by_kind[k])
			printf(" %s %llu", k < N_KINDS ? kind_names[k] : "other",
			       (unsigned long long)tracked.by_kind[k]);
	printf("\n");
	if (b->o.sink >= SINK_ATTRIBUTE)
		printf("tracked: %llu of them attributed to pod %s by the cgroup map\n",
		       (unsigned long long)tracked.attributed, POD_UID);
	ns_base = div0((double)ph[0].worker_cpu_ns, (double)ph[0].ops);
	ns_untracked = div0((double)untracked.worker_cpu_ns, (double)untracked.ops);
	ns_tracked = div0((double)tracked.worker_cpu_ns, (double)tracked.ops);
	printf("producer, programs attached but cgroup untracked: %+.0f ns per %s operation\n",
	       ns_untracked - ns_base, mode_names[b->o.mode]);
	printf("producer, tracked vs. untracked: %+.0f ns per operation = %+.0f ns per event "
	       "(%u events per operation)\n",
	       ns_tracked - ns_untracked, (ns_tracked - ns_untracked) / per_op, per_op);
	printf("consumer (sink %s): %.0f ns CPU per event, %.1f%% of one CPU at %.0f events/s\n",
	       sink_names[b->o.sink], div0((double)tracked.consumer_cpu_ns, (double)tracked.events),
	       div0((double)tracked.consumer_cpu_ns * 100.0, (double)tracked.wall_ns),
	       div0((double)tracked.events * 1e9, (double)tracked.wall_ns));
	printf("ring-buffer drops while tracked: %llu\n", (unsigned long long)tracked.drops);
	if (tracked.ops * per_op > tracked.events + tracked.drops)
		printf("note: %llu events fewer than operations x %u\n",
		       (unsigned long long)(tracked.ops * per_op - tracked.events - tracked.drops),
		       per_op);
}

/* ---- options ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-kernel-events [--duration S] [--workers N] [--ring-bytes B]\n"
		"                           [--rounds N] [--mode listen|fork|signal]\n"
		"                           [--sink count|attribute|timeline] [--classic] [--help]\n"
		"\n"
		"Runs N worker processes in a kubelet-style container cgroup generating kernel\n"
		"events: with no BPF, then with the programs attached and the cgroup untracked\n"
		"and tracked in turn, and prints what each costs. Needs root. Figures, not a test.\n"
		"\n"
		"  --duration S    seconds per phase (default 5)\n"
		"  --workers N     worker processes (default 2)\n"
		"  --ring-bytes B  ring buffer size (default 0: the loader's 4 MiB)\n"
		"  --rounds N      untracked/tracked pairs of phases (default 2)\n"
		"  --mode M        listen: socket+listen+close, 2 events per operation (default)\n"
		"                  fork: fork+exit+wait, 1 event (process.exit) per operation\n"
		"                  signal: kill(self, SIGUSR1) to a handler, 2 events per operation\n"
		"  --sink S        what the consumer does per event: count (decode only),\n"
		"                  attribute (cgroup map lookup, as termlined; default), or\n"
		"                  timeline (attribute, then append to a timeline in a temp dir)\n"
		"  --classic       classic tracepoints instead of tp_btf\n");
}

static int parse_choice(const char *s, const char *const *names, size_t n, unsigned *ret)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(s, names[i]) == 0) {
			*ret = (unsigned)i;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "duration", required_argument, NULL, 'd' },
		{ "workers", required_argument, NULL, 'w' },
		{ "ring-bytes", required_argument, NULL, 'r' },
		{ "rounds", required_argument, NULL, 'n' },
		{ "mode", required_argument, NULL, 'm' },
		{ "sink", required_argument, NULL, 's' },
		{ "classic", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, idx = 0;

	while ((c = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
		unsigned choice = 0;
		int r = 0;

		switch (c) {
		case 'd': r = bench_parse_u64(optarg, 1, 3600, &o->duration_s); break;
		case 'w': r = bench_parse_u64(optarg, 1, MAX_WORKERS, &o->workers); break;
		case 'r': r = bench_parse_u64(optarg, 0, 1u << 30, &o->ring_bytes); break;
		case 'n': r = bench_parse_u64(optarg, 1, MAX_ROUNDS, &o->rounds); break;
		case 'm':
			r = parse_choice(optarg, mode_names, 3, &choice);
			o->mode = (enum mode)choice;
			break;
		case 's':
			r = parse_choice(optarg, sink_names, 3, &choice);
			o->sink = (enum sink)choice;
			break;
		case 'c': o->classic = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
		if (r < 0) {
			fprintf(stderr, "bench-kernel-events: bad value for --%s: %s\n",
				longopts[idx].name, optarg);
			return r;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench-kernel-events: unexpected argument %s\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench b = { .o = { .duration_s = 5, .workers = 2, .rounds = 2,
				  .mode = MODE_LISTEN, .sink = SINK_ATTRIBUTE },
			   .sigfd = -1 };
	struct phase_result ph[1 + 2 * MAX_ROUNDS] = { { .name = "no-bpf" } };
	size_t n_phases;
	const char *ci = getenv("CI");
	sigset_t mask;
	int r, status = 1, stats_fd = -1;

	if (parse_opts(argc, argv, &b.o) < 0)
		return 2;
	n_phases = 1 + 2 * b.o.rounds;
	for (size_t i = 1; i < n_phases; i++)
		ph[i].name = i % 2 ? "untracked" : "tracked";
	if (geteuid() != 0) {
		fprintf(stderr, "bench-kernel-events: needs root (BPF, cgroups)\n");
		return ci && strcmp(ci, "true") == 0 ? 1 : 77;
	}
	/* SIGINT/SIGTERM arrive on the loop, so every exit path cleans up; the
	 * workers unblock them again and die with the process group. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return 1;
	b.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	r = b.sigfd < 0 ? -errno : 0;
	r = r ?: tl_clock_sample(&bench_clock);
	r = r ?: tl_loop_new(&b.loop);
	r = r ?: tl_loop_add_io(b.loop, b.sigfd, EPOLLIN, on_signal, &b);
	if (r < 0) {
		fprintf(stderr, "bench-kernel-events: setup: %s\n", strerror(-r));
		goto out;
	}
	r = make_cgroups(&b);
	if (r < 0)
		goto out;
	printf("bench-kernel-events: %llu workers x %llu s per phase, %llu rounds, mode %s, sink %s,"
	       " ring %s, %ld CPUs\ncgroup %s (id %llu)\n",
	       (unsigned long long)b.o.workers, (unsigned long long)b.o.duration_s,
	       (unsigned long long)b.o.rounds,
	       mode_names[b.o.mode], sink_names[b.o.sink],
	       b.o.ring_bytes ? "as given" : "default 4 MiB", sysconf(_SC_NPROCESSORS_ONLN),
	       b.cg_leaf, (unsigned long long)b.leaf_id);
	fflush(stdout);

	r = run_phase(&b, &ph[0]);
	if (r < 0)
		goto out;
	r = setup_bpf(&b);
	if (r < 0)
		goto out;
	/* Run-time statistics while this fd is open (the sysctl stays as it
	 * was); without them the per-hook table stays empty. */
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0)
		fprintf(stderr, "bench-kernel-events: no BPF run-time statistics: %s\n",
			strerror(errno));
	printf("probes:");
	for (const char *const *p = tl_bpf_probe_names(b.bpf); *p; p++)
		printf(" %s", *p);
	printf("\n");
	fflush(stdout);
	for (size_t i = 1; i < n_phases; i++) {
		bool track = i % 2 == 0;

		r = track ? tl_bpf_track_cgroup(b.bpf, b.leaf_id) :
			    i > 1 ? tl_bpf_untrack_cgroup(b.bpf, b.leaf_id) : 0;
		if (r < 0) {
			fprintf(stderr, "bench-kernel-events: %s cgroup: %s\n",
				track ? "track" : "untrack", strerror(-r));
			goto out;
		}
		tl_loop_run_once(b.loop, 0);
		r = b.interrupted ? -EINTR : run_phase(&b, &ph[i]);
		if (r < 0)
			goto out;
	}
	print_report(&b, ph, n_phases);
	print_prog_stats();
	status = 0;
out:
	if (r == -EINTR || b.interrupted)
		fprintf(stderr, "bench-kernel-events: interrupted, cleaning up\n");
	if (stats_fd >= 0)
		close(stats_fd);
	cleanup(&b);
	return status;
}
