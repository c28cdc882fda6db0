/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stddef.h>

#include "kubeconfig.h"
#include "loop.h"

/* One run of a kubeconfig exec credential plugin: a child with stdin
 * /dev/null, stdout a pipe (at most 1 MiB is read), KUBERNETES_EXEC_INFO
 * added to the environment, killed at its deadline (e->timeout_ms, 0 =
 * 30 s). Exit and end of output are both awaited: a plugin that closes
 * its output but lingers is held to the same deadline. Started by
 * tl_child_spawn() (child.h): without the agent's blocked signals. */
struct tl_kexec;

/* The run is over and the child reaped. res 0: out is the plugin's output,
 * NUL-terminated, and now the callee's to free; or -errno (-ETIMEDOUT,
 * -EFBIG, -EIO for a non-zero exit...) with out NULL and msg saying why. The
 * tl_kexec may be freed from here. */
typedef void (*tl_kexec_done_cb)(void *userdata, int res, char *out, const char *msg);

/* On the loop: done() comes from a later iteration, never from inside this
 * call. A plugin that cannot be started fails here, msg saying why. */
int tl_kexec_start(struct tl_loop *loop, const struct tl_kube_exec *e, tl_kexec_done_cb done,
		   void *userdata, struct tl_kexec **ret, char *msg, size_t msglen);
/* Kills a plugin still running, without calling done(). Accepts NULL. */
void tl_kexec_free(struct tl_kexec *x);

/* The same run to its end, blocking: only where no loop runs yet. */
int tl_kexec_run(const struct tl_kube_exec *e, char **ret_out, char *msg, size_t msglen);
