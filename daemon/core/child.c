/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"

extern char **environ;

int tl_child_spawn(const char *path, bool search, char *const argv[], char *const envp[],
	     struct tl_child *ret)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int pfd[2] = { -1, -1 }, r;
	bool fa_ok = false, attr_ok = false;
	pid_t pid = -1;

	ret->pid = -1;
	ret->out_fd = ret->pid_fd = -1;
	/* O_CLOEXEC: neither end may leak into other children (or into this
	 * one past the dup2), or the end of output would never be seen. */
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	r = -posix_spawn_file_actions_init(&fa);
	if (r < 0)
		goto out;
	fa_ok = true;
	r = -posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
	if (r == 0)
		r = -posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (r < 0)
		goto out;
	r = -posix_spawnattr_init(&attr);
	if (r < 0)
		goto out;
	attr_ok = true;
	sigemptyset(&none);
	sigfillset(&all);
	r = -posix_spawnattr_setsigmask(&attr, &none);
	if (r == 0)
		r = -posix_spawnattr_setsigdefault(&attr, &all);
	if (r == 0)
		r = -posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	if (r < 0)
		goto out;
	/* glibc reports a failed exec here (ENOENT, EACCES), not as an exit
	 * status of 127. */
	if (search)
		r = -posix_spawnp(&pid, path, &fa, &attr, argv, envp ? envp : environ);
	else
		r = -posix_spawn(&pid, path, &fa, &attr, argv, envp ? envp : environ);
	if (r < 0)
		goto out;
	ret->pid = pid;
	ret->out_fd = pfd[0];
	pfd[0] = -1;
	/* Ours and not reaped until it exits: the pid is not reused, so
	 * opening the pidfd after the spawn names the right process. A
	 * pidfd is close-on-exec from the start (pidfd_open(2)). */
	ret->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (ret->pid_fd < 0)
		ret->pid_fd = -1;
	r = 0;
out:
	if (attr_ok)
		posix_spawnattr_destroy(&attr);
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	return r;
}

int tl_child_reap(struct tl_child *c, int *ret_status)
{
	int status;
	pid_t w;

	if (c->pid <= 0)
		return 1;
	do
		w = waitpid(c->pid, &status, WNOHANG);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		return -errno;
	if (w == 0)
		return 0;
	c->pid = -1;
	if (ret_status)
		*ret_status = status;
	return 1;
}

void tl_child_kill(struct tl_child *c)
{
	if (!c || c->pid <= 0)
		return;
	kill(c->pid, SIGKILL);
	while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
		;
	c->pid = -1;
}
