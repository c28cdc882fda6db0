/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* A helper program as a child of the agent: started with posix_spawn (no
 * copy of the agent's page tables, unlike fork), its output read through a
 * pipe, its exit seen on the loop through a pidfd, reaped without blocking.
 * One way for every helper: the kubeconfig's exec credential plugins and
 * termline-findings (docs/architecture.md). */
#include <stdbool.h>
#include <sys/types.h>

struct tl_child {
	pid_t pid;  /* > 0 until reaped or killed */
	int out_fd; /* read end of the child's stdout: O_CLOEXEC, O_NONBLOCK */
	int pid_fd; /* readable once it exited; -1 without pidfd_open (kernel
		     * < 5.3): then poll tl_child_reap() */
};

/* Starts path with argv and envp (NULL: this process's environment);
 * search: path is looked up in PATH as execvp() does. The child gets
 * stdin /dev/null, stdout a pipe, stderr this process's, no other fd
 * (all of the agent's are O_CLOEXEC), an empty signal mask and every
 * signal's default disposition: the agent blocks the signals it reads
 * through a signalfd, and a child inheriting that mask could not be
 * stopped by SIGTERM. Fills *ret (out_fd and pid_fd are the caller's to
 * close) and returns 0, or -errno (-ENOENT, -EACCES: the program could
 * not be started) with *ret {-1, -1, -1}. */
int tl_child_spawn(const char *path, bool search, char *const argv[], char *const envp[],
	     struct tl_child *ret);

/* Without blocking: 1 once the child is reaped (*ret_status as waitpid()
 * gives it, may be NULL; c->pid then -1), 0 while it runs, -errno. A
 * child already reaped (c->pid <= 0) answers 1 and leaves *ret_status. */
int tl_child_reap(struct tl_child *c, int *ret_status);

/* SIGKILL and the wait for it (SIGKILL cannot be refused: the wait is
 * short); c->pid then -1. Closes no fd. Accepts NULL and a reaped child. */
void tl_child_kill(struct tl_child *c);
