/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "kube-exec.h"
#include "macro.h"

extern char **environ;

#define KX_MAX_OUTPUT (1u << 20)
#define KX_TIMEOUT_MS 30000
/* Without a pidfd, a plugin that closed its output is polled this often. */
#define KX_REAP_POLL_MS 10

struct tl_kexec {
	struct tl_loop *loop;
	tl_kexec_done_cb done;
	void *userdata;
	char *command;	       /* for messages */
	struct tl_child child; /* pid > 0 until reaped */
	int status;
	bool out_on_loop, pid_on_loop;
	char *buf;
	size_t len;
	uint64_t deadline_ms;
	struct tl_timer *timer;
};

/* Off the loop before the close: the loop knows a watch by its fd number,
 * which the next open may reuse. */
static void kx_close(struct tl_kexec *x, int *fd, bool *on_loop)
{
	if (*fd < 0)
		return;
	if (*on_loop)
		tl_loop_del_io(x->loop, *fd);
	*on_loop = false;
	close(*fd);
	*fd = -1;
}

static void kx_close_out(struct tl_kexec *x)
{
	kx_close(x, &x->child.out_fd, &x->out_on_loop);
}

static void kx_close_pid(struct tl_kexec *x)
{
	kx_close(x, &x->child.pid_fd, &x->pid_on_loop);
}

void tl_kexec_free(struct tl_kexec *x)
{
	if (!x)
		return;
	kx_close_out(x);
	kx_close_pid(x);
	tl_child_kill(&x->child);
	tl_timer_free(x->timer);
	free(x->command);
	free(x->buf);
	free(x);
}

/* entry "NAME=value": is NAME set by one of env? */
static bool env_overridden(char *const *env, const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t n = eq ? (size_t)(eq - entry) : strlen(entry);

	for (; env && *env; env++)
		if (strncmp(*env, entry, n) == 0 && (*env)[n] == '=')
			return true;
	return false;
}

static int kx_spawn(struct tl_kexec *x, const struct tl_kube_exec *e, char *msg, size_t msglen)
{
	char **envp = NULL, *info = NULL;
	size_t nenv = 0, nadd = 0, k = 0;
	int r;

	for (char **p = environ; p && *p; p++)
		nenv++;
	for (char **p = e->env; p && *p; p++)
		nadd++;
	envp = calloc(nenv + nadd + 2, sizeof(char *));
	if (!envp)
		return -ENOMEM;
	if (asprintf(&info,
		     "KUBERNETES_EXEC_INFO={\"apiVersion\":\"%s\",\"kind\":\"ExecCredential\","
		     "\"spec\":{\"interactive\":false}}",
		     e->api_version) < 0) {
		info = NULL;
		r = -ENOMEM;
		goto out;
	}
	/* The kubeconfig's env entries override the inherited ones, as
	 * client-go does: with two NAME= entries getenv() takes the first. */
	for (char **p = environ; p && *p; p++)
		if (strncmp(*p, "KUBERNETES_EXEC_INFO=", 21) != 0 && !env_overridden(e->env, *p))
			envp[k++] = *p;
	for (char **p = e->env; p && *p; p++)
		envp[k++] = *p;
	envp[k++] = info;
	envp[k] = NULL;

	/* Searched in PATH as kubectl does. A pidfd tells the loop of the
	 * exit; without one (kernel < 5.3) the exit is polled. */
	r = tl_child_spawn(e->command, true, e->argv, envp, &x->child);
	if (r < 0) {
		snprintf(msg, msglen, "cannot run %s: %s", e->command, strerror(-r));
		goto out;
	}
	x->deadline_ms = tl_now_mono_ms() +
			 (uint64_t)(e->timeout_ms > 0 ? e->timeout_ms : KX_TIMEOUT_MS);
out:
	free(info);
	free(envp);
	return r;
}

static int kx_new(const struct tl_kube_exec *e, struct tl_kexec **ret)
{
	struct tl_kexec *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->child.pid = -1;
	x->child.out_fd = x->child.pid_fd = -1;
	x->command = strdup(e->command);
	x->buf = malloc(KX_MAX_OUTPUT + 1);
	if (!x->command || !x->buf) {
		tl_kexec_free(x);
		return -ENOMEM;
	}
	*ret = x;
	return 0;
}

/* Reads what is there: 1 at the end of output, 0 for more to come. */
static int kx_read(struct tl_kexec *x, char *msg, size_t msglen)
{
	for (;;) {
		ssize_t n = read(x->child.out_fd, x->buf + x->len, KX_MAX_OUTPUT - x->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0)
			return -errno;
		if (n == 0) {
			kx_close_out(x);
			return 1;
		}
		x->len += (size_t)n;
		if (x->len >= KX_MAX_OUTPUT) {
			snprintf(msg, msglen, "%s: output too large", x->command);
			return -EFBIG;
		}
	}
}

/* 1 once the child is reaped. */
static int kx_reap(struct tl_kexec *x)
{
	int r = tl_child_reap(&x->child, &x->status);

	if (r == 1)
		kx_close_pid(x);
	return r;
}

/* After end of output and exit: the output, or why not. */
static int kx_result(struct tl_kexec *x, char **ret_out, char *msg, size_t msglen)
{
	if (!WIFEXITED(x->status) || WEXITSTATUS(x->status) != 0) {
		snprintf(msg, msglen, "%s failed (status %d)", x->command,
			 WIFEXITED(x->status) ? WEXITSTATUS(x->status) : 128 + WTERMSIG(x->status));
		return -EIO;
	}
	x->buf[x->len] = '\0';
	*ret_out = x->buf;
	x->buf = NULL;
	return 0;
}

int tl_kexec_run(const struct tl_kube_exec *e, char **ret_out, char *msg, size_t msglen)
{
	struct tl_kexec *x;
	int r;

	r = kx_new(e, &x);
	if (r < 0)
		return r;
	r = kx_spawn(x, e, msg, msglen);
	while (r == 0) {
		struct pollfd p = { .fd = x->child.out_fd >= 0 ? x->child.out_fd : x->child.pid_fd, .events = POLLIN };
		uint64_t now = tl_now_mono_ms();
		int wait;

		if (x->child.out_fd < 0) {
			r = kx_reap(x);
			if (r != 0)
				break;
		}
		if (now >= x->deadline_ms) {
			snprintf(msg, msglen, "%s timed out", x->command);
			r = -ETIMEDOUT;
			break;
		}
		wait = (int)(x->deadline_ms - now);
		if (p.fd < 0) { /* no pidfd: poll the exit */
			p.fd = -1;
			if (wait > KX_REAP_POLL_MS)
				wait = KX_REAP_POLL_MS;
		}
		if (poll(&p, 1, wait) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (x->child.out_fd >= 0) {
			r = kx_read(x, msg, msglen);
			if (r > 0)
				r = 0;
		}
	}
	if (r > 0)
		r = kx_result(x, ret_out, msg, msglen);
	tl_kexec_free(x);
	return r;
}

static void kx_finish(struct tl_kexec *x, int res, const char *msg)
{
	char *out = NULL;
	char m[256];

	snprintf(m, sizeof(m), "%s", msg ? msg : "");
	if (res == 0)
		res = kx_result(x, &out, m, sizeof(m));
	kx_close_out(x);
	kx_close_pid(x);
	tl_child_kill(&x->child);
	tl_timer_disarm(x->timer);
	x->done(x->userdata, res, out, m[0] ? m : strerror(-res));
}

/* Output ended: now the exit. */
static void kx_await_exit(struct tl_kexec *x)
{
	int r = kx_reap(x);

	if (r != 0) {
		kx_finish(x, r < 0 ? r : 0, NULL);
		return;
	}
	if (x->child.pid_fd >= 0)
		return; /* already on the loop */
	tl_timer_arm(x->timer, KX_REAP_POLL_MS, 0);
}

static int kx_out_cb(struct tl_loop *loop _unused_, int fd _unused_, uint32_t events _unused_,
		     void *userdata)
{
	struct tl_kexec *x = userdata;
	char msg[256] = "";
	int r = kx_read(x, msg, sizeof(msg));

	if (r < 0)
		kx_finish(x, r, msg);
	else if (r > 0)
		kx_await_exit(x);
	return 0;
}

static int kx_pid_cb(struct tl_loop *loop _unused_, int fd _unused_, uint32_t events _unused_,
		     void *userdata)
{
	struct tl_kexec *x = userdata;
	int r;

	/* the exit may come before the end of output is read: that is the
	 * out callback's to notice */
	if (x->child.out_fd >= 0) {
		kx_close_pid(x);
		return 0;
	}
	r = kx_reap(x);
	if (r != 0)
		kx_finish(x, r < 0 ? r : 0, NULL);
	return 0;
}

static void kx_timer_cb(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *userdata)
{
	struct tl_kexec *x = userdata;
	uint64_t now = tl_now_mono_ms();
	char msg[256];

	if (x->child.out_fd < 0) {
		int r = kx_reap(x);

		if (r != 0) {
			kx_finish(x, r < 0 ? r : 0, NULL);
			return;
		}
	}
	if (now >= x->deadline_ms) {
		snprintf(msg, sizeof(msg), "%s timed out", x->command);
		kx_finish(x, -ETIMEDOUT, msg);
		return;
	}
	/* polling the exit (no pidfd) or waiting for the deadline */
	tl_timer_arm(x->timer, x->child.out_fd < 0 && x->child.pid_fd < 0 &&
				       x->deadline_ms - now > KX_REAP_POLL_MS ?
			       KX_REAP_POLL_MS : x->deadline_ms - now, 0);
}

int tl_kexec_start(struct tl_loop *loop, const struct tl_kube_exec *e, tl_kexec_done_cb done,
		   void *userdata, struct tl_kexec **ret, char *msg, size_t msglen)
{
	struct tl_kexec *x;
	int r;

	r = kx_new(e, &x);
	if (r < 0)
		return r;
	x->loop = loop;
	x->done = done;
	x->userdata = userdata;
	r = kx_spawn(x, e, msg, msglen);
	if (r < 0)
		goto fail;
	r = tl_loop_add_timer(loop, x->deadline_ms - tl_now_mono_ms() + 1, 0, kx_timer_cb, x,
			      &x->timer);
	if (r < 0)
		goto fail;
	r = tl_loop_add_io(loop, x->child.out_fd, EPOLLIN, kx_out_cb, x);
	if (r < 0)
		goto fail;
	x->out_on_loop = true;
	if (x->child.pid_fd >= 0) {
		r = tl_loop_add_io(loop, x->child.pid_fd, EPOLLIN, kx_pid_cb, x);
		if (r < 0)
			goto fail;
		x->pid_on_loop = true;
	}
	*ret = x;
	return 0;
fail:
	tl_kexec_free(x);
	return r;
}
