// SPDX-License-Identifier: Apache-2.0
/* core/child: a helper started with its argv and env, stdin /dev/null,
 * stdout a pipe, no inherited signal mask or ignored signals, its exit seen
 * through the pidfd, reaped and killed. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "../check-run.h"

/* Everything the child writes, until the end of its output (10 s at most). */
static size_t read_all(int fd, char *buf, size_t size)
{
	size_t len = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		ck_assert_int_eq(poll(&p, 1, 10000), 1);
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EAGAIN)
			continue;
		ck_assert_int_ge(n, 0);
		if (n == 0)
			break;
		len += (size_t)n;
		ck_assert_uint_lt(len, size - 1);
	}
	buf[len] = '\0';
	return len;
}

/* Waits for the exit on the pidfd (or polls without one), then reaps. */
static int wait_exit(struct tl_child *c)
{
	int status = -1, r;

	if (c->pid_fd >= 0) {
		struct pollfd p = { .fd = c->pid_fd, .events = POLLIN };

		ck_assert_int_eq(poll(&p, 1, 10000), 1);
		ck_assert_int_eq(tl_child_reap(c, &status), 1);
		return status;
	}
	for (int i = 0; i < 1000; i++) {
		r = tl_child_reap(c, &status);
		ck_assert_int_ge(r, 0);
		if (r == 1)
			return status;
		usleep(10000);
	}
	ck_abort_msg("the child did not exit");
	return -1;
}

static void child_close(struct tl_child *c)
{
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->pid_fd >= 0)
		close(c->pid_fd);
}

START_TEST(output_env_and_status)
{
	char *argv[] = { "sh", "-c", "printf '%s|%s' \"$ONE\" \"$TWO\"; exit 3", NULL };
	char *envp[] = { "ONE=1", "TWO=two words", NULL };
	struct tl_child c;
	char buf[256];
	int status;

	ck_assert_int_eq(tl_child_spawn("sh", true, argv, envp, &c), 0);
	ck_assert_int_gt(c.pid, 0);
	ck_assert_int_ge(c.out_fd, 0);
	/* both fds stay out of later children; the pipe never blocks the loop */
	ck_assert(fcntl(c.out_fd, F_GETFD) & FD_CLOEXEC);
	ck_assert(fcntl(c.out_fd, F_GETFL) & O_NONBLOCK);
	if (c.pid_fd >= 0)
		ck_assert(fcntl(c.pid_fd, F_GETFD) & FD_CLOEXEC);
	read_all(c.out_fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1|two words");
	status = wait_exit(&c);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 3);
	ck_assert_int_eq(c.pid, -1);
	/* reaped: asked again, still 1, status untouched */
	status = 12345;
	ck_assert_int_eq(tl_child_reap(&c, &status), 1);
	ck_assert_int_eq(status, 12345);
	child_close(&c);
}
END_TEST

/* NULL envp: this process's environment. */
START_TEST(inherited_env)
{
	char *argv[] = { "sh", "-c", "printf %s \"$TL_SPAWN_TEST\"", NULL };
	struct tl_child c;
	char buf[64];

	ck_assert_int_eq(setenv("TL_SPAWN_TEST", "inherited", 1), 0);
	ck_assert_int_eq(tl_child_spawn("/bin/sh", false, argv, NULL, &c), 0);
	read_all(c.out_fd, buf, sizeof(buf));
	ck_assert_str_eq(buf, "inherited");
	ck_assert_int_eq(wait_exit(&c), 0);
	child_close(&c);
}
END_TEST

/* stdin is /dev/null: cat with no argument ends at once with nothing. */
START_TEST(stdin_is_dev_null)
{
	char *argv[] = { "cat", NULL };
	struct tl_child c;
	char buf[64];

	ck_assert_int_eq(tl_child_spawn("cat", true, argv, NULL, &c), 0);
	ck_assert_uint_eq(read_all(c.out_fd, buf, sizeof(buf)), 0);
	ck_assert_int_eq(wait_exit(&c), 0);
	child_close(&c);
}
END_TEST

/* The agent blocks SIGTERM (its signalfd) and may ignore others: the child
 * starts with neither (SigBlk and SigIgn of /proc/self/status all zero). */
START_TEST(signal_mask_and_dispositions_reset)
{
	char *argv[] = { "cat", "/proc/self/status", NULL };
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int;
	sigset_t term, old_mask;
	struct tl_child c;
	char buf[8192];
	const char *blk, *ignl;

	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	ck_assert_int_eq(sigprocmask(SIG_BLOCK, &term, &old_mask), 0);
	ck_assert_int_eq(sigaction(SIGINT, &ign, &old_int), 0);
	ck_assert_int_eq(tl_child_spawn("cat", true, argv, NULL, &c), 0);
	ck_assert_int_eq(sigprocmask(SIG_SETMASK, &old_mask, NULL), 0);
	ck_assert_int_eq(sigaction(SIGINT, &old_int, NULL), 0);
	read_all(c.out_fd, buf, sizeof(buf));
	ck_assert_int_eq(wait_exit(&c), 0);
	child_close(&c);
	blk = strstr(buf, "\nSigBlk:\t");
	ignl = strstr(buf, "\nSigIgn:\t");
	ck_assert_ptr_nonnull(blk);
	ck_assert_ptr_nonnull(ignl);
	ck_assert_msg(strncmp(blk, "\nSigBlk:\t0000000000000000\n", 26) == 0, "%.26s", blk + 1);
	/* Of the ignored ones, only the classic signals: glibc itself
	 * leaves its internal 32 and 33 (SIGCANCEL, SIGSETXID) ignored in a
	 * posix_spawn child until the program's own libc takes them over. */
	ck_assert_msg((strtoull(ignl + 9, NULL, 16) & 0x7fffffffULL) == 0, "%.26s", ignl + 1);
}
END_TEST

START_TEST(cannot_start)
{
	char *argv[] = { "termline-no-such-program", NULL };
	struct tl_child c = { .pid = 99, .out_fd = 99, .pid_fd = 99 };

	ck_assert_int_eq(tl_child_spawn("/nonexistent/termline-no-such-program", false, argv, NULL, &c), -ENOENT);
	ck_assert_int_eq(c.pid, -1);
	ck_assert_int_eq(c.out_fd, -1);
	ck_assert_int_eq(c.pid_fd, -1);
	ck_assert_int_eq(tl_child_spawn("termline-no-such-program", true, argv, NULL, &c), -ENOENT);
	ck_assert_int_eq(c.pid, -1);
}
END_TEST

START_TEST(running_then_killed)
{
	char *argv[] = { "sleep", "30", NULL };
	struct tl_child c;
	pid_t pid;

	ck_assert_int_eq(tl_child_spawn("sleep", true, argv, NULL, &c), 0);
	pid = c.pid;
	ck_assert_int_eq(tl_child_reap(&c, NULL), 0);
	ck_assert_int_eq(c.pid, pid);
	tl_child_kill(&c);
	ck_assert_int_eq(c.pid, -1);
	/* killed and reaped: no zombie left */
	ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
	if (c.pid_fd >= 0) {
		struct pollfd p = { .fd = c.pid_fd, .events = POLLIN };

		ck_assert_int_eq(poll(&p, 1, 0), 1);
	}
	tl_child_kill(&c); /* again: nothing */
	tl_child_kill(NULL);
	child_close(&c);
}
END_TEST

static Suite *child_suite(void)
{
	Suite *s = suite_create("child");
	TCase *tc = tcase_create("child");

	tcase_add_test(tc, output_env_and_status);
	tcase_add_test(tc, inherited_env);
	tcase_add_test(tc, stdin_is_dev_null);
	tcase_add_test(tc, signal_mask_and_dispositions_reset);
	tcase_add_test(tc, cannot_start);
	tcase_add_test(tc, running_then_killed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int failed = tl_check_run(child_suite());

	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
