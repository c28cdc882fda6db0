/* SPDX-License-Identifier: Apache-2.0 */
/* bench-pod-events: one simulated container's kernel events, for
 * bench/bench-api.py's memory-events mode (bench/README.md, "API").
 *
 *   bench-pod-events --cgroup DIR --events N [--rate EVENTS_PER_S]
 *
 * Joins the cgroup DIR (a container's leaf that termlined maps to a Pod),
 * then makes about N events that termlined records with its default
 * settings, in a mix closer to a Pod's than one kind alone:
 *   75 %  a handled SIGUSR1, SIGUSR2 or SIGHUP to itself (process.signal +
 *         process.signal_delivered); never SIGTERM or SIGKILL, which start
 *         a Pod's termination budget (docs/timeline-format.md);
 *   20 %  listen() and close() of a fresh loopback socket (socket.listen +
 *         socket.listen_closed);
 *  4.8 %  vfork() and _exit() (process.exit);
 *  0.2 %  vfork() and exec of /bin/true (process.exec + process.exit):
 *         an exec cost 4-7 ms of CPU on the shared VM measured here.
 * Its own exit adds one process.exit. With --rate it paces itself (the
 * agent's ring buffer is 4 MiB; bursts beyond what the agent drains are
 * dropped and counted in termline_ringbuf_dropped_total).
 * Prints one JSON line: the operations done and the events they make. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "macro.h"

#define EVENTS_MAX 10000000ull
#define RATE_MAX 100000000ull
#define PACE_EVERY 64 /* operations between two looks at the clock */

static const int signals[] = { SIGUSR1, SIGUSR2, SIGHUP };
#define N_SIGNALS (sizeof(signals) / sizeof(signals[0]))

static void on_signal(int sig _unused_)
{
}

static int join_cgroup(const char *dir)
{
	char procs[4096];
	int fd, r;

	r = bench_pathf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	if (r < 0)
		return r;
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write(fd, "0\n", 2) == 2 ? 0 : -errno;
	close(fd);
	return r;
}

static int op_signal(uint64_t i)
{
	return kill(getpid(), signals[i % N_SIGNALS]) < 0 ? -errno : 0;
}

static int op_listen(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd, r = 0;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* One child that only exits (or execs /bin/true). vfork: a fork() copying
 * the page tables cost 2.4 ms of CPU per child on the shared VM these
 * figures come from (vfork: 35-55 us). The child never returns from these,
 * and they have no state a vfork child could clobber. */
static __attribute__((noinline)) pid_t spawn_exit(void)
{
	pid_t pid = vfork();

	if (pid == 0)
		_exit(0);
	return pid < 0 ? -errno : pid;
}

static __attribute__((noinline)) pid_t spawn_true(void)
{
	pid_t pid = vfork();

	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	return pid < 0 ? -errno : pid;
}

/* n children, then reaped together. */
static int op_forks(unsigned n, int exec_true)
{
	unsigned started = 0;
	int status, r = 0;

	for (; started < n; started++) {
		pid_t pid = exec_true ? spawn_true() : spawn_exit();

		if (pid < 0) {
			r = pid;
			break;
		}
	}
	for (unsigned i = 0; i < started; i++) {
		if (wait(&status) < 0)
			return -errno;
		if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && !r)
			r = -ECHILD;
	}
	return r;
}

static void pace(uint64_t t0, uint64_t events, uint64_t rate)
{
	uint64_t due = t0 + events * 1000000000ull / rate, now = bench_now_ns();
	struct timespec ts;

	if (due <= now)
		return;
	ts.tv_sec = (time_t)((due - now) / 1000000000ull);
	ts.tv_nsec = (long)((due - now) % 1000000000ull);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static uint64_t signals_sent;

static int run_signals(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int r = op_signal(signals_sent++);

		if (r < 0)
			return r;
	}
	return 0;
}

static int run_listens(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int r = op_listen();

		if (r < 0)
			return r;
	}
	return 0;
}

static int run_forks(unsigned n)
{
	return op_forks(n, 0);
}

static int run_execs(unsigned n)
{
	return op_forks(n, 1);
}

/* The mix: share of the events in per mille, events per operation, and
 * operations per step (children are reaped in batches, see op_forks). */
enum { K_SIGNAL, K_LISTEN, K_FORK, K_EXEC, N_KINDS };
static struct kind {
	unsigned permille, events, batch;
	int (*run)(unsigned n);
	uint64_t want, done;
} kinds[N_KINDS] = {
	[K_SIGNAL] = { 750, 2, 1, run_signals, 0, 0 },
	[K_LISTEN] = { 200, 2, 1, run_listens, 0, 0 },
	[K_FORK] = { 48, 1, 16, run_forks, 0, 0 },
	[K_EXEC] = { 2, 2, 4, run_execs, 0, 0 },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: bench-pod-events --cgroup DIR --events N [--rate EVENTS_PER_S]\n"
		   "Joins the cgroup DIR and makes about N kernel events termlined records\n"
		   "(75 %% handled signals, 20 %% listen+close, 4.8 %% fork+exit, 0.2 %% fork+exec).\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cgroup", required_argument, NULL, 'c' },
		{ "events", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t events = 0, rate = 0, done = 0, ops = 0, t0;
	const char *cgroup = NULL;
	int c, r = 0;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': cgroup = optarg; break;
		case 'n':
			if (bench_parse_u64(optarg, 2, EVENTS_MAX, &events) < 0)
				goto bad;
			break;
		case 'r':
			if (bench_parse_u64(optarg, 0, RATE_MAX, &rate) < 0)
				goto bad;
			break;
		case 'h': usage(stdout); return 0;
		default: goto bad;
		}
	}
	if (!cgroup || !events || optind != argc)
		goto bad;

	/* Operations of each kind from its share of the events; the fork+exit
	 * kind takes the rounding, and the last event is this process's exit. */
	for (size_t k = 0; k < N_KINDS; k++)
		kinds[k].want = events * kinds[k].permille / 1000 / kinds[k].events;
	kinds[K_FORK].want = 0;
	uint64_t rest = events - 1;
	for (size_t k = 0; k < N_KINDS; k++)
		rest -= kinds[k].want * kinds[k].events;
	kinds[K_FORK].want = rest;

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_SIGNALS; i++)
		if (sigaction(signals[i], &sa, NULL) < 0) {
			fprintf(stderr, "bench-pod-events: sigaction: %s\n", strerror(errno));
			return 1;
		}
	r = join_cgroup(cgroup);
	if (r < 0) {
		fprintf(stderr, "bench-pod-events: joining %s: %s\n", cgroup, strerror(-r));
		return 1;
	}

	/* Interleaved, so every part of the run has the same mix: the kind
	 * furthest behind its share of the events goes next. */
	t0 = bench_now_ns();
	while (done < events - 1 && !r) {
		struct kind *next = NULL;
		double behind = -1.0;

		for (size_t k = 0; k < N_KINDS; k++) {
			struct kind *kd = &kinds[k];
			double b;

			if (kd->done >= kd->want)
				continue;
			b = (double)(kd->want - kd->done) / (double)kd->want;
			if (b > behind)
				behind = b, next = kd;
		}
		if (!next)
			break;
		unsigned n = next->batch;
		if (n > next->want - next->done)
			n = (unsigned)(next->want - next->done);
		r = next->run(n);
		if (r < 0)
			break;
		next->done += n;
		done += (uint64_t)n * next->events;
		if (rate && ++ops % PACE_EVERY == 0)
			pace(t0, done, rate);
	}
	if (r < 0) {
		fprintf(stderr, "bench-pod-events: after %" PRIu64 " events: %s\n", done, strerror(-r));
		return 1;
	}
	printf("{\"signals\": %" PRIu64 ", \"listens\": %" PRIu64 ", \"forks\": %" PRIu64
	       ", \"execs\": %" PRIu64 ", \"events\": %" PRIu64 ", \"seconds\": %.3f}\n",
	       kinds[K_SIGNAL].done, kinds[K_LISTEN].done, kinds[K_FORK].done, kinds[K_EXEC].done,
	       done + 1, (double)(bench_now_ns() - t0) / 1e9);
	return fflush(stdout) == 0 ? 0 : 1;
bad:
	usage(stderr);
	return 2;
}
