/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kubeconfig.h"

/* The credentials of a parsed kubeconfig (kubeconfig.h) kept fresh: the
 * credentials in force, the plugin runs and who waits for them are this
 * object's; the kubeconfig, only read, must outlive it. */
struct tl_kube_auth;
struct tl_loop;

int tl_kube_auth_new(const struct tl_kubeconfig *kc, struct tl_kube_auth **ret);
/* Kills a plugin still running; frees the credentials in force. Accepts
 * NULL. */
void tl_kube_auth_free(struct tl_kube_auth *a);

/* Called when an exec plugin run on the loop ended (well or not): whoever
 * got -EAGAIN asks again. */
typedef void (*tl_kube_creds_cb)(void *userdata);

/* Current credentials: re-reads a token file older than
 * TL_KUBE_TOKEN_REREAD_MS, re-runs an exec plugin from TL_KUBE_EXEC_EARLY_NS
 * before its expiration, and does both when force is set (the same as
 * tl_kube_auth_invalidate() of the credentials in force). On failure the
 * previous credentials stay in force, err says why, and -errno is returned.
 * The credentials returned stay valid until the next call.
 *
 * Exec plugin re-runs are rate-limited: after a run that gave nothing
 * usable (it failed, or its credential was already expired or about to
 * be) the next waits TL_KUBE_EXEC_RETRY_MS, doubling up to
 * TL_KUBE_EXEC_RETRY_MAX_MS; a credential rejected (401) within
 * TL_KUBE_EXEC_REJECT_MIN_MS of its issue is not replaced sooner than that
 * (the caller's own backoff after a 401 bounds the rest).
 * While rate-limited an expiring credential stays in use.
 *
 * Before tl_kube_auth_attach() a plugin runs to its end (blocking, for
 * the start-up and tools). After it a plugin runs on the loop: the call
 * returns at once, -EAGAIN (err naming the last failure, if any) when there
 * is nothing to send yet (no credential, or the one in force was rejected
 * or has expired) while a run is under way or scheduled; subscribers hear
 * when it ends. */
int tl_kube_auth_credentials(struct tl_kube_auth *a, bool force, uint64_t now_mono_ms,
			     const struct tl_kube_creds **ret, char *err, size_t errlen);

#define TL_KUBE_EXEC_EARLY_NS (10LL * 1000000000LL)
#define TL_KUBE_EXEC_RETRY_MS 10000
#define TL_KUBE_EXEC_RETRY_MAX_MS 300000
#define TL_KUBE_EXEC_REJECT_MIN_MS 1000

/* Exec plugins run on loop from now on. -errno. */
int tl_kube_auth_attach(struct tl_kube_auth *a, struct tl_loop *loop);
/* A 401 answered a request made with credentials of this generation: they
 * are replaced at the next opportunity (once, however many requests
 * failed with them). Older generations are ignored. */
void tl_kube_auth_invalidate(struct tl_kube_auth *a, uint64_t generation, uint64_t now_mono_ms);
int tl_kube_auth_subscribe(struct tl_kube_auth *a, tl_kube_creds_cb cb, void *userdata);
void tl_kube_auth_unsubscribe(struct tl_kube_auth *a, tl_kube_creds_cb cb, void *userdata);

/* Exposed for tests and fuzzing: an exec plugin's output (an
 * ExecCredential) into c, which the caller clears; 0, or -EINVAL with msg
 * saying why (c may then hold parts, still the caller's to clear). */
int tl_kube_exec_credential_parse(const char *out, struct tl_kube_creds *c, char *msg,
				  size_t msglen);
