/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "signals.h"

/* By <signal.h> constant, not by number. A number's name is its first row;
 * aliases come after the row they alias. */
#define SIG_ALIAS 0x1	/* accepted as a name, never printed */
#define SIG_NO_CONFIG 0x2 /* printed, not accepted by tl_signal_lookup */

static const struct {
	int no;
	unsigned flags;
	const char *name;
} signals[] = {
	{SIGHUP, 0, "SIGHUP"},
	{SIGINT, 0, "SIGINT"},
	{SIGQUIT, 0, "SIGQUIT"},
	{SIGILL, 0, "SIGILL"},
	{SIGTRAP, 0, "SIGTRAP"},
	{SIGABRT, 0, "SIGABRT"},
	{SIGIOT, SIG_ALIAS, "SIGIOT"},
	{SIGBUS, 0, "SIGBUS"},
	{SIGFPE, 0, "SIGFPE"},
	{SIGKILL, 0, "SIGKILL"},
	{SIGUSR1, 0, "SIGUSR1"},
	{SIGSEGV, 0, "SIGSEGV"},
	{SIGUSR2, 0, "SIGUSR2"},
	{SIGPIPE, 0, "SIGPIPE"},
	{SIGALRM, 0, "SIGALRM"},
	{SIGTERM, 0, "SIGTERM"},
#ifdef SIGSTKFLT
	/* Named in events; --signals has never accepted it. */
	{SIGSTKFLT, SIG_NO_CONFIG, "SIGSTKFLT"},
#endif
	{SIGCHLD, 0, "SIGCHLD"},
	{SIGCONT, 0, "SIGCONT"},
	{SIGSTOP, 0, "SIGSTOP"},
	{SIGTSTP, 0, "SIGTSTP"},
	{SIGTTIN, 0, "SIGTTIN"},
	{SIGTTOU, 0, "SIGTTOU"},
	{SIGURG, 0, "SIGURG"},
	{SIGXCPU, 0, "SIGXCPU"},
	{SIGXFSZ, 0, "SIGXFSZ"},
	{SIGVTALRM, 0, "SIGVTALRM"},
	{SIGPROF, 0, "SIGPROF"},
	{SIGWINCH, 0, "SIGWINCH"},
	{SIGIO, 0, "SIGIO"},
	{SIGPOLL, SIG_ALIAS, "SIGPOLL"},
	{SIGPWR, 0, "SIGPWR"},
	{SIGSYS, 0, "SIGSYS"},
};

const char *tl_signal_name(int signo, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (signals[i].no == signo && !(signals[i].flags & SIG_ALIAS))
			return signals[i].name;
	/* The kernel's SIGRTMIN (32 on Linux; glibc reserves the first few
	 * and its SIGRTMIN macro is a function call): the kernel's numbering
	 * is what a BPF record carries. */
	if (signo >= 32 && signo <= 64 && buf && len) {
		snprintf(buf, len, "SIGRTMIN+%d", signo - 32);
		return buf;
	}
	return NULL;
}

int tl_signal_lookup(const char *name, size_t len, int *ret)
{
	if (len >= 3 && strncasecmp(name, "SIG", 3) == 0) {
		name += 3;
		len -= 3;
	}
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
		const char *n = signals[i].name + 3; /* without "SIG" */

		if (signals[i].flags & SIG_NO_CONFIG)
			continue;
		if (strlen(n) == len && strncasecmp(n, name, len) == 0) {
			*ret = signals[i].no;
			return 0;
		}
	}
	return -EINVAL;
}
