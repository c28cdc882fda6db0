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

/* Credentials in force (kube-creds.h keeps them fresh). */
struct tl_kube_creds {
	char *token;          /* bearer token or NULL */
	char *cert_pem;       /* client certificate (PEM bytes) or NULL */
	size_t cert_pem_len;
	char *key_pem;
	size_t key_pem_len;
	int64_t expires_ns;   /* exec credentials: expirationTimestamp, 0 = none */
	uint64_t generation;  /* changes whenever the credentials do */
};


struct tl_kubeconfig {
	char *source;          /* the file, or "in-cluster config" */
	char *dir;             /* relative paths are relative to this */
	char *server;          /* "https://host:port", no trailing slash */
	char *ns;              /* the current context's namespace, NULL when unset */
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

/* One line "kubeconfig SOURCE: [key KEY: ]MESSAGE" into err, escaped with
 * tl_kubeconfig_escape(). */
void tl_kubeconfig_err(char *err, size_t errlen, const char *source, const char *key,
		       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
const char *tl_kubeconfig_errstr(int r);
/* Control characters (CR, LF, ESC...) of a message, which may quote values
 * of the file, of the environment or of a plugin, become \xNN in place
 * (truncated to len): a message is one line a log reader can trust. */
void tl_kubeconfig_escape(char *buf, size_t len);
/* A bearer token goes into an HTTP header: printable ASCII without spaces
 * only (RFC 6750's b64token is narrower still), so no value can end the
 * header and start another. */
bool tl_kube_token_ok(const char *t);

/* Exposed for tests: decode base64 (whitespace ignored). 0 or -EINVAL. */
int tl_base64_decode(const char *in, char **ret, size_t *ret_len);
