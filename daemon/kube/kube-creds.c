/* SPDX-License-Identifier: Apache-2.0 */
/* Credentials of a parsed kubeconfig kept fresh (kube-creds.h): the token
 * file re-read, exec credential plugins run (blocking before the loop
 * runs, on the loop after), rate-limited, and replaced after a 401. The
 * state is this object's; the kubeconfig is only read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "clock.h"
#include "fileio.h"
#include "kube-creds.h"
#include "kube-exec.h"
#include "kubeconfig.h"
#include "loop.h"
#include "macro.h"

#define KC_MAX_TOKEN (64u << 10)

struct kc_sub {
	tl_kube_creds_cb cb;
	void *userdata;
};

/* The credentials in force and how they are kept fresh; the exec fields
 * matter with a plugin. */
struct tl_kube_auth {
	const struct tl_kubeconfig *kc;
	struct tl_kube_creds creds;
	uint64_t creds_mono_ms; /* when last read; 0 = never */
	struct tl_loop *loop;  /* NULL: plugins run to their end, blocking */
	struct tl_kexec *run;  /* a plugin running on the loop */
	struct tl_timer *retry; /* the next permitted (or proactive) run */
	bool stale;            /* a 401 named the credentials in force */
	unsigned failures;     /* runs in a row that gave nothing usable */
	uint64_t next_ms;      /* no plugin run before this (monotonic) */
	uint64_t gen;
	int last_res;
	char last_err[512];
	struct kc_sub *subs;
	size_t nsubs;
};



static int read_token(const char *path, char **ret)
{
	char *buf, *end;
	size_t len;
	int r = tl_read_file(path, KC_MAX_TOKEN, &buf, &len);

	if (r < 0)
		return r;
	/* the file may end in a newline; tokens never contain whitespace */
	end = buf + len;
	while (end > buf && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' ||
			     end[-1] == '\t'))
		*--end = '\0';
	if (strlen(buf) != (size_t)(end - buf) || !tl_kube_token_ok(buf)) {
		free(buf);
		return -EBADMSG;
	}
	*ret = buf;
	return 0;
}

static int dup_json_str(struct json_object *o, const char *key, char **ret, size_t *ret_len)
{
	struct json_object *v;

	*ret = NULL;
	if (ret_len)
		*ret_len = 0;
	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0)
		return -EINVAL;
	*ret = strndup(json_object_get_string(v), (size_t)json_object_get_string_len(v));
	if (!*ret)
		return -ENOMEM;
	if (ret_len)
		*ret_len = (size_t)json_object_get_string_len(v);
	return 0;
}

/* ExecCredential: {"kind":"ExecCredential","status":{"token"|"clientCertificateData"+
 * "clientKeyData","expirationTimestamp"}} */
int tl_kube_exec_credential_parse(const char *out, struct tl_kube_creds *c, char *msg,
				  size_t msglen)
{
	struct json_tokener *tok = json_tokener_new_ex(32);
	struct json_object *o = NULL, *st, *v;
	int r = -EINVAL;

	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, out, (int)strlen(out));
	if (!o || !json_object_is_type(o, json_type_object)) {
		snprintf(msg, msglen, "plugin output is not a JSON object");
		goto out;
	}
	/* every field is the plugin's: kind may be null, a number, a map */
	if (!json_object_object_get_ex(o, "kind", &v) || !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "ExecCredential") != 0) {
		snprintf(msg, msglen, "plugin output is not an ExecCredential");
		goto out;
	}
	if (!json_object_object_get_ex(o, "status", &st) ||
	    !json_object_is_type(st, json_type_object)) {
		snprintf(msg, msglen, "ExecCredential has no status");
		goto out;
	}
	if (dup_json_str(st, "token", &c->token, NULL) < 0 ||
	    dup_json_str(st, "clientCertificateData", &c->cert_pem, &c->cert_pem_len) < 0 ||
	    dup_json_str(st, "clientKeyData", &c->key_pem, &c->key_pem_len) < 0) {
		snprintf(msg, msglen, "ExecCredential status has a malformed field");
		goto out;
	}
	if (c->token && !tl_kube_token_ok(c->token)) {
		snprintf(msg, msglen, "ExecCredential token has spaces or control characters");
		goto out;
	}
	if (!c->token && !(c->cert_pem && c->key_pem)) {
		snprintf(msg, msglen,
			 "ExecCredential status has neither token nor clientCertificateData+clientKeyData");
		goto out;
	}
	if ((c->cert_pem != NULL) != (c->key_pem != NULL)) {
		snprintf(msg, msglen, "ExecCredential status needs both client certificate and key");
		goto out;
	}
	c->expires_ns = 0;
	if (json_object_object_get_ex(st, "expirationTimestamp", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_string) ||
		    tl_time_parse(json_object_get_string(v), &c->expires_ns) < 0) {
			snprintf(msg, msglen, "ExecCredential expirationTimestamp is not RFC 3339");
			goto out;
		}
	}
	r = 0;
out:
	json_object_put(o);
	json_tokener_free(tok);
	return r;
}

static void creds_clear(struct tl_kube_creds *c)
{
	free(c->token);
	free(c->cert_pem);
	free(c->key_pem);
	memset(c, 0, sizeof(*c));
}

static bool creds_expiring(const struct tl_kube_creds *c, int64_t early_ns)
{
	return c->expires_ns && tl_now_real_ns() >= c->expires_ns - early_ns;
}

static bool exec_wanted(const struct tl_kube_auth *st)
{
	return st->creds_mono_ms == 0 || st->stale ||
	       creds_expiring(&st->creds, TL_KUBE_EXEC_EARLY_NS);
}

static bool exec_due(const struct tl_kube_auth *st,
		     uint64_t now_ms)
{
	return !st->run && exec_wanted(st) && now_ms >= st->next_ms;
}

/* A run ended: its credential replaces the one in force (even one already
 * expired: nothing better is at hand), and the next run is permitted at
 * once after a good credential, later and later after runs that gave
 * nothing usable, so a plugin that hands out expired credentials or fails
 * is not run for every request. */
static int exec_apply(struct tl_kube_auth *st, int res, char *out,
		      const char *msg, uint64_t now_ms)
{
	struct tl_kube_creds nc = { 0 };
	char m[256];

	snprintf(m, sizeof(m), "%s", msg ? msg : "");
	if (res == 0)
		res = tl_kube_exec_credential_parse(out, &nc, m, sizeof(m));
	free(out);
	if (res == 0) {
		creds_clear(&st->creds);
		st->creds = nc;
		st->creds.generation = ++st->gen;
		st->creds_mono_ms = now_ms ? now_ms : 1;
		st->stale = false;
		st->last_err[0] = '\0';
	} else {
		creds_clear(&nc);
		tl_kubeconfig_err(st->last_err, sizeof(st->last_err), st->kc->source, st->kc->exec_key,
				  "%s", m[0] ? m : strerror(-res));
	}
	st->last_res = res;
	if (res < 0 || creds_expiring(&st->creds, TL_KUBE_EXEC_EARLY_NS)) {
		uint64_t d = TL_KUBE_EXEC_RETRY_MS;

		for (unsigned i = 0; i < st->failures && d < TL_KUBE_EXEC_RETRY_MAX_MS; i++)
			d *= 2;
		if (d > TL_KUBE_EXEC_RETRY_MAX_MS)
			d = TL_KUBE_EXEC_RETRY_MAX_MS;
		if (st->failures < 32)
			st->failures++;
		st->next_ms = now_ms + d;
	} else {
		st->failures = 0;
		st->next_ms = now_ms;
	}
	return res;
}

/* The retry timer fires when a run is wanted and permitted, or, for a
 * good credential with an expiration, when it starts to expire. */
static void exec_arm_retry(struct tl_kube_auth *st, uint64_t now_ms)
{
	uint64_t at;

	if (!st->retry || !st->kc->exec || st->run)
		return;
	if (exec_wanted(st))
		at = st->next_ms;
	else if (st->creds.expires_ns) {
		int64_t left = st->creds.expires_ns - TL_KUBE_EXEC_EARLY_NS - tl_now_real_ns();

		at = now_ms + (left > 0 ? (uint64_t)left / 1000000 : 0) + 1;
		if (at < st->next_ms)
			at = st->next_ms;
	} else {
		tl_timer_disarm(st->retry);
		return;
	}
	tl_timer_arm(st->retry, at > now_ms ? at - now_ms : 1, 0);
}

static void exec_notify(struct tl_kube_auth *st)
{
	size_t n = st->nsubs;

	/* subscribers only schedule work here; none joins or leaves */
	for (size_t i = 0; i < n && i < st->nsubs; i++)
		st->subs[i].cb(st->subs[i].userdata);
}

static void exec_done(void *userdata, int res, char *out, const char *msg)
{
	struct tl_kube_auth *st = userdata;
	uint64_t now = tl_now_mono_ms();

	tl_kexec_free(st->run);
	st->run = NULL;
	exec_apply(st, res, out, msg, now);
	exec_arm_retry(st, now);
	exec_notify(st);
}

/* false when it could not even start (the failure is recorded) */
static bool exec_start(struct tl_kube_auth *st, uint64_t now_ms)
{
	char msg[256] = "";
	int r;

	r = tl_kexec_start(st->loop, st->kc->exec, exec_done, st, &st->run, msg, sizeof(msg));
	if (r == 0)
		return true;
	st->run = NULL;
	exec_apply(st, r, NULL, msg, now_ms);
	exec_arm_retry(st, now_ms);
	return false;
}

static void exec_retry_cb(struct tl_loop *loop _unused_, struct tl_timer *t _unused_,
			  void *userdata)
{
	struct tl_kube_auth *st = userdata;
	uint64_t now = tl_now_mono_ms();

	if (!exec_due(st, now))
		exec_arm_retry(st, now);
	else if (!exec_start(st, now))
		exec_notify(st);
}

static int exec_credentials(struct tl_kube_auth *st, uint64_t now_ms,
			    char *err, size_t errlen)
{
	bool have;

	if (!st->loop) {
		if (exec_due(st, now_ms)) {
			char msg[256] = "", *out = NULL;
			int r = tl_kexec_run(st->kc->exec, &out, msg, sizeof(msg));

			r = exec_apply(st, r, r == 0 ? out : NULL, msg, now_ms);
			if (r < 0) {
				snprintf(err, errlen, "%s", st->last_err);
				return r;
			}
		}
		if (st->creds_mono_ms)
			return 0;
		snprintf(err, errlen, "%s", st->last_err);
		return st->last_res < 0 ? st->last_res : -EAGAIN;
	}
	if (exec_due(st, now_ms))
		exec_start(st, now_ms);
	have = st->creds_mono_ms != 0 && !st->stale;
	/* an expired credential is sent only when no run could replace it
	 * now (rate-limited): the server may still take it */
	if (have && (!creds_expiring(&st->creds, 0) || !st->run))
		return 0;
	if (!st->run)
		exec_arm_retry(st, now_ms);
	snprintf(err, errlen, "%s", st->last_err);
	return -EAGAIN;
}

int tl_kube_auth_new(const struct tl_kubeconfig *kc, struct tl_kube_auth **ret)
{
	struct tl_kube_auth *st = calloc(1, sizeof(*st));

	if (!st)
		return -ENOMEM;
	st->kc = kc;
	*ret = st;
	return 0;
}

void tl_kube_auth_free(struct tl_kube_auth *st)
{
	if (!st)
		return;
	tl_kexec_free(st->run);
	tl_timer_free(st->retry);
	free(st->subs);
	creds_clear(&st->creds);
	free(st);
}

void tl_kube_auth_invalidate(struct tl_kube_auth *st, uint64_t generation, uint64_t now_mono_ms)
{
	if (st->stale || generation != st->creds.generation)
		return;
	st->stale = true;
	if (!st->kc->exec)
		return;
	/* rejected as soon as issued: the plugin is not asked again at once.
	 * Only briefly: requests wait for the next run, and a token rotated
	 * soon after start must not leave the watches down for long. */
	if (st->creds_mono_ms && now_mono_ms - st->creds_mono_ms < TL_KUBE_EXEC_REJECT_MIN_MS &&
	    st->next_ms < st->creds_mono_ms + TL_KUBE_EXEC_REJECT_MIN_MS)
		st->next_ms = st->creds_mono_ms + TL_KUBE_EXEC_REJECT_MIN_MS;
	if (!st->loop)
		return;
	if (exec_due(st, now_mono_ms))
		exec_start(st, now_mono_ms);
	else
		exec_arm_retry(st, now_mono_ms);
}

int tl_kube_auth_attach(struct tl_kube_auth *st, struct tl_loop *loop)
{
	int r;

	if (st->loop)
		return -EBUSY;
	r = tl_loop_add_timer(loop, 0, 0, exec_retry_cb, st, &st->retry);
	if (r < 0)
		return r;
	st->loop = loop;
	exec_arm_retry(st, tl_now_mono_ms());
	return 0;
}

int tl_kube_auth_subscribe(struct tl_kube_auth *st, tl_kube_creds_cb cb, void *userdata)
{
	struct kc_sub *n = realloc(st->subs, (st->nsubs + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	st->subs = n;
	st->subs[st->nsubs++] = (struct kc_sub){ .cb = cb, .userdata = userdata };
	return 0;
}

void tl_kube_auth_unsubscribe(struct tl_kube_auth *st, tl_kube_creds_cb cb, void *userdata)
{
	for (size_t i = 0; i < st->nsubs; i++) {
		if (st->subs[i].cb == cb && st->subs[i].userdata == userdata) {
			memmove(&st->subs[i], &st->subs[i + 1],
				(st->nsubs - i - 1) * sizeof(st->subs[0]));
			st->nsubs--;
			return;
		}
	}
}

int tl_kube_auth_credentials(struct tl_kube_auth *st, bool force, uint64_t now_mono_ms,
			     const struct tl_kube_creds **ret, char *err, size_t errlen)
{
	const struct tl_kubeconfig *kc = st->kc;
	bool first = st->creds_mono_ms == 0;
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (force)
		tl_kube_auth_invalidate(st, st->creds.generation, now_mono_ms);
	if (kc->exec) {
		r = exec_credentials(st, now_mono_ms, err, errlen);
		if (r < 0)
			return r;
	} else if (kc->token_file && !kc->token) { /* kubectl: token wins over tokenFile */
		if (first || st->stale || now_mono_ms - st->creds_mono_ms >= TL_KUBE_TOKEN_REREAD_MS) {
			char *t;

			/* a failed re-read leaves the token in force: the next
			 * 401 asks again */
			st->stale = false;
			r = read_token(kc->token_file, &t);
			if (r < 0) {
				tl_kubeconfig_err(err, errlen, kc->source, kc->token_file_key, "%s: %s",
						  kc->token_file,
						  r == -EBADMSG ? "empty or malformed token"
								: tl_kubeconfig_errstr(r));
				return r;
			}
			free(st->creds.token);
			st->creds.token = t;
			st->creds.generation = ++st->gen;
			st->creds_mono_ms = now_mono_ms ? now_mono_ms : 1;
			st->stale = false;
		}
	} else {
		if (first) {
			if (kc->token) {
				st->creds.token = strdup(kc->token);
				if (!st->creds.token)
					return -ENOMEM;
			}
			st->creds.generation = ++st->gen;
			st->creds_mono_ms = now_mono_ms ? now_mono_ms : 1;
		}
		st->stale = false; /* nothing to refresh them from */
	}
	*ret = &st->creds;
	return 0;
}
