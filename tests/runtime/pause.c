/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox ("pause") container of the runtime tests' Pods: it holds the
 * Pod's namespaces and does nothing else. As PID 1 of its PID namespace it
 * reaps any orphan it inherits and exits 0 on SIGINT or SIGTERM (a PID 1
 * without handlers would ignore them and wait for SIGKILL). Static, so the
 * image is this one file. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void on_child(int sig)
{
	int saved = errno;

	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	errno = saved;
}

int main(int argc, char **argv)
{
	struct sigaction stop = { .sa_handler = on_stop };
	struct sigaction child = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP };

	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		puts("termline-test-pause 1");
		return 0;
	}
	if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
	    sigaction(SIGCHLD, &child, NULL) < 0) {
		perror("pause: sigaction");
		return 1;
	}
	for (;;)
		pause();
}
