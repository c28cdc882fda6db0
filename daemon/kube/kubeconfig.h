/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the API server is and how to authenticate to it: from a kubeconfig
 * file (current-context only) or from the in-cluster service account.
 * Errors come back as one line naming the file and the key. */

struct tl_kube_exec {
	char *command;
	char **argv;  /* NULL-terminated, argv[0] = command */
	char **env;   /* NULL-terminated "NAME=value" added to ours */
	char *api_version;
	int timeout_ms; /* the whole run, output and exit; 0 = 30 s */
};

/* Credentials in force; owned by the tl_kubeconfig. */
struct tl_kube_creds {
	char *token;          /* bearer token or NULL */
	char *cert_pem;       /* client certificate (PEM bytes) or NULL */
	size_t cert_pem_len;
	char *key_pem;
	size_t key_pem_len;
	int64_t expires_ns;   /* exec credentials: expirationTimestamp, 0 = none */
	uint64_t generation;  /* changes whenever the credentials do */
};

struct tl_loop;
struct kc_exec_state;
/* Called when an exec plugin run on the loop ended (well or not): whoever
 * got -EAGAIN asks again. */
typedef void (*tl_kube_creds_cb)(void *userdata);

struct tl_kubeconfig {
	char *source;          /* the file, or "in-cluster config" */
	char *dir;             /* relative paths are relative to this */
	char *server;          /* "https://host:port", no trailing slash */
	char *ca_file;
	char *ca_pem;          /* certificate-authority-data, decoded */
	size_t ca_pem_len;
	bool insecure;
	char *tls_server_name;
	char *token;
	char *token_file;
	char *token_file_key;  /* the key that named it, for messages */
	char *cert_file, *key_file;
	char *cert_pem, *key_pem;
	size_t cert_pem_len, key_pem_len;
	struct tl_kube_exec *exec;
	char *exec_key;

	/* refreshed by tl_kubeconfig_credentials() */
	struct tl_kube_creds creds;
	uint64_t creds_mono_ms; /* when last read; 0 = never */
	struct kc_exec_state *exec_state;
};

#define TL_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
/* Projected tokens rotate; client-go re-reads at most this old a copy. */
#define TL_KUBE_TOKEN_REREAD_MS 60000

int tl_kubeconfig_load(const char *path, struct tl_kubeconfig **ret, char *err, size_t errlen);
/* In-cluster: $KUBERNETES_SERVICE_HOST/PORT and sa_dir/{token,ca.crt};
 * sa_dir NULL = TL_KUBE_SA_DIR. */
int tl_kubeconfig_in_cluster(const char *sa_dir, struct tl_kubeconfig **ret, char *err,
			     size_t errlen);
void tl_kubeconfig_free(struct tl_kubeconfig *kc);

/* Current credentials: re-reads a token file older than
 * TL_KUBE_TOKEN_REREAD_MS, re-runs an exec plugin from TL_KUBE_EXEC_EARLY_NS
 * before its expiration, and does both when force is set (the same as
 * tl_kubeconfig_invalidate() of the credentials in force). On failure the
 * previous credentials stay in force, err says why, and -errno is returned.
 *
 * Exec plugin re-runs are rate-limited: after a run that gave nothing
 * usable (it failed, or its credential was already expired or about to
 * be) the next waits TL_KUBE_EXEC_RETRY_MS, doubling up to
 * TL_KUBE_EXEC_RETRY_MAX_MS; a credential rejected (401) within
 * TL_KUBE_EXEC_REJECT_MIN_MS of its issue is not replaced sooner than that
 * (the caller's own backoff after a 401 bounds the rest).
 * While rate-limited an expiring credential stays in use.
 *
 * Before tl_kubeconfig_attach() a plugin runs to its end (blocking, for
 * the start-up and tools). After it a plugin runs on the loop: the call
 * returns at once, -EAGAIN (err naming the last failure, if any) when there
 * is nothing to send yet (no credential, or the one in force was rejected
 * or has expired) while a run is under way or scheduled; subscribers hear
 * when it ends. */
int tl_kubeconfig_credentials(struct tl_kubeconfig *kc, bool force, uint64_t now_mono_ms,
			      const struct tl_kube_creds **ret, char *err, size_t errlen);

#define TL_KUBE_EXEC_EARLY_NS (10LL * 1000000000LL)
#define TL_KUBE_EXEC_RETRY_MS 10000
#define TL_KUBE_EXEC_RETRY_MAX_MS 300000
#define TL_KUBE_EXEC_REJECT_MIN_MS 1000

/* Exec plugins run on loop from now on. -errno. */
int tl_kubeconfig_attach(struct tl_kubeconfig *kc, struct tl_loop *loop);
/* A 401 answered a request made with credentials of this generation: they
 * are replaced at the next opportunity (once, however many requests
 * failed with them). Older generations are ignored. */
void tl_kubeconfig_invalidate(struct tl_kubeconfig *kc, uint64_t generation,
			      uint64_t now_mono_ms);
int tl_kubeconfig_subscribe(struct tl_kubeconfig *kc, tl_kube_creds_cb cb, void *userdata);
void tl_kubeconfig_unsubscribe(struct tl_kubeconfig *kc, tl_kube_creds_cb cb, void *userdata);

/* Exposed for tests: decode base64 (whitespace ignored). 0 or -EINVAL. */
int tl_base64_decode(const char *in, char **ret, size_t *ret_len);
