/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>

#include "kube-http.h"
#include "kube-pods.h"
#include "kube-watch.h"
#include "kube.h"
#include "kube-creds.h"
#include "kubeconfig.h"

struct tl_kube {
	struct tl_kubeconfig *kc;
	struct tl_kube_auth *auth;
	struct tl_khttp *http;
	struct tl_kpods *model;
	struct tl_reflector *pods, *slices;
};

void tl_kube_free(struct tl_kube *k)
{
	if (!k)
		return;
	tl_reflector_free(k->pods);
	tl_reflector_free(k->slices);
	tl_khttp_free(k->http);
	tl_kpods_free(k->model);
	tl_kube_auth_free(k->auth);
	tl_kubeconfig_free(k->kc);
	free(k);
}

int tl_kube_new(const struct tl_kube_config *cfg, struct tl_loop *loop,
		const struct tl_emitter *emit, struct tl_kube **ret, char *err, size_t errlen)
{
	const struct tl_kube_creds *creds;
	struct tl_kube *k;
	char *esc = NULL, *query = NULL;
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (!cfg->node || !*cfg->node || strlen(cfg->node) > 253) {
		snprintf(err, errlen, "node name is not set (--node or $NODE_NAME)");
		return -EINVAL;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	if (cfg->kubeconfig)
		r = tl_kubeconfig_load(cfg->kubeconfig, &k->kc, err, errlen);
	else
		r = tl_kubeconfig_in_cluster(cfg->sa_dir, &k->kc, err, errlen);
	if (r < 0)
		goto fail;
	/* Credentials that cannot be had at start (a malformed token file, a
	 * failing exec plugin) are a configuration error, not a transient: the
	 * first are fetched here, before the loop runs, so the caller can
	 * say so and exit. Every later plugin run is on the loop. */
	r = tl_kube_auth_new(k->kc, &k->auth);
	if (r < 0)
		goto fail_msg;
	r = tl_kube_auth_credentials(k->auth, false, tl_now_mono_ms(), &creds, err, errlen);
	if (r < 0)
		goto fail;
	r = tl_kube_auth_attach(k->auth, loop);
	if (r < 0)
		goto fail_msg;
	r = tl_khttp_new(loop, &k->http);
	if (r < 0)
		goto fail_msg;
	r = tl_kpods_new(cfg->node, emit, &k->model);
	if (r < 0)
		goto fail_msg;
	esc = curl_easy_escape(NULL, cfg->node, 0);
	if (!esc || asprintf(&query, "fieldSelector=spec.nodeName%%3D%s", esc) < 0) {
		query = NULL;
		r = -ENOMEM;
		goto fail_msg;
	}
	{
		struct tl_reflector_config pc = { .resource = "pods", .path = "/api/v1/pods",
						  .query = query };
		/* slices of Services only: the label carries the service name */
		struct tl_reflector_config sc = {
			.resource = "endpointslices",
			.path = "/apis/discovery.k8s.io/v1/endpointslices",
			.query = "labelSelector=kubernetes.io%2Fservice-name",
		};

		r = tl_reflector_new(loop, k->http, k->kc, k->auth, &pc, &tl_kpods_pod_ops, k->model,
				     &k->pods);
		if (r == 0)
			r = tl_reflector_new(loop, k->http, k->kc, k->auth, &sc, &tl_kpods_slice_ops,
					     k->model, &k->slices);
		if (r < 0)
			goto fail_msg;
	}
	r = tl_reflector_start(k->pods);
	if (r == 0)
		r = tl_reflector_start(k->slices);
	if (r < 0)
		goto fail_msg;
	curl_free(esc);
	free(query);
	*ret = k;
	return 0;
fail_msg:
	snprintf(err, errlen, "kubernetes client: %s", strerror(-r));
fail:
	curl_free(esc);
	free(query);
	tl_kube_free(k);
	return r;
}

void tl_kube_set_callbacks(struct tl_kube *k, const struct tl_kube_callbacks *cb)
{
	struct tl_kpods_callbacks c = { 0 };

	if (cb) {
		c.pod_changed = cb->pod_changed;
		c.pods_listed = cb->pods_listed;
		c.userdata = cb->userdata;
	}
	tl_kpods_set_callbacks(k->model, &c);
}

bool tl_kube_synced(const struct tl_kube *k)
{
	return k && tl_reflector_synced(k->pods) && tl_reflector_synced(k->slices);
}

int tl_kube_lookup_container(const struct tl_kube *k, const char *bare_id,
			     const char **ret_pod_uid, const char **ret_container_name)
{
	return tl_kpods_lookup_container(k->model, bare_id, ret_pod_uid, ret_container_name);
}

const char *tl_kube_pod_by_ip(const struct tl_kube *k, const char *ip)
{
	return tl_kpods_pod_by_ip(k->model, ip);
}

struct tl_pod_meta *tl_kube_pod_meta(const struct tl_kube *k, const char *uid)
{
	return tl_kpods_pod_meta(k->model, uid);
}

void tl_kube_forget(struct tl_kube *k, const char *uid)
{
	tl_kpods_forget(k->model, uid);
}

size_t tl_kube_foreach_endpoint(const struct tl_kube *k, const char *uid, tl_kpods_endpoint_cb cb,
				void *ud)
{
	return tl_kpods_foreach_endpoint(k->model, uid, cb, ud);
}

const char *tl_kube_last_error(const struct tl_kube *k)
{
	const char *e = tl_reflector_last_error(k->pods);

	return e[0] ? e : tl_reflector_last_error(k->slices);
}
