/* SPDX-License-Identifier: Apache-2.0 */
/* Real kernel events: processes are started in kubelet-style cgroups made for
 * the test, signalled, exec'd and made to listen and reset connections; the
 * loaded BPF programs must report exactly that, attributed to the container's
 * cgroup, and nothing for an untracked cgroup. Each case runs with the tp_btf
 * programs and again with the classic tracepoint twins. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf-loader.h"
#include "clock.h"
#include "event.h"
#include "loop.h"
#include "metrics.h"
#include "termline-events.h"
#include "macro.h"
#include "../check-run.h"

#define MAX_EVENTS 4096
#define WAIT_LIMIT_MS 10000

static const char *self_exe;
/* <cgroup2>/termline-test-<runner pid>: each test's tree lives below it, and
 * the runner removes it at the end (a failed test exits before teardown). */
static char run_dir[600];

/* ---- child programs (the test binary re-executed: a container's process
 * starts by exec inside its cgroup) ---- */

static volatile sig_atomic_t got_term;

static void on_term(int sig _unused_)
{
	got_term = 1;
}

static void ready(int fd, const void *data, size_t len)
{
	if (write(fd, data, len) != (ssize_t)len)
		_exit(120);
}

static int listen_loopback(int family, uint16_t *port)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	int fd = socket(family, SOCK_STREAM, 0);

	if (fd < 0)
		_exit(121);
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 8) < 0)
		_exit(122);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		_exit(123);
	*port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
			((struct sockaddr_in6 *)&ss)->sin6_port);
	return fd;
}

static int child_main(const char *mode, int fd)
{
	struct linger lin = { .l_onoff = 1, .l_linger = 0 };
	uint16_t port;
	int lfd, cfd;
	char c;

	if (strcmp(mode, "handler") == 0) {
		struct sigaction sa = { .sa_handler = on_term };

		prctl(PR_SET_NAME, "tl-handler");
		if (sigaction(SIGTERM, &sa, NULL) < 0)
			return 124;
		ready(fd, "R", 1);
		while (!got_term)
			pause();
		return 0;
	}
	if (strcmp(mode, "nohandler") == 0) {
		prctl(PR_SET_NAME, "tl-nohandler");
		ready(fd, "R", 1);
		for (;;)
			pause();
	}
	if (strcmp(mode, "pidns") == 0) {
		/* Becomes the reaper of a new PID namespace whose PID 1 has no
		 * SIGTERM handler: the kernel ignores SIGTERM sent to it. */
		int p[2], status;
		pid_t init;

		if (unshare(CLONE_NEWPID) < 0 || pipe(p) < 0)
			return 125;
		init = fork();
		if (init < 0)
			return 126;
		if (init == 0) {
			char fdbuf[16];

			close(p[0]);
			snprintf(fdbuf, sizeof(fdbuf), "%d", p[1]);
			execl(self_exe, self_exe, "--child", "nohandler", fdbuf, (char *)NULL);
			_exit(127);
		}
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			return 128;
		ready(fd, &init, sizeof(init));
		if (waitpid(init, &status, 0) < 0)
			return 129;
		return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : 130;
	}
	if (strcmp(mode, "listen4") == 0 || strcmp(mode, "listen6") == 0) {
		lfd = listen_loopback(mode[6] == '4' ? AF_INET : AF_INET6, &port);
		ready(fd, &port, sizeof(port));
		close(lfd);
		return 0;
	}
	if (strcmp(mode, "rst-send") == 0 || strcmp(mode, "rst-wait") == 0) {
		lfd = listen_loopback(AF_INET, &port);
		ready(fd, &port, sizeof(port));
		cfd = accept(lfd, NULL, NULL);
		if (cfd < 0)
			return 131;
		if (mode[4] == 's') {
			/* Linger 0: close sends a reset instead of a FIN. */
			if (setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin)) < 0)
				return 132;
			close(cfd);
			close(lfd);
			return 0;
		}
		ready(fd, "A", 1);
		if (read(cfd, &c, 1) < 0 && errno == ECONNRESET)
			return 0;
		return 133;
	}
	return 119;
}

/* ---- cgroup fixture ---- */

static char cg_base[700], cg_leaf[2048], cg_other[2048];
static uint64_t leaf_id, other_id;

static int cgroup2_mount(char *buf, size_t len)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		char mnt[512];

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1) {
			snprintf(buf, len, "%s", mnt);
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

static uint64_t make_dirs(const char *base, const char *rel, char *out, size_t outlen)
{
	char path[2048];
	const char *p = rel;
	struct stat st;

	snprintf(path, sizeof(path), "%s", base);
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		size_t cur = strlen(path);

		ck_assert_uint_lt(cur + n + 2, sizeof(path));
		path[cur] = '/';
		memcpy(path + cur + 1, p, n);
		path[cur + 1 + n] = '\0';
		ck_assert_msg(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path,
			      strerror(errno));
		p += n;
		if (*p == '/')
			p++;
	}
	ck_assert_int_eq(stat(path, &st), 0);
	snprintf(out, outlen, "%s", path);
	return st.st_ino;
}

/* rmdir, retried while the cgroup still holds just-reaped tasks (EBUSY
 * until the kernel releases them). */
static int rmdir_retry(const char *path)
{
	int i;

	for (i = 0; i < 500; i++) {
		if (rmdir(path) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		usleep(10000);
	}
	return -EBUSY;
}

/* Removes dir and every directory above it below top. A cgroup with child
 * cgroups fails with EBUSY like a busy one, so the order matters. */
static void remove_upwards(char *dir, const char *top)
{
	size_t top_len = strlen(top);

	while (strlen(dir) > top_len) {
		char *slash;

		if (rmdir_retry(dir) < 0)
			fprintf(stderr, "test-bpf: could not remove %s: %s\n", dir, strerror(errno));
		slash = strrchr(dir, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
}

static int remove_dir(const char *path, const struct stat *st _unused_, int type,
		      struct FTW *ftw _unused_)
{
	if (type == FTW_DP && rmdir_retry(path) < 0)
		fprintf(stderr, "test-bpf: could not remove %s: %s\n", path, strerror(errno));
	return 0;
}

static void remove_cgroups(void)
{
	char path[2048];

	snprintf(path, sizeof(path), "%s", cg_leaf);
	remove_upwards(path, cg_base);
	snprintf(path, sizeof(path), "%s", cg_other);
	remove_upwards(path, cg_base);
	if (rmdir_retry(cg_base) < 0)
		fprintf(stderr, "test-bpf: could not remove %s: %s\n", cg_base, strerror(errno));
}

/* ---- loaded programs and collected events ---- */

static struct tl_bpf *bpf;
static struct tl_loop *loop;
static struct tl_event events[MAX_EVENTS];
static int n_events;
static bool use_classic;
static uint32_t ring_bytes;
static uint64_t signal_mask;

static void collect(void *userdata _unused_, struct tl_event *ev)
{
	if (n_events < MAX_EVENTS) {
		events[n_events++] = *ev;
		memset(ev, 0, sizeof(*ev));
	} else {
		tl_event_clear(ev);
	}
}

static struct tl_clock test_clock;

static void setup_common(void)
{
	struct tl_bpf_config cfg = { .ringbuf_bytes = ring_bytes, .force_classic = use_classic,
				     .signal_mask = signal_mask, .clock = &test_clock };
	struct tl_emitter em = { .emit = collect };
	char err[512] = "", rel[512];
	const char *uid = "1f6c4a5e_8a3b_4c2d_9e10_5b7f3a2c1d00";
	const char *cid = "3b2e6f9d0c1a8e7f6b5d4c3a2918076f5e4d3c2b1a0918273645546372819a0b";
	int r;

	/* Load first: a failed load leaves no cgroup directories behind. */
	ck_assert_int_eq(tl_clock_sample(&test_clock), 0);
	tl_metrics_reset();
	r = tl_bpf_new(&cfg, &bpf, err, sizeof(err));
	ck_assert_msg(r == 0, "tl_bpf_new: %s", err);

	snprintf(cg_base, sizeof(cg_base), "%s/%d", run_dir, (int)getpid());
	ck_assert_msg(mkdir(cg_base, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", cg_base,
		      strerror(errno));
	snprintf(rel, sizeof(rel),
		 "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/"
		 "cri-containerd-%s.scope", uid, cid);
	leaf_id = make_dirs(cg_base, rel, cg_leaf, sizeof(cg_leaf));
	other_id = make_dirs(cg_base, "system.slice/other.scope", cg_other, sizeof(cg_other));
	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_bpf_attach_loop(bpf, loop, &em), 0);
	ck_assert_int_eq(tl_bpf_track_cgroup(bpf, leaf_id), 0);
	n_events = 0;
}

static void setup_btf(void)
{
	use_classic = false;
	ring_bytes = 0;
	signal_mask = 0;
	setup_common();
}

static void setup_kill_only(void)
{
	use_classic = false;
	ring_bytes = 0;
	signal_mask = TL_SIG_BIT(SIGKILL);
	setup_common();
}

static void setup_classic(void)
{
	use_classic = true;
	ring_bytes = 0;
	signal_mask = 0;
	setup_common();
}

static void setup_tiny_ring(void)
{
	use_classic = false;
	ring_bytes = 4096;
	signal_mask = 0;
	setup_common();
}

static void teardown(void)
{
	int i;

	tl_bpf_free(bpf);
	bpf = NULL;
	tl_loop_free(loop);
	loop = NULL;
	for (i = 0; i < n_events; i++)
		tl_event_clear(&events[i]);
	n_events = 0;
	remove_cgroups();
}

/* Forks a process that joins the cgroup and execs the test binary as the
 * given child program; *ret_fd reads what the child reports. */
static pid_t spawn_in(const char *cgroup, const char *mode, int *ret_fd)
{
	char procs[2100], fdbuf[16];
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgroup);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(procs, O_WRONLY | O_CLOEXEC);

		close(p[0]);
		if (fd < 0 || write(fd, "0\n", 2) != 2)
			_exit(117);
		close(fd);
		snprintf(fdbuf, sizeof(fdbuf), "%d", p[1]);
		if (mode[0] == '/')
			execl(mode, mode, "-c", "exit 3", (char *)NULL);
		else
			execl(self_exe, self_exe, "--child", mode, fdbuf, (char *)NULL);
		_exit(118);
	}
	close(p[1]);
	if (ret_fd)
		*ret_fd = p[0];
	else
		close(p[0]);
	return pid;
}

static void read_exact(int fd, void *buf, size_t len)
{
	ck_assert_int_eq(read(fd, buf, len), (ssize_t)len);
}

/* A field as the contract's JSON shows it. */
static struct json_object *field(const struct tl_event *ev, const char *key)
{
	static struct json_object *last[8];
	static unsigned next;
	struct json_object *o = tl_event_to_json(ev, false), *v;

	ck_assert_ptr_nonnull(o);
	/* Keep the last few alive: callers hold the strings briefly. */
	json_object_put(last[next % 8]);
	last[next++ % 8] = o;
	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static int field_int(const struct tl_event *ev, const char *key)
{
	struct json_object *v = field(ev, key);

	return v ? json_object_get_int(v) : -1;
}

static const char *field_str(const struct tl_event *ev, const char *key)
{
	struct json_object *v = field(ev, key);

	return v ? json_object_get_string(v) : NULL;
}

/* Index of the first event after 'from' of this type whose field key has
 * value val (key NULL: any), or -1. */
static int find_from(int from, const char *type, const char *key, int val)
{
	int i;

	for (i = from; i < n_events; i++) {
		if (strcmp(events[i].type, type) != 0)
			continue;
		if (!key || field_int(&events[i], key) == val)
			return i;
	}
	return -1;
}

static int find_str_from(int from, const char *type, const char *key, const char *val)
{
	int i;

	for (i = from; i < n_events; i++) {
		const char *s = field_str(&events[i], key);

		if (strcmp(events[i].type, type) == 0 && s && strcmp(s, val) == 0)
			return i;
	}
	return -1;
}

/* Runs the loop until the event arrives; the limit only bounds a failing
 * test, nothing is asserted about time. */
static int wait_for(const char *type, const char *key, int val)
{
	uint64_t start = tl_now_mono_ms();
	int i;

	while ((i = find_from(0, type, key, val)) < 0 &&
	       tl_now_mono_ms() - start < WAIT_LIMIT_MS)
		tl_loop_run_once(loop, 20);
	return i;
}

static int wait_exit(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static int count_for_pid(int pid)
{
	int i, n = 0;

	for (i = 0; i < n_events; i++)
		if (field_int(&events[i], "pid") == pid)
			n++;
	return n;
}

static void assert_kernel_event(int i, uint64_t cgroup_id)
{
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(events[i].source, TL_SRC_KERNEL);
	ck_assert_uint_eq(events[i].cgroup_id, cgroup_id);
	ck_assert_str_eq(events[i].pod_uid, "");
	ck_assert_str_eq(events[i].container_id, "");
}

static void own_comm(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/comm", "re");

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, (int)len, f));
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void assert_signal(int i, pid_t pid, const char *comm, const char *signal, int signo,
			  const char *result)
{
	char me[32];

	own_comm(me, sizeof(me));
	assert_kernel_event(i, leaf_id);
	ck_assert_str_eq(field_str(&events[i], "signal"), signal);
	ck_assert_int_eq(field_int(&events[i], "signo"), signo);
	ck_assert_int_eq(field_int(&events[i], "pid"), pid);
	ck_assert_str_eq(field_str(&events[i], "comm"), comm);
	ck_assert_int_eq(field_int(&events[i], "senderPid"), getpid());
	ck_assert_str_eq(field_str(&events[i], "senderComm"), me);
	ck_assert_str_eq(field_str(&events[i], "result"), result);
}

static void assert_exit(int i, pid_t pid, const char *comm, int code, int sig)
{
	assert_kernel_event(i, leaf_id);
	ck_assert_int_eq(field_int(&events[i], "pid"), pid);
	ck_assert_str_eq(field_str(&events[i], "comm"), comm);
	ck_assert_int_eq(field_int(&events[i], "exitCode"), code);
	ck_assert_int_eq(field_int(&events[i], "exitSignal"), sig);
}

/* ---- cases ---- */

START_TEST(sigterm_to_handler)
{
	int fd, sig, del, ex, status;
	pid_t pid = spawn_in(cg_leaf, "handler", &fd);
	char c;

	read_exact(fd, &c, 1);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	status = wait_exit(pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	ex = wait_for("process.exit", "pid", pid);
	sig = find_from(0, "process.signal", "pid", pid);
	del = find_from(0, "process.signal_delivered", "pid", pid);
	assert_signal(sig, pid, "tl-handler", "SIGTERM", 15, "delivered");
	assert_kernel_event(del, leaf_id);
	ck_assert_str_eq(field_str(&events[del], "signal"), "SIGTERM");
	ck_assert_int_eq(field_int(&events[del], "signo"), 15);
	ck_assert_str_eq(field_str(&events[del], "comm"), "tl-handler");
	assert_exit(ex, pid, "tl-handler", 0, 0);
	ck_assert_int_lt(sig, del);
	ck_assert_int_lt(del, ex);
	ck_assert_int_le(events[sig].time_ns, events[del].time_ns);
	ck_assert_int_le(events[del].time_ns, events[ex].time_ns);
	/* Stamped with the wall clock of now, not boot time. */
	ck_assert_int_le(llabs(events[ex].time_ns - tl_now_real_ns()), 60LL * 1000000000);
	close(fd);
}
END_TEST

START_TEST(sigterm_without_handler)
{
	int fd, sig, ex, status;
	pid_t pid = spawn_in(cg_leaf, "nohandler", &fd);
	char c;

	read_exact(fd, &c, 1);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	status = wait_exit(pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);

	ex = wait_for("process.exit", "pid", pid);
	sig = find_from(0, "process.signal", "pid", pid);
	assert_signal(sig, pid, "tl-nohandler", "SIGTERM", 15, "delivered");
	assert_exit(ex, pid, "tl-nohandler", 0, 15);
	ck_assert_int_lt(sig, ex);
	/* No handler ran: the default action is not a delivery to a handler. */
	ck_assert_int_eq(find_from(0, "process.signal_delivered", "pid", pid), -1);
	close(fd);
}
END_TEST

START_TEST(sigterm_to_pid1_is_ignored)
{
	int fd, term, kil, ex, status;
	pid_t reaper = spawn_in(cg_leaf, "pidns", &fd);
	pid_t init;

	read_exact(fd, &init, sizeof(init));
	ck_assert_int_eq(kill(init, SIGTERM), 0);
	term = wait_for("process.signal", "pid", init);
	assert_signal(term, init, "tl-nohandler", "SIGTERM", 15, "ignored");

	ck_assert_int_eq(kill(init, SIGKILL), 0);
	status = wait_exit(reaper);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ex = wait_for("process.exit", "pid", init);
	kil = find_from(term + 1, "process.signal", "pid", init);
	assert_signal(kil, init, "tl-nohandler", "SIGKILL", 9, "delivered");
	assert_exit(ex, init, "tl-nohandler", 0, 9);
	ck_assert_int_lt(kil, ex);
	close(fd);
}
END_TEST

START_TEST(sigkill)
{
	int fd, sig, ex;
	pid_t pid = spawn_in(cg_leaf, "nohandler", &fd);
	char c;

	read_exact(fd, &c, 1);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	wait_exit(pid);
	ex = wait_for("process.exit", "pid", pid);
	sig = find_from(0, "process.signal", "pid", pid);
	assert_signal(sig, pid, "tl-nohandler", "SIGKILL", 9, "delivered");
	assert_exit(ex, pid, "tl-nohandler", 0, 9);
	ck_assert_int_lt(sig, ex);
	close(fd);
}
END_TEST

START_TEST(exec_in_container)
{
	int ex, exe, status;
	pid_t pid = spawn_in(cg_leaf, "/bin/sh", NULL);

	status = wait_exit(pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	ex = wait_for("process.exit", "pid", pid);
	exe = find_from(0, "process.exec", "pid", pid);
	assert_kernel_event(exe, leaf_id);
	ck_assert_str_eq(field_str(&events[exe], "filename"), "/bin/sh");
	ck_assert_str_eq(field_str(&events[exe], "comm"), "sh");
	assert_exit(ex, pid, "sh", 3, 0);
	ck_assert_int_lt(exe, ex);
}
END_TEST

/* A container names its executable as it likes, and the kernel cuts comm at
 * 15 bytes inside a character: the event's strings are UTF-8 anyway, with
 * U+FFFD for every byte that is not part of a well-formed sequence. */
START_TEST(exec_non_utf8_name)
{
	static const char name[] = "tl-x\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xff";
	char dir[] = "/tmp/termline-test-XXXXXX", path[128], want[160];
	int ex, exe, status;
	pid_t pid;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(symlink("/bin/sh", path), 0);
	pid = spawn_in(cg_leaf, path, NULL);
	status = wait_exit(pid);
	unlink(path);
	rmdir(dir);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	ex = wait_for("process.exit", "pid", pid);
	exe = find_from(0, "process.exec", "pid", pid);
	assert_kernel_event(exe, leaf_id);
	snprintf(want, sizeof(want), "%s/tl-x\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xef\xbf\xbd", dir);
	ck_assert_str_eq(field_str(&events[exe], "filename"), want);
	ck_assert_str_eq(field_str(&events[exe], "comm"), "tl-x\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xef\xbf\xbd");
	assert_exit(ex, pid, "tl-x\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xef\xbf\xbd", 3, 0);
}
END_TEST

static void check_listener(const char *mode, const char *address)
{
	int fd, open_i, close_i;
	uint16_t port;
	pid_t pid = spawn_in(cg_leaf, mode, &fd);

	read_exact(fd, &port, sizeof(port));
	wait_exit(pid);
	wait_for("process.exit", "pid", pid);
	open_i = find_from(0, "socket.listen", "port", port);
	close_i = find_from(0, "socket.listen_closed", "port", port);
	assert_kernel_event(open_i, leaf_id);
	assert_kernel_event(close_i, leaf_id);
	ck_assert_str_eq(field_str(&events[open_i], "address"), address);
	ck_assert_str_eq(field_str(&events[close_i], "address"), address);
	ck_assert_int_lt(open_i, close_i);
	close(fd);
}

START_TEST(listener_open_close)
{
	check_listener("listen4", "127.0.0.1");
	check_listener("listen6", "::1");
}
END_TEST

static int connect_loopback(uint16_t port, uint16_t *ret_local_port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*ret_local_port = ntohs(a.sin_port);
	return fd;
}

START_TEST(reset_sent)
{
	char local[32], remote[32], c;
	int fd, sock, i, status;
	uint16_t port, myport;
	pid_t pid = spawn_in(cg_leaf, "rst-send", &fd);

	read_exact(fd, &port, sizeof(port));
	sock = connect_loopback(port, &myport);
	/* The peer's reset arrives as ECONNRESET (or EOF if it raced the read). */
	ck_assert_int_le(read(sock, &c, 1), 0);
	status = wait_exit(pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	wait_for("process.exit", "pid", pid);

	snprintf(local, sizeof(local), "127.0.0.1:%u", port);
	snprintf(remote, sizeof(remote), "127.0.0.1:%u", myport);
	i = find_str_from(0, "tcp.reset_sent", "local", local);
	assert_kernel_event(i, leaf_id);
	ck_assert_str_eq(field_str(&events[i], "remote"), remote);
	/* The receiving end is this (untracked) process: nothing for it. */
	ck_assert_int_eq(find_from(0, "tcp.reset_received", NULL, 0), -1);
	/* The reset-closed connection is counted, not emitted. */
	tl_bpf_drain(bpf);
	ck_assert_uint_eq(tl_bpf_tcp_closed(bpf, leaf_id), 1);
	ck_assert_int_eq(tl_metric_get("termline_tcp_closed_total", NULL),
			 (int64_t)tl_bpf_tcp_closed(bpf, 0));
	close(sock);
	close(fd);
}
END_TEST

START_TEST(reset_received)
{
	struct linger lin = { .l_onoff = 1, .l_linger = 0 };
	char local[32], remote[32], c;
	int fd, sock, i, status;
	uint16_t port, myport;
	pid_t pid = spawn_in(cg_leaf, "rst-wait", &fd);

	read_exact(fd, &port, sizeof(port));
	sock = connect_loopback(port, &myport);
	read_exact(fd, &c, 1);
	ck_assert_int_eq(setsockopt(sock, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin)), 0);
	close(sock);
	status = wait_exit(pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	wait_for("process.exit", "pid", pid);

	/* On loopback the reset is processed in this process's context: only
	 * attribution by the socket puts it in the container. */
	snprintf(local, sizeof(local), "127.0.0.1:%u", port);
	snprintf(remote, sizeof(remote), "127.0.0.1:%u", myport);
	i = find_str_from(0, "tcp.reset_received", "local", local);
	assert_kernel_event(i, leaf_id);
	ck_assert_str_eq(field_str(&events[i], "remote"), remote);
	ck_assert_int_eq(find_from(0, "tcp.reset_sent", NULL, 0), -1);
	close(fd);
}
END_TEST

static uint16_t connect_refused(const char *src, uint16_t *ret_dst_port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int probe, fd;
	uint16_t port;

	ck_assert_int_eq(inet_pton(AF_INET, src, &a.sin_addr), 1);
	/* A port bound without listen(): nothing accepts on it. */
	probe = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(probe, 0);
	ck_assert_int_eq(bind(probe, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(probe, (struct sockaddr *)&a, &len), 0);
	*ret_dst_port = ntohs(a.sin_port);

	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	a.sin_port = 0;
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	a.sin_port = htons(*ret_dst_port);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), -1);
	ck_assert_int_eq(errno, ECONNREFUSED);
	close(fd);
	close(probe);
	return port;
}

START_TEST(reset_without_socket_by_pod_ip)
{
	char local[32], remote[32];
	uint16_t other_src, other_dst, src, dst;
	int i;

	ck_assert_int_eq(tl_bpf_track_ip(bpf, "127.0.0.2"), 0);
	ck_assert_int_eq(tl_bpf_track_ip(bpf, "not-an-ip"), -EINVAL);
	other_src = connect_refused("127.0.0.3", &other_dst);
	src = connect_refused("127.0.0.2", &dst);

	snprintf(local, sizeof(local), "127.0.0.2:%u", dst);
	snprintf(remote, sizeof(remote), "127.0.0.2:%u", src);
	ck_assert_int_ge(wait_for("tcp.reset_sent", NULL, 0), 0);
	i = find_str_from(0, "tcp.reset_sent", "local", local);
	assert_kernel_event(i, 0);
	ck_assert_str_eq(field_str(&events[i], "remote"), remote);
	/* Ring order is reserve order: the earlier reset to a non-pod address
	 * would be listed before this one. */
	snprintf(local, sizeof(local), "127.0.0.3:%u", other_dst);
	ck_assert_int_eq(find_str_from(0, "tcp.reset_sent", "local", local), -1);
	ck_assert_int_eq(n_events, 1);
	(void)other_src;

	ck_assert_int_eq(tl_bpf_untrack_ip(bpf, "127.0.0.2"), 0);
	ck_assert_int_eq(tl_bpf_untrack_ip(bpf, "127.0.0.2"), -ENOENT);
}
END_TEST

START_TEST(untracked_cgroup_is_silent)
{
	int fd, fd2, status, barrier;
	uint16_t port;
	pid_t quiet, listener, tracked;
	char c;

	quiet = spawn_in(cg_other, "nohandler", &fd);
	read_exact(fd, &c, 1);
	ck_assert_int_eq(kill(quiet, SIGTERM), 0);
	status = wait_exit(quiet);
	ck_assert(WIFSIGNALED(status));
	listener = spawn_in(cg_other, "listen4", &fd2);
	read_exact(fd2, &port, sizeof(port));
	wait_exit(listener);

	/* A tracked process afterwards: once its exit is seen, anything the
	 * untracked ones produced would have been seen before it. */
	tracked = spawn_in(cg_leaf, "/bin/sh", NULL);
	wait_exit(tracked);
	barrier = wait_for("process.exit", "pid", tracked);
	assert_kernel_event(barrier, leaf_id);
	ck_assert_uint_ne(other_id, leaf_id);
	ck_assert_int_eq(count_for_pid(quiet), 0);
	ck_assert_int_eq(count_for_pid(listener), 0);
	ck_assert_int_eq(find_from(0, "socket.listen", "port", port), -1);
	for (int i = 0; i < n_events; i++)
		ck_assert_uint_eq(events[i].cgroup_id, leaf_id);

	/* Untracking silences the leaf as well. */
	ck_assert_int_eq(tl_bpf_untrack_cgroup(bpf, leaf_id), 0);
	ck_assert_int_eq(tl_bpf_untrack_cgroup(bpf, leaf_id), -ENOENT);
	barrier = n_events;
	tracked = spawn_in(cg_leaf, "/bin/sh", NULL);
	wait_exit(tracked);
	tl_bpf_drain(bpf);
	ck_assert_int_eq(n_events, barrier);
	close(fd);
	close(fd2);
}
END_TEST

START_TEST(full_ring_counts_drops)
{
	const int runs = 40;
	int i, status, execs = 0;
	uint64_t dropped;

	/* Nothing drains while the processes run, so the 4 KiB ring fills. */
	for (i = 0; i < runs; i++) {
		pid_t pid = spawn_in(cg_leaf, "/bin/sh", NULL);

		status = wait_exit(pid);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	}
	tl_bpf_drain(bpf);
	for (i = 0; i < n_events; i++)
		execs += strcmp(events[i].type, "process.exec") == 0;
	dropped = tl_bpf_dropped(bpf, "process.exec");
	ck_assert_uint_gt(dropped, 0);
	ck_assert_uint_eq(execs + dropped, runs);
	ck_assert_uint_eq(tl_bpf_dropped_total(bpf),
			  dropped + tl_bpf_dropped(bpf, "process.exit"));
	ck_assert_int_eq(tl_metric_get("termline_ringbuf_dropped_total", "kind=\"process.exec\""),
			 (int64_t)dropped);
	ck_assert_uint_eq(tl_bpf_dropped(bpf, "no.such.type"), 0);
}
END_TEST

START_TEST(probe_names_name_the_variant)
{
	const char *const *p = tl_bpf_probe_names(bpf);
	const char *want = use_classic ? ":tracepoint" : ":tp_btf";
	int n = 0;

	for (; *p; p++, n++) {
		ck_assert_ptr_nonnull(strstr(*p, want));
	}
	ck_assert_int_eq(n, 7);
	ck_assert_str_eq(tl_bpf_probe_names(bpf)[0],
			 use_classic ? "signal_generate:tracepoint" : "signal_generate:tp_btf");
}
END_TEST

START_TEST(signal_mask_filters)
{
	int fd, fd2, status;
	pid_t termed, killed;
	char c;

	termed = spawn_in(cg_leaf, "nohandler", &fd);
	read_exact(fd, &c, 1);
	ck_assert_int_eq(kill(termed, SIGTERM), 0);
	wait_exit(termed);
	killed = spawn_in(cg_leaf, "nohandler", &fd2);
	read_exact(fd2, &c, 1);
	ck_assert_int_eq(kill(killed, SIGKILL), 0);
	status = wait_exit(killed);
	ck_assert(WIFSIGNALED(status));

	ck_assert_int_ge(wait_for("process.exit", "pid", killed), 0);
	assert_signal(find_from(0, "process.signal", "pid", killed), killed, "tl-nohandler",
		      "SIGKILL", 9, "delivered");
	/* SIGTERM is outside the mask: its exit is there, the signal is not. */
	assert_exit(find_from(0, "process.exit", "pid", termed), termed, "tl-nohandler", 0, 15);
	ck_assert_int_eq(find_from(0, "process.signal", "pid", termed), -1);
	close(fd);
	close(fd2);
}
END_TEST

START_TEST(unprivileged_load_fails_clearly)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct tl_bpf *b = NULL;
		char err[512] = "";
		int r;

		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		r = tl_bpf_new(NULL, &b, err, sizeof(err));
		if (r != -EPERM || b || !strstr(err, "root") || !strstr(err, "CAP_BPF"))
			_exit(3);
		_exit(0);
	}
	status = wait_exit(pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

static void add_cases(TCase *tc)
{
	tcase_add_test(tc, sigterm_to_handler);
	tcase_add_test(tc, sigterm_without_handler);
	tcase_add_test(tc, sigterm_to_pid1_is_ignored);
	tcase_add_test(tc, sigkill);
	tcase_add_test(tc, exec_in_container);
	tcase_add_test(tc, exec_non_utf8_name);
	tcase_add_test(tc, listener_open_close);
	tcase_add_test(tc, reset_sent);
	tcase_add_test(tc, reset_received);
	tcase_add_test(tc, reset_without_socket_by_pod_ip);
	tcase_add_test(tc, untracked_cgroup_is_silent);
	tcase_add_test(tc, probe_names_name_the_variant);
}

START_TEST(signal_names)
{
	char buf[16];

	ck_assert_str_eq(tl_signal_name(15, buf, sizeof(buf)), "SIGTERM");
	ck_assert_str_eq(tl_signal_name(9, buf, sizeof(buf)), "SIGKILL");
	ck_assert_str_eq(tl_signal_name(34, buf, sizeof(buf)), "SIGRTMIN+2");
	ck_assert_ptr_null(tl_signal_name(0, buf, sizeof(buf)));
	ck_assert_ptr_null(tl_signal_name(65, buf, sizeof(buf)));
}
END_TEST

static Suite *bpf_suite(void)
{
	Suite *s = suite_create("bpf");
	TCase *tc;

	tc = tcase_create("names");
	tcase_add_test(tc, signal_names);
	tcase_add_test(tc, unprivileged_load_fails_clearly);
	suite_add_tcase(s, tc);

	tc = tcase_create("tp_btf");
	tcase_add_checked_fixture(tc, setup_btf, teardown);
	add_cases(tc);
	suite_add_tcase(s, tc);

	tc = tcase_create("classic");
	tcase_add_checked_fixture(tc, setup_classic, teardown);
	add_cases(tc);
	suite_add_tcase(s, tc);

	tc = tcase_create("signal-mask");
	tcase_add_checked_fixture(tc, setup_kill_only, teardown);
	tcase_add_test(tc, signal_mask_filters);
	suite_add_tcase(s, tc);

	tc = tcase_create("tiny-ring");
	tcase_add_checked_fixture(tc, setup_tiny_ring, teardown);
	tcase_add_test(tc, full_ring_counts_drops);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	const char *ci = getenv("CI");
	char root[512];
	int failed;

	self_exe = "/proc/self/exe";
	if (argc == 4 && strcmp(argv[1], "--child") == 0)
		return child_main(argv[2], atoi(argv[3]));
	if (geteuid() != 0) {
		if (!ci || strcmp(ci, "true") != 0) {
			fprintf(stderr, "test-bpf: needs root, skipping\n");
			return 77;
		}
		fprintf(stderr, "test-bpf: needs root (CI=true: failing)\n");
		return 1;
	}
	if (cgroup2_mount(root, sizeof(root)) < 0) {
		fprintf(stderr, "test-bpf: no cgroup2 mount in /proc/self/mountinfo\n");
		return 1;
	}
	snprintf(run_dir, sizeof(run_dir), "%s/termline-test-%d", root, (int)getpid());
	if (mkdir(run_dir, 0755) < 0) {
		fprintf(stderr, "test-bpf: mkdir %s: %s\n", run_dir, strerror(errno));
		return 1;
	}
	failed = tl_check_run(bpf_suite());
	if (nftw(run_dir, remove_dir, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "test-bpf: could not remove all of %s\n", run_dir);
	return failed ? 1 : 0;
}
