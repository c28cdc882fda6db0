/* SPDX-License-Identifier: Apache-2.0 */
/* The kubeconfig parser: a file (current-context only) or the in-cluster
 * service account, into a tl_kubeconfig. Keeping credentials fresh (token
 * re-reads, exec plugins) is kube-creds.c's. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "fileio.h"
#include "kubeconfig.h"
#include "macro.h"

#define KC_MAX_FILE (4u << 20)      /* kubeconfig, certificates */

void tl_kubeconfig_escape(char *buf, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char out[1024];
	size_t o = 0;

	if (!buf || !len)
		return;
	for (const unsigned char *p = (const unsigned char *)buf; *p; p++) {
		bool ctl = *p < 0x20 || *p == 0x7f;
		size_t need = ctl ? 4 : 1;

		if (o + need + 1 > sizeof(out) || o + need + 1 > len)
			break; /* truncated: the line is for people */
		if (ctl) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		} else {
			out[o++] = (char)*p;
		}
	}
	out[o] = '\0';
	memcpy(buf, out, o + 1);
}

void tl_kubeconfig_err(char *err, size_t errlen, const char *source, const char *key,
		       const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (key)
		snprintf(err, errlen, "kubeconfig %s: key %s: %s", source, key, msg);
	else
		snprintf(err, errlen, "kubeconfig %s: %s", source, msg);
	tl_kubeconfig_escape(err, errlen);
}

bool tl_kube_token_ok(const char *t)
{
	if (!t || !*t)
		return false;
	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return false;
	return true;
}

const char *tl_kubeconfig_errstr(int r)
{
	return r == -EFBIG ? "file too large" : strerror(-r);
}

int tl_base64_decode(const char *in, char **ret, size_t *ret_len)
{
	size_t inlen = strlen(in), o = 0;
	unsigned int acc = 0;
	int bits = 0, pad = 0;
	char *out;

	out = malloc(inlen / 4 * 3 + 4);
	if (!out)
		return -ENOMEM;
	for (const char *p = in; *p; p++) {
		int v;
		char c = *p;

		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		if (pad)
			goto bad; /* data after padding */
		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '+' || c == '-')
			v = 62;
		else if (c == '/' || c == '_')
			v = 63;
		else
			goto bad;
		acc = (acc << 6) | (unsigned int)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	/* leftover bits must be padding zeros, and a lone 6-bit group is invalid */
	if (bits >= 6 || pad > 2 || (acc & ((1u << bits) - 1)) != 0)
		goto bad;
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	return 0;
bad:
	free(out);
	return -EINVAL;
}

/* ---- YAML document helpers ---- */

static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);

		if (k && k->type == YAML_SCALAR_NODE &&
		    strlen(key) == k->data.scalar.length &&
		    memcmp(k->data.scalar.value, key, k->data.scalar.length) == 0)
			return yaml_document_get_node(doc, p->value);
	}
	return NULL;
}

static bool scalar_is_null(yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;

	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (n->data.scalar.length == 0 || strcmp(v, "null") == 0 || strcmp(v, "~") == 0);
}

struct kc_ctx {
	yaml_document_t *doc;
	const char *source;
	char *err;
	size_t errlen;
};

/* A string value: absent or null -> *ret NULL and 0; not a scalar -> error. */
static int get_str(struct kc_ctx *c, yaml_node_t *map, const char *prefix, const char *key,
		   char **ret)
{
	yaml_node_t *n = map_get(c->doc, map, key);

	*ret = NULL;
	if (!n || (n->type == YAML_SCALAR_NODE && scalar_is_null(n)))
		return 0;
	if (n->type != YAML_SCALAR_NODE) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.%s: expected a string",
			 c->source, prefix, key);
		return -EINVAL;
	}
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length)) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.%s: contains a NUL byte",
			 c->source, prefix, key);
		return -EINVAL;
	}
	*ret = strndup((const char *)n->data.scalar.value, n->data.scalar.length);
	return *ret ? 0 : -ENOMEM;
}

/* A list: absent or null -> *ret NULL, *ret_n 0 and 0; not a sequence ->
 * error. */
static int get_list(struct kc_ctx *c, yaml_node_t *map, const char *prefix, const char *key,
		    yaml_node_t **ret, size_t *ret_n)
{
	yaml_node_t *n = map_get(c->doc, map, key);

	*ret = NULL;
	*ret_n = 0;
	if (!n || (n->type == YAML_SCALAR_NODE && scalar_is_null(n)))
		return 0;
	if (n->type != YAML_SEQUENCE_NODE) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.%s: expected a list", c->source,
			 prefix, key);
		return -EINVAL;
	}
	*ret = n;
	*ret_n = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	return 0;
}

static int get_bool(struct kc_ctx *c, yaml_node_t *map, const char *prefix, const char *key,
		    bool *ret)
{
	char *s;
	int r = get_str(c, map, prefix, key, &s);

	if (r < 0)
		return r;
	*ret = false;
	if (!s)
		return 0;
	if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
		*ret = true;
	else if (strcmp(s, "false") != 0 && strcmp(s, "False") != 0 && strcmp(s, "FALSE") != 0)
		r = -EINVAL;
	if (r < 0)
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.%s: expected true or false, got \"%.64s\"",
			 c->source, prefix, key, s);
	free(s);
	return r;
}

/* Finds the entry of a named list ("clusters", "users", "contexts") whose
 * name is name; fills ret_key with "clusters[i]" and returns the inner map
 * under inner ("cluster"). */
static int find_named(struct kc_ctx *c, yaml_node_t *root, const char *list, const char *inner,
		      const char *name, const char *ref_key, yaml_node_t **ret, char *ret_key,
		      size_t keylen)
{
	yaml_node_t *seq = map_get(c->doc, root, list);
	int i = 0;

	if (!seq || (seq->type == YAML_SCALAR_NODE && scalar_is_null(seq))) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s: missing (needed for %s \"%s\")",
			 c->source, list, ref_key, name);
		return -ENOENT;
	}
	if (seq->type != YAML_SEQUENCE_NODE) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s: expected a list", c->source,
			 list);
		return -EINVAL;
	}
	for (yaml_node_item_t *it = seq->data.sequence.items.start;
	     it < seq->data.sequence.items.top; it++, i++) {
		yaml_node_t *e = yaml_document_get_node(c->doc, *it);
		yaml_node_t *n = map_get(c->doc, e, "name");
		yaml_node_t *in;

		if (!n || n->type != YAML_SCALAR_NODE ||
		    strlen(name) != n->data.scalar.length ||
		    memcmp(n->data.scalar.value, name, n->data.scalar.length) != 0)
			continue;
		snprintf(ret_key, keylen, "%s[%d].%s", list, i, inner);
		in = map_get(c->doc, e, inner);
		if (!in || in->type != YAML_MAPPING_NODE) {
			snprintf(c->err, c->errlen, "kubeconfig %s: key %s: missing or not a map",
				 c->source, ret_key);
			return -EINVAL;
		}
		*ret = in;
		return 0;
	}
	snprintf(c->err, c->errlen, "kubeconfig %s: key %s: no entry named \"%s\" (from %s)",
		 c->source, list, name, ref_key);
	return -ENOENT;
}

static char *resolve_path(const char *dir, const char *p)
{
	char *out;

	if (p[0] == '/' || !dir)
		return strdup(p);
	if (asprintf(&out, "%s/%s", dir, p) < 0)
		return NULL;
	return out;
}

/* A file path key: resolved against the kubeconfig's directory, and checked
 * readable now so a typo is reported at start, not at the first request. */
static int get_path(struct kc_ctx *c, yaml_node_t *map, const char *prefix, const char *key,
		    const char *dir, char **ret)
{
	char *s, *p;
	int r = get_str(c, map, prefix, key, &s);

	*ret = NULL;
	if (r < 0 || !s)
		return r;
	if (!*s) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.%s: empty path", c->source, prefix,
			 key);
		free(s);
		return -EINVAL;
	}
	p = resolve_path(dir, s);
	free(s);
	if (!p)
		return -ENOMEM;
	if (access(p, R_OK) < 0) {
		r = -errno;
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.%s: cannot read %s: %s", c->source,
			 prefix, key, p, strerror(-r));
		free(p);
		return r;
	}
	*ret = p;
	return 0;
}

static int get_b64(struct kc_ctx *c, yaml_node_t *map, const char *prefix, const char *key,
		   char **ret, size_t *ret_len)
{
	char *s;
	int r = get_str(c, map, prefix, key, &s);

	*ret = NULL;
	*ret_len = 0;
	if (r < 0 || !s)
		return r;
	r = tl_base64_decode(s, ret, ret_len);
	free(s);
	if (r == 0 && *ret_len == 0) {
		free(*ret);
		*ret = NULL;
		r = -EINVAL;
	}
	if (r == -EINVAL)
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.%s: not valid base64 data",
			 c->source, prefix, key);
	return r;
}

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static void exec_free(struct tl_kube_exec *e)
{
	if (!e)
		return;
	free(e->command);
	strv_free(e->argv);
	strv_free(e->env);
	free(e->api_version);
	free(e);
}

static int parse_exec(struct kc_ctx *c, yaml_node_t *ex, const char *key, const char *dir,
		      struct tl_kube_exec **ret)
{
	struct tl_kube_exec *e;
	yaml_node_t *args, *env;
	size_t n = 0;
	int r;

	if (ex->type != YAML_MAPPING_NODE) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s: expected a map", c->source, key);
		return -EINVAL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	r = get_str(c, ex, key, "command", &e->command);
	if (r < 0)
		goto fail;
	if (!e->command || !*e->command) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.command: missing", c->source, key);
		r = -EINVAL;
		goto fail;
	}
	/* kubectl: a command with a path separator is relative to the file */
	if (strchr(e->command, '/') && e->command[0] != '/') {
		char *p = resolve_path(dir, e->command);

		if (!p) {
			r = -ENOMEM;
			goto fail;
		}
		free(e->command);
		e->command = p;
	}
	r = get_str(c, ex, key, "apiVersion", &e->api_version);
	if (r < 0)
		goto fail;
	if (!e->api_version) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.apiVersion: missing", c->source,
			 key);
		r = -EINVAL;
		goto fail;
	}
	r = get_list(c, ex, key, "args", &args, &n);
	if (r < 0)
		goto fail;
	e->argv = calloc(n + 2, sizeof(char *));
	if (!e->argv) {
		r = -ENOMEM;
		goto fail;
	}
	e->argv[0] = strdup(e->command);
	if (!e->argv[0]) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *a = yaml_document_get_node(c->doc, args->data.sequence.items.start[i]);

		if (!a || a->type != YAML_SCALAR_NODE) {
			snprintf(c->err, c->errlen, "kubeconfig %s: key %s.args[%zu]: expected a string",
				 c->source, key, i);
			r = -EINVAL;
			goto fail;
		}
		e->argv[i + 1] = strndup((const char *)a->data.scalar.value, a->data.scalar.length);
		if (!e->argv[i + 1]) {
			r = -ENOMEM;
			goto fail;
		}
	}
	r = get_list(c, ex, key, "env", &env, &n);
	if (r < 0)
		goto fail;
	e->env = calloc(n + 1, sizeof(char *));
	if (!e->env) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = yaml_document_get_node(c->doc, env->data.sequence.items.start[i]);
		char ikey[160], *name = NULL, *value = NULL;

		snprintf(ikey, sizeof(ikey), "%s.env[%zu]", key, i);
		r = get_str(c, item, ikey, "name", &name);
		if (r == 0)
			r = get_str(c, item, ikey, "value", &value);
		if (r == 0 && (!name || !*name || strchr(name, '='))) {
			snprintf(c->err, c->errlen, "kubeconfig %s: key %s.name: missing or invalid",
				 c->source, ikey);
			r = -EINVAL;
		}
		if (r == 0 && asprintf(&e->env[i], "%s=%s", name, value ? value : "") < 0) {
			e->env[i] = NULL;
			r = -ENOMEM;
		}
		free(name);
		free(value);
		if (r < 0)
			goto fail;
	}
	*ret = e;
	return 0;
fail:
	exec_free(e);
	return r;
}

void tl_kubeconfig_free(struct tl_kubeconfig *kc)
{
	if (!kc)
		return;
	free(kc->source);
	free(kc->dir);
	free(kc->server);
	free(kc->ns);
	free(kc->ca_file);
	free(kc->ca_pem);
	free(kc->tls_server_name);
	free(kc->token);
	free(kc->token_file);
	free(kc->token_file_key);
	free(kc->cert_file);
	free(kc->key_file);
	free(kc->cert_pem);
	free(kc->key_pem);
	exec_free(kc->exec);
	free(kc->exec_key);
	free(kc);
}

static int check_server(struct kc_ctx *c, const char *key, const char *server)
{
	const char *host;

	if (strncmp(server, "https://", 8) == 0)
		host = server + 8;
	else if (strncmp(server, "http://", 7) == 0)
		host = server + 7;
	else {
		snprintf(c->err, c->errlen,
			 "kubeconfig %s: key %s.server: \"%.128s\" is not an http(s) URL", c->source,
			 key, server);
		return -EINVAL;
	}
	if (!*host || *host == '/' || strpbrk(server, " \t\r\n?#")) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.server: \"%.128s\" has no host",
			 c->source, key, server);
		return -EINVAL;
	}
	return 0;
}

static int kc_parse(struct kc_ctx *c, struct tl_kubeconfig *kc)
{
	yaml_node_t *root = yaml_document_get_root_node(c->doc), *ctx, *cl, *us, *ex;
	char *cur = NULL, *cluster = NULL, *user = NULL, *s = NULL;
	char ckey[64], clkey[64], ukey[64];
	int r;

	if (!root || root->type != YAML_MAPPING_NODE) {
		snprintf(c->err, c->errlen, "kubeconfig %s: not a YAML map", c->source);
		return -EINVAL;
	}
	r = get_str(c, root, "", "current-context", &cur);
	if (r < 0) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key current-context: expected a string",
			 c->source);
		goto out;
	}
	if (!cur || !*cur) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key current-context: missing", c->source);
		r = -EINVAL;
		goto out;
	}
	r = find_named(c, root, "contexts", "context", cur, "current-context", &ctx, ckey,
		       sizeof(ckey));
	if (r < 0)
		goto out;
	r = get_str(c, ctx, ckey, "cluster", &cluster);
	if (r < 0)
		goto out;
	if (!cluster) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.cluster: missing", c->source, ckey);
		r = -EINVAL;
		goto out;
	}
	r = get_str(c, ctx, ckey, "user", &user);
	if (r < 0)
		goto out;
	/* the context's default namespace, as kubectl uses it (the agent
	 * itself watches all namespaces and ignores it) */
	r = get_str(c, ctx, ckey, "namespace", &kc->ns);
	if (r < 0)
		goto out;
	if (kc->ns && (!*kc->ns || strlen(kc->ns) > 63 || strpbrk(kc->ns, "/ \t\r\n"))) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.namespace: not a namespace name",
			 c->source, ckey);
		r = -EINVAL;
		goto out;
	}
	{
		char ref[96];

		snprintf(ref, sizeof(ref), "%s.cluster", ckey);
		r = find_named(c, root, "clusters", "cluster", cluster, ref, &cl, clkey,
			       sizeof(clkey));
		if (r < 0)
			goto out;
	}
	r = get_str(c, cl, clkey, "server", &kc->server);
	if (r < 0)
		goto out;
	if (!kc->server || !*kc->server) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.server: missing", c->source, clkey);
		r = -EINVAL;
		goto out;
	}
	r = check_server(c, clkey, kc->server);
	if (r < 0)
		goto out;
	while (strlen(kc->server) > 8 && kc->server[strlen(kc->server) - 1] == '/')
		kc->server[strlen(kc->server) - 1] = '\0';
	r = get_path(c, cl, clkey, "certificate-authority", kc->dir, &kc->ca_file);
	if (r < 0)
		goto out;
	r = get_b64(c, cl, clkey, "certificate-authority-data", &kc->ca_pem, &kc->ca_pem_len);
	if (r < 0)
		goto out;
	r = get_bool(c, cl, clkey, "insecure-skip-tls-verify", &kc->insecure);
	if (r < 0)
		goto out;
	r = get_str(c, cl, clkey, "tls-server-name", &kc->tls_server_name);
	if (r < 0)
		goto out;
	if (kc->tls_server_name && (!*kc->tls_server_name ||
				    strpbrk(kc->tls_server_name, ":/ \t\r\n"))) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.tls-server-name: not a host name",
			 c->source, clkey);
		r = -EINVAL;
		goto out;
	}

	if (!user || !*user) {
		/* no user: anonymous, which an API server may allow */
		r = 0;
		goto out;
	}
	{
		char ref[96];

		snprintf(ref, sizeof(ref), "%s.user", ckey);
		r = find_named(c, root, "users", "user", user, ref, &us, ukey, sizeof(ukey));
		if (r < 0)
			goto out;
	}
	r = get_str(c, us, ukey, "token", &kc->token);
	if (r < 0)
		goto out;
	if (kc->token && !tl_kube_token_ok(kc->token)) {
		snprintf(c->err, c->errlen,
			 "kubeconfig %s: key %s.token: not a bearer token (spaces or control characters)",
			 c->source, ukey);
		r = -EINVAL;
		goto out;
	}
	r = get_path(c, us, ukey, "tokenFile", kc->dir, &kc->token_file);
	if (r < 0)
		goto out;
	if (kc->token_file && asprintf(&kc->token_file_key, "%s.tokenFile", ukey) < 0) {
		kc->token_file_key = NULL;
		r = -ENOMEM;
		goto out;
	}
	r = get_path(c, us, ukey, "client-certificate", kc->dir, &kc->cert_file);
	if (r < 0)
		goto out;
	r = get_path(c, us, ukey, "client-key", kc->dir, &kc->key_file);
	if (r < 0)
		goto out;
	r = get_b64(c, us, ukey, "client-certificate-data", &kc->cert_pem, &kc->cert_pem_len);
	if (r < 0)
		goto out;
	r = get_b64(c, us, ukey, "client-key-data", &kc->key_pem, &kc->key_pem_len);
	if (r < 0)
		goto out;
	if ((kc->cert_file || kc->cert_pem) != (kc->key_file || kc->key_pem)) {
		snprintf(c->err, c->errlen, "kubeconfig %s: key %s.%s: missing (a client %s needs it)",
			 c->source, ukey,
			 (kc->cert_file || kc->cert_pem) ? "client-key" : "client-certificate",
			 (kc->cert_file || kc->cert_pem) ? "certificate" : "key");
		r = -EINVAL;
		goto out;
	}
	ex = map_get(c->doc, us, "exec");
	if (ex && !(ex->type == YAML_SCALAR_NODE && scalar_is_null(ex))) {
		if (asprintf(&kc->exec_key, "%s.exec", ukey) < 0) {
			kc->exec_key = NULL;
			r = -ENOMEM;
			goto out;
		}
		r = parse_exec(c, ex, kc->exec_key, kc->dir, &kc->exec);
		if (r < 0)
			goto out;
	}
	/* auth-provider (gcp, oidc, azure) was removed from kubectl in 1.26 */
	if (map_get(c->doc, us, "auth-provider")) {
		snprintf(c->err, c->errlen,
			 "kubeconfig %s: key %s.auth-provider: not supported, use an exec plugin",
			 c->source, ukey);
		r = -EINVAL;
		goto out;
	}
	r = 0;
out:
	free(cur);
	free(cluster);
	free(user);
	free(s);
	return r;
}

int tl_kubeconfig_load(const char *path, struct tl_kubeconfig **ret, char *err, size_t errlen)
{
	struct tl_kubeconfig *kc = NULL;
	yaml_parser_t parser;
	yaml_document_t doc;
	bool parser_ok = false, doc_ok = false;
	char *buf = NULL, *slash;
	size_t len;
	struct kc_ctx c = { .doc = &doc, .source = path, .err = err, .errlen = errlen };
	int r;

	if (err && errlen)
		err[0] = '\0';
	r = tl_read_file(path, KC_MAX_FILE, &buf, &len);
	if (r < 0) {
		tl_kubeconfig_err(err, errlen, path, NULL, "cannot read: %s", tl_kubeconfig_errstr(r));
		return r;
	}
	kc = calloc(1, sizeof(*kc));
	if (!kc) {
		r = -ENOMEM;
		goto out;
	}
	kc->source = strdup(path);
	kc->dir = strdup(path);
	if (!kc->source || !kc->dir) {
		r = -ENOMEM;
		goto out;
	}
	slash = strrchr(kc->dir, '/');
	if (slash && slash != kc->dir)
		*slash = '\0';
	else if (slash)
		slash[1] = '\0';
	else
		strcpy(kc->dir, ".");
	if (!yaml_parser_initialize(&parser)) {
		r = -ENOMEM;
		goto out;
	}
	parser_ok = true;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		tl_kubeconfig_err(err, errlen, path, NULL, "line %zu: %s", parser.problem_mark.line + 1,
		       parser.problem ? parser.problem : "YAML syntax error");
		r = -EINVAL;
		goto out;
	}
	doc_ok = true;
	if (!yaml_document_get_root_node(&doc)) {
		tl_kubeconfig_err(err, errlen, path, NULL, "empty file");
		r = -EINVAL;
		goto out;
	}
	r = kc_parse(&c, kc);
	if (r == -ENOMEM)
		tl_kubeconfig_err(err, errlen, path, NULL, "out of memory");
	/* messages quote values of the file: one line, whatever they hold */
	if (r < 0)
		tl_kubeconfig_escape(err, errlen);
	if (r < 0)
		goto out;
	*ret = kc;
	kc = NULL;
out:
	if (doc_ok)
		yaml_document_delete(&doc);
	if (parser_ok)
		yaml_parser_delete(&parser);
	free(buf);
	tl_kubeconfig_free(kc);
	return r;
}

int tl_kubeconfig_in_cluster(const char *sa_dir, struct tl_kubeconfig **ret, char *err,
			     size_t errlen)
{
	const char *src = "in-cluster config";
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	struct tl_kubeconfig *kc;
	int r;

	if (!sa_dir)
		sa_dir = TL_KUBE_SA_DIR;
	if (!host || !*host || !port || !*port) {
		tl_kubeconfig_err(err, errlen, src, !host || !*host ? "KUBERNETES_SERVICE_HOST" :
			"KUBERNETES_SERVICE_PORT", "not set (not running in a Pod? use --kubeconfig)");
		return -ENOENT;
	}
	if (strspn(port, "0123456789") != strlen(port) || strlen(port) > 5) {
		tl_kubeconfig_err(err, errlen, src, "KUBERNETES_SERVICE_PORT", "not a port: \"%.32s\"", port);
		return -EINVAL;
	}
	kc = calloc(1, sizeof(*kc));
	if (!kc)
		return -ENOMEM;
	r = -ENOMEM;
	kc->source = strdup(src);
	kc->dir = strdup(sa_dir);
	if (strchr(host, ':')) /* IPv6 literal */
		r = asprintf(&kc->server, "https://[%s]:%s", host, port);
	else
		r = asprintf(&kc->server, "https://%s:%s", host, port);
	if (r < 0)
		kc->server = NULL;
	if (asprintf(&kc->ca_file, "%s/ca.crt", sa_dir) < 0)
		kc->ca_file = NULL;
	if (asprintf(&kc->token_file, "%s/token", sa_dir) < 0)
		kc->token_file = NULL;
	kc->token_file_key = strdup("serviceaccount token");
	if (!kc->source || !kc->dir || !kc->server || !kc->ca_file || !kc->token_file ||
	    !kc->token_file_key) {
		r = -ENOMEM;
		goto fail;
	}
	if (access(kc->ca_file, R_OK) < 0) {
		r = -errno;
		tl_kubeconfig_err(err, errlen, src, "ca.crt", "cannot read %s: %s", kc->ca_file, strerror(-r));
		goto fail;
	}
	if (access(kc->token_file, R_OK) < 0) {
		r = -errno;
		tl_kubeconfig_err(err, errlen, src, "token", "cannot read %s: %s", kc->token_file,
		       strerror(-r));
		goto fail;
	}
	*ret = kc;
	return 0;
fail:
	tl_kubeconfig_free(kc);
	return r;
}

