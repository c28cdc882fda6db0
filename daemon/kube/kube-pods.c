/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/linkhash.h>

#include "clock.h"
#include "json-util.h"
#include "kube-istio.h"
#include "kube-pods.h"
#include "kubeconfig.h"
#include "log.h"
#include "macro.h"
#include "metrics.h"
#include "pod-meta.h"

/* Deleted Pods stay known (for late kernel events and the timeline) until
 * forgotten; beyond this many the oldest go. */
#define KP_MAX_RETAINED 1024
/* Live Pods tracked: a kubelet runs at most a few hundred (110 by
 * default). The API server's answers are input: beyond this many the
 * newest are ignored, counted and logged once, so a LIST of 10,000 Pods
 * cannot grow the agent without bound. */
#define KP_MAX_PODS 1024
#define KP_MAX_IPS 8
#define KP_MAX_ENDPOINTS 1000 /* the EndpointSlice API limit per slice */

struct kpod {
	char *uid, *ns, *name;
	char *ips[KP_MAX_IPS];
	size_t nips;
	bool deleting;
	bool deleted;
	uint64_t mark;
	uint64_t deleted_seq;
	struct json_object *conds;      /* condition type -> status */
	struct json_object *terminated; /* keys of terminations already reported */
	/* the timeline's pod + containers; shared with main and the store,
	 * never changed: a change is a new one */
	struct tl_pod_meta *meta;
};

struct kep {
	char *key;
	char *pod_uid; /* "" when the target is not a Pod */
	char *address;
	bool ready, serving, terminating;
};

struct kslice {
	char *uid, *name, *service;
	struct kep *eps;
	size_t neps;
	uint64_t mark;
};

struct tl_kpods {
	char *node;
	struct tl_emitter emit;
	struct tl_kpods_callbacks cb;
	struct lh_table *pods;   /* uid -> kpod */
	struct lh_table *by_id;  /* bare container id -> kpod */
	struct lh_table *by_ip;  /* ip -> kpod */
	struct lh_table *slices; /* slice uid -> kslice */
	uint64_t pod_gen, slice_gen;
	int64_t pod_list_started_ns;
	uint64_t deleted_seq;
	size_t retained;
	bool warned_other_node, warned_limit;
	struct tl_metric *m_other_node, *m_limit, *m_invalid;
};

/* ---- small helpers (JSON members: json-util.h) ---- */

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* The API's containerID always names its runtime: one without a prefix, or
 * with nothing after it, is not an id yet (NULL). The prefix itself is
 * stripped by tl_container_id_bare(), the one rule for it. */
const char *tl_kpods_bare_id(const char *full)
{
	const char *bare = tl_container_id_bare(full);

	return bare && bare != full && bare[0] ? bare : NULL;
}

/* ---- events ---- */

static bool emit_new(struct tl_event *ev, enum tl_kind kind, const char *pod_uid)
{
	if (tl_event_init_kind(ev, kind, TL_SRC_API, tl_now_real_ns()) < 0)
		return false;
	snprintf(ev->pod_uid, sizeof(ev->pod_uid), "%s", pod_uid ? pod_uid : "");
	return true;
}

/* A string field when the API object has it (too long for the event: left
 * out, as the model drops what does not fit). */
static void set_str_if(struct tl_event *ev, unsigned slot, const char *v)
{
	if (v)
		tl_event_set_s(ev, slot, v, strlen(v));
}

/* ---- pods ---- */

static void kpod_free_contents(struct kpod *p)
{
	for (size_t i = 0; i < p->nips; i++)
		free(p->ips[i]);
	p->nips = 0;
	tl_pod_meta_unref(p->meta);
	p->meta = NULL;
	json_object_put(p->conds);
	p->conds = NULL;
}

static void kpod_free(struct kpod *p)
{
	if (!p)
		return;
	kpod_free_contents(p);
	json_object_put(p->terminated);
	free(p->uid);
	free(p->ns);
	free(p->name);
	free(p);
}

/* The runtime's id of container i, or NULL; the key of by_id (it lives
 * as long as the kpod's meta). */
static const char *ctr_bare_id(const struct kpod *p, uint32_t i)
{
	return tl_kpods_bare_id(p->meta->containers[i].container_id);
}

static void unindex_pod(struct tl_kpods *m, struct kpod *p)
{
	void *v;

	for (uint32_t i = 0; p->meta && i < p->meta->n_containers; i++) {
		const char *id = ctr_bare_id(p, i);

		if (id && lh_table_lookup_ex(m->by_id, id, &v) && v == p)
			lh_table_delete(m->by_id, id);
	}
	for (size_t i = 0; i < p->nips; i++)
		if (lh_table_lookup_ex(m->by_ip, p->ips[i], &v) && v == p)
			lh_table_delete(m->by_ip, p->ips[i]);
}

static void index_pod(struct tl_kpods *m, struct kpod *p)
{
	void *v;

	for (uint32_t i = 0; p->meta && i < p->meta->n_containers; i++) {
		const char *id = ctr_bare_id(p, i);

		if (!id)
			continue;
		if (lh_table_lookup_ex(m->by_id, id, &v))
			lh_table_delete(m->by_id, id);
		lh_table_insert(m->by_id, id, p);
	}
	for (size_t i = 0; i < p->nips; i++) {
		/* a live Pod wins an address over a deleted one that had it */
		if (lh_table_lookup_ex(m->by_ip, p->ips[i], &v)) {
			if (p->deleted && !((struct kpod *)v)->deleted)
				continue;
			lh_table_delete(m->by_ip, p->ips[i]);
		}
		lh_table_insert(m->by_ip, p->ips[i], p);
	}
}

static uint8_t prestop_kind(struct json_object *c)
{
	struct json_object *ps = tl_json_object(tl_json_object(c, "lifecycle"), "preStop");
	static const uint8_t kinds[] = { TL_PRESTOP_EXEC, TL_PRESTOP_HTTP_GET, TL_PRESTOP_SLEEP,
					 TL_PRESTOP_TCP_SOCKET };

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (tl_json_get(ps, tl_pod_prestop_name(kinds[i])))
			return kinds[i];
	return TL_PRESTOP_NONE;
}

/* A field of the API object dropped (over-long, or past a bound). */
static void field_dropped(const char *field)
{
	char labels[64];

	snprintf(labels, sizeof(labels), "field=\"%s\"", field);
	tl_metric_add("termline_kube_pod_fields_dropped_total", labels, 1);
}

static const char *find_status_id(struct json_object *statuses, const char *name)
{
	size_t n = statuses ? json_object_array_length(statuses) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(statuses, i);
		const char *sn = tl_json_str(s, "name");

		if (sn && strcmp(sn, name) == 0)
			return tl_json_str(s, "containerID");
	}
	return NULL;
}

/* Appends the Pod's containers of one list (init or app) to meta, in the
 * spec's order, with the ids their statuses carry. */
static void add_containers(struct tl_pod_meta *meta, struct json_object *specs,
			   struct json_object *statuses, bool init)
{
	size_t n = specs ? json_object_array_length(specs) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(specs, i);
		const char *name = tl_json_str(c, "name"), *rp;
		struct tl_pod_container *k;

		if (meta->n_containers == meta->cap_containers) {
			meta->containers_dropped++;
			field_dropped("containers");
			continue;
		}
		k = &meta->containers[meta->n_containers];
		memset(k, 0, sizeof(*k));
		/* no usable name, nothing to tell it by */
		if (!name || TL_POD_META_SET(k->name, name) < 0) {
			meta->containers_dropped++;
			field_dropped("containers");
			continue;
		}
		rp = tl_json_str(c, "restartPolicy");
		if (init)
			k->role = rp && strcmp(rp, "Always") == 0 ? TL_ROLE_SIDECAR : TL_ROLE_INIT;
		else
			k->role = strcmp(name, "istio-proxy") == 0 ? TL_ROLE_SIDECAR : TL_ROLE_MAIN;
		k->prestop = prestop_kind(c);
		/* an id too long for any runtime's is no id: the container is
		 * kept, and found once its status carries a usable one */
		if (TL_POD_META_SET(k->container_id, find_status_id(statuses, name)) < 0)
			field_dropped("containerID");
		meta->n_containers++;
	}
}

static void fill_meta(const struct kpod *p, struct json_object *obj, const char *node,
		      struct tl_pod_meta *meta)
{
	struct json_object *md = tl_json_get(obj, "metadata"), *spec = tl_json_get(obj, "spec");
	struct json_object *owners = tl_json_array(md, "ownerReferences"), *owner = NULL;
	const char *nn = tl_json_str(spec, "nodeName");
	int64_t grace = 30;

	/* ns, name (checked by pod_apply), uid (< TL_UID_MAX) and the first
	 * IP (< 64) fit; the node is ours (pod_on_node) */
	TL_POD_META_SET(meta->ns, p->ns);
	TL_POD_META_SET(meta->name, p->name);
	TL_POD_META_SET(meta->uid, p->uid);
	TL_POD_META_SET(meta->node, nn ? nn : node);
	TL_POD_META_SET(meta->ip, p->nips ? p->ips[0] : "");
	for (size_t i = 0; owners && i < json_object_array_length(owners); i++) {
		struct json_object *o = json_object_array_get_idx(owners, i);

		if (!owner || tl_json_bool(o, "controller", false))
			owner = o;
	}
	if (owner && tl_json_str(owner, "kind") && tl_json_str(owner, "name") &&
	    (TL_POD_META_SET(meta->owner_kind, tl_json_str(owner, "kind")) < 0 ||
	     TL_POD_META_SET(meta->owner_name, tl_json_str(owner, "name")) < 0)) {
		meta->owner_kind[0] = meta->owner_name[0] = '\0';
		field_dropped("owner");
	}
	/* the API server defaults it to 30 when the manifest leaves it out */
	tl_json_int(spec, "terminationGracePeriodSeconds", &grace);
	meta->grace_s = grace >= 0 ? grace : -1;
	/* the sidecar's drain settings, as the Pod declares them */
	meta->istio = tl_kube_istio_settings(tl_json_get(md, "annotations"));
}

/* Parses the parts of a Pod we track into a fresh kpod (no uid/terminated). */
static int parse_pod(struct tl_kpods *m, struct json_object *obj, struct kpod *p)
{
	struct json_object *md = tl_json_get(obj, "metadata"), *spec = tl_json_get(obj, "spec");
	struct json_object *st = tl_json_get(obj, "status"), *conds, *ips;
	size_t n;

	struct json_object *ic = tl_json_array(spec, "initContainers"), *cs = tl_json_array(spec, "containers");
	size_t nc = (ic ? json_object_array_length(ic) : 0) + (cs ? json_object_array_length(cs) : 0);

	p->deleting = tl_json_str(md, "deletionTimestamp") != NULL;
	p->conds = json_object_new_object();
	/* what the Pod has, not the most it may have */
	p->meta = tl_pod_meta_new(nc > TL_POD_CONTAINERS_MAX ? TL_POD_CONTAINERS_MAX : (uint32_t)nc);
	if (!p->conds || !p->meta)
		return -ENOMEM;
	conds = tl_json_array(st, "conditions");
	n = conds ? json_object_array_length(conds) : 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = tl_json_str(c, "type"), *s = tl_json_str(c, "status");

		if (t && s && strlen(t) < 128 && strlen(s) < 16)
			json_object_object_add(p->conds, t, json_object_new_string(s));
	}
	ips = tl_json_array(st, "podIPs");
	n = ips ? json_object_array_length(ips) : 0;
	for (size_t i = 0; i < n && p->nips < KP_MAX_IPS; i++) {
		const char *ip = tl_json_str(json_object_array_get_idx(ips, i), "ip");

		if (ip && *ip && strlen(ip) < TL_POD_IP_MAX && !(p->ips[p->nips] = strdup(ip)))
			return -ENOMEM;
		if (ip && *ip && strlen(ip) < TL_POD_IP_MAX)
			p->nips++;
	}
	if (p->nips == 0 && tl_json_str(st, "podIP") && *tl_json_str(st, "podIP") &&
	    strlen(tl_json_str(st, "podIP")) < TL_POD_IP_MAX) {
		p->ips[0] = strdup(tl_json_str(st, "podIP"));
		if (!p->ips[0])
			return -ENOMEM;
		p->nips = 1;
	}
	add_containers(p->meta, ic, tl_json_array(st, "initContainerStatuses"), true);
	add_containers(p->meta, cs, tl_json_array(st, "containerStatuses"), false);
	fill_meta(p, obj, m->node, p->meta);
	return 0;
}

static void emit_terminated(struct tl_kpods *m, struct kpod *p, struct json_object *status,
			    struct json_object *term, bool report)
{
	const char *name = tl_json_str(status, "name"), *cid = tl_json_str(term, "containerID");
	const char *sid = tl_json_str(status, "containerID");
	char key[TL_CONTAINER_ID_MAX + TL_NAME_MAX + 64];
	struct tl_event ev;
	int64_t v;

	if (!name || !term)
		return;
	/* one container run terminates once: its id is the key (a run that
	 * never started has none: name + finish time then) */
	if (cid && *cid)
		snprintf(key, sizeof(key), "%s", cid);
	else
		snprintf(key, sizeof(key), "%s#%s", name, tl_json_str(term, "finishedAt") ? tl_json_str(term, "finishedAt") : "");
	if (tl_json_get(p->terminated, key))
		return;
	json_object_object_add(p->terminated, key, json_object_new_boolean(1));
	if (!report || !emit_new(&ev, TL_KIND_CONTAINER_TERMINATED, p->uid))
		return;
	snprintf(ev.container, sizeof(ev.container), "%s", name);
	if (!cid || !*cid)
		cid = sid;
	if (tl_kpods_bare_id(cid) && strlen(tl_kpods_bare_id(cid)) < sizeof(ev.container_id))
		snprintf(ev.container_id, sizeof(ev.container_id), "%s", tl_kpods_bare_id(cid));
	tl_event_set_i(&ev, TL_F_TERM_EXIT_CODE, tl_json_int(term, "exitCode", &v) ? v : -1);
	set_str_if(&ev, TL_F_TERM_REASON, tl_json_str(term, "reason") ? tl_json_str(term, "reason") : "");
	if (tl_json_int(term, "signal", &v))
		tl_event_set_i(&ev, TL_F_TERM_SIGNAL, v);
	set_str_if(&ev, TL_F_TERM_STARTED, tl_json_str(term, "startedAt"));
	set_str_if(&ev, TL_F_TERM_FINISHED, tl_json_str(term, "finishedAt"));
	tl_emit(&m->emit, &ev);
}

static void diff_terminated(struct tl_kpods *m, struct kpod *p, struct json_object *obj, bool report)
{
	static const char *const lists[] = { "initContainerStatuses", "containerStatuses" };
	struct json_object *st = tl_json_get(obj, "status");

	for (size_t l = 0; l < 2; l++) {
		struct json_object *a = tl_json_array(st, lists[l]);
		size_t n = a ? json_object_array_length(a) : 0;

		for (size_t i = 0; i < n; i++) {
			struct json_object *s = json_object_array_get_idx(a, i);

			/* a restart we did not see in between leaves the
			 * previous run only in lastState */
			emit_terminated(m, p, s, tl_json_get(tl_json_get(s, "lastState"), "terminated"), report);
			emit_terminated(m, p, s, tl_json_get(tl_json_get(s, "state"), "terminated"), report);
		}
	}
}

static void pod_diff(struct tl_kpods *m, struct kpod *p, const struct kpod *np,
		     struct json_object *obj, bool had_state, bool baseline)
{
	struct json_object *md = tl_json_get(obj, "metadata");
	struct json_object *conds = tl_json_array(tl_json_get(obj, "status"), "conditions");
	bool report = !baseline || np->deleting;
	struct tl_event ev;
	size_t n;

	if (np->deleting && !(had_state && p->deleting) && report &&
	    emit_new(&ev, TL_KIND_POD_DELETION_REQUESTED, p->uid)) {
		int64_t g;

		if (tl_json_int(md, "deletionGracePeriodSeconds", &g) ||
		    tl_json_int(tl_json_get(obj, "spec"), "terminationGracePeriodSeconds", &g))
			tl_event_set_i(&ev, TL_F_DELREQ_GRACE, g);
		else
			tl_event_set_i(&ev, TL_F_DELREQ_GRACE, 30);
		set_str_if(&ev, TL_F_DELREQ_DELETION_TS, tl_json_str(md, "deletionTimestamp"));
		tl_emit(&m->emit, &ev);
	}
	n = conds ? json_object_array_length(conds) : 0;
	for (size_t i = 0; i < n && !baseline; i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = tl_json_str(c, "type"), *s = tl_json_str(c, "status");
		const char *old = had_state ? tl_json_str(p->conds, t ? t : "") : NULL;

		if (!t || !s || !tl_json_get(np->conds, t) || (old && strcmp(old, s) == 0))
			continue;
		if (!emit_new(&ev, TL_KIND_POD_CONDITION, p->uid))
			continue;
		set_str_if(&ev, TL_F_COND_CONDITION, t);
		set_str_if(&ev, TL_F_COND_STATUS, s);
		set_str_if(&ev, TL_F_COND_REASON, tl_json_str(c, "reason"));
		set_str_if(&ev, TL_F_COND_LAST_TRANSITION, tl_json_str(c, "lastTransitionTime"));
		tl_emit(&m->emit, &ev);
	}
	diff_terminated(m, p, obj, report);
}

static void evict_retained(struct tl_kpods *m)
{
	struct lh_entry *e;
	struct kpod *oldest = NULL;

	if (m->retained <= KP_MAX_RETAINED)
		return;
	lh_foreach(m->pods, e) {
		struct kpod *p = (struct kpod *)lh_entry_v(e);

		if (p->deleted && (!oldest || p->deleted_seq < oldest->deleted_seq))
			oldest = p;
	}
	if (oldest)
		tl_kpods_forget(m, oldest->uid);
}

static void pod_mark_deleted(struct tl_kpods *m, struct kpod *p, const char *how)
{
	struct tl_event ev;

	if (p->deleted)
		return;
	if (emit_new(&ev, TL_KIND_POD_DELETED, p->uid)) {
		set_str_if(&ev, TL_F_DELETED_OBSERVED_BY, how);
		tl_emit(&m->emit, &ev);
	}
	p->deleted = true;
	p->deleted_seq = ++m->deleted_seq;
	m->retained++;
	if (m->cb.pod_changed)
		m->cb.pod_changed(m->cb.userdata, p->uid);
}

/* The watch asks for this node's Pods only (a field selector), but what
 * the API server sends is input: a Pod of another node (or of none) would
 * be tracked, and its timeline kept, for nothing. */
static bool pod_on_node(struct tl_kpods *m, struct json_object *obj, const char *ns,
			const char *name)
{
	const char *nn = tl_json_str(tl_json_get(obj, "spec"), "nodeName");

	if (nn && strcmp(nn, m->node) == 0)
		return true;
	tl_metric_inc(m->m_other_node, 1);
	if (!m->warned_other_node) {
		char what[256];

		m->warned_other_node = true;
		/* names are the API server's: escaped, the line stays one */
		snprintf(what, sizeof(what), "%.64s/%.64s on \"%.64s\"", ns, name, nn ? nn : "");
		tl_kubeconfig_escape(what, sizeof(what));
		tl_log(TL_LOG_WARN, "kube: ignoring Pods not on node %s (first: %s); "
		       "see termline_kube_pods_ignored_total", m->node, what);
	}
	return false;
}

static bool pod_room(struct tl_kpods *m, const char *ns, const char *name)
{
	if (m->pods->count - (int)m->retained < KP_MAX_PODS)
		return true;
	tl_metric_inc(m->m_limit, 1);
	if (!m->warned_limit) {
		char what[160];

		m->warned_limit = true;
		snprintf(what, sizeof(what), "%.64s/%.64s", ns, name);
		tl_kubeconfig_escape(what, sizeof(what));
		tl_log(TL_LOG_WARN, "kube: tracking at most %d Pods; %s and later ones are "
		       "ignored (see termline_kube_pods_ignored_total)", KP_MAX_PODS, what);
	}
	return false;
}

static struct kpod *pod_apply(struct tl_kpods *m, struct json_object *obj, bool baseline)
{
	struct json_object *md = tl_json_get(obj, "metadata");
	const char *uid = tl_json_str(md, "uid"), *ns = tl_json_str(md, "namespace"), *name = tl_json_str(md, "name");
	struct kpod *p = NULL, np = { 0 };
	bool had_state, changed;
	void *v;

	if (!uid || !*uid || strlen(uid) >= TL_UID_MAX || !ns || !name)
		return NULL;
	/* past Kubernetes' own limits it is no Pod the kubelet runs; a cut
	 * name would be another Pod's */
	if (strlen(ns) >= TL_POD_NS_MAX || strlen(name) >= TL_POD_NAME_MAX) {
		tl_metric_inc(m->m_invalid, 1);
		return NULL;
	}
	if (!pod_on_node(m, obj, ns, name))
		return NULL;
	if (lh_table_lookup_ex(m->pods, uid, &v))
		p = v;
	had_state = p != NULL;
	if (!p && !pod_room(m, ns, name))
		return NULL;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		p->uid = strdup(uid);
		p->terminated = json_object_new_object();
		if (!p->uid || !p->terminated || lh_table_insert(m->pods, p->uid, p) < 0) {
			kpod_free(p);
			return NULL;
		}
	}
	if (p->deleted) { /* the same uid again: not expected, but keep going */
		p->deleted = false;
		m->retained--;
	}
	if (!p->ns || strcmp(p->ns, ns) != 0 || strcmp(p->name, name) != 0) {
		char *a = strdup(ns), *b = strdup(name);

		if (!a || !b) {
			free(a);
			free(b);
			return had_state ? p : NULL;
		}
		free(p->ns);
		free(p->name);
		p->ns = a;
		p->name = b;
	}
	np.uid = p->uid;
	np.ns = p->ns;
	np.name = p->name;
	if (parse_pod(m, obj, &np) < 0) {
		kpod_free_contents(&np);
		return had_state ? p : NULL;
	}
	pod_diff(m, p, &np, obj, had_state && p->conds, baseline);
	changed = !tl_pod_meta_equal(p->meta, np.meta);
	unindex_pod(m, p);
	kpod_free_contents(p);
	p->deleting = np.deleting;
	p->conds = np.conds;
	p->meta = np.meta;
	memcpy(p->ips, np.ips, sizeof(p->ips));
	p->nips = np.nips;
	index_pod(m, p);
	if (changed && m->cb.pod_changed)
		m->cb.pod_changed(m->cb.userdata, p->uid);
	return p;
}

static void pods_list_begin(void *userdata, bool initial _unused_)
{
	struct tl_kpods *m = userdata;

	m->pod_gen++;
	m->pod_list_started_ns = tl_now_real_ns();
}

static void pods_list_item(void *userdata, struct json_object *obj, bool initial)
{
	struct tl_kpods *m = userdata;
	struct kpod *p = pod_apply(m, obj, initial);

	if (p)
		p->mark = m->pod_gen;
}

static void pods_list_end(void *userdata, bool initial _unused_)
{
	struct tl_kpods *m = userdata;
	struct lh_entry *e, *tmp;

	/* gone while we were not watching */
	lh_foreach_safe(m->pods, e, tmp) {
		struct kpod *p = (struct kpod *)lh_entry_v(e);

		if (!p->deleted && p->mark != m->pod_gen)
			pod_mark_deleted(m, p, "relist");
	}
	while (m->retained > KP_MAX_RETAINED)
		evict_retained(m);
	if (m->cb.pods_listed)
		m->cb.pods_listed(m->cb.userdata, m->pod_list_started_ns);
}

static void pods_event(void *userdata, const char *type, struct json_object *obj)
{
	struct tl_kpods *m = userdata;
	struct kpod *p;

	if (strcmp(type, "DELETED") == 0) {
		const char *uid = tl_json_str(tl_json_get(obj, "metadata"), "uid");
		void *v;

		/* a DELETED for a Pod never seen (or already gone) says nothing new */
		if (!uid || !lh_table_lookup_ex(m->pods, uid, &v) || ((struct kpod *)v)->deleted)
			return;
		p = pod_apply(m, obj, false);
		if (p)
			pod_mark_deleted(m, p, NULL);
		evict_retained(m);
		return;
	}
	p = pod_apply(m, obj, false);
	if (p)
		p->mark = m->pod_gen;
}

const struct tl_reflector_ops tl_kpods_pod_ops = {
	.list_begin = pods_list_begin,
	.list_item = pods_list_item,
	.list_end = pods_list_end,
	.event = pods_event,
};

/* ---- EndpointSlices ---- */

static void kslice_free(struct kslice *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->neps; i++) {
		free(s->eps[i].key);
		free(s->eps[i].pod_uid);
		free(s->eps[i].address);
	}
	free(s->eps);
	free(s->uid);
	free(s->name);
	free(s->service);
	free(s);
}

static void emit_ep(struct tl_kpods *m, const struct kslice *s, const struct kep *e, bool removed)
{
	struct tl_event ev;

	if (!emit_new(&ev, removed ? TL_KIND_ENDPOINT_REMOVED : TL_KIND_ENDPOINT_CONDITION, e->pod_uid))
		return;
	set_str_if(&ev, TL_F_EP_SERVICE, s->service ? s->service : "");
	set_str_if(&ev, TL_F_EP_SLICE, s->name);
	if (!removed) {
		tl_event_set_i(&ev, TL_F_EP_READY, e->ready);
		tl_event_set_i(&ev, TL_F_EP_SERVING, e->serving);
		tl_event_set_i(&ev, TL_F_EP_TERMINATING, e->terminating);
	}
	set_str_if(&ev, TL_F_EP_ADDRESS, e->address);
	tl_emit(&m->emit, &ev);
}

static bool pod_known_live(const struct tl_kpods *m, const char *uid)
{
	void *v;

	return uid && lh_table_lookup_ex(m->pods, uid, &v) && !((struct kpod *)v)->deleted;
}

/* New slice state with only the endpoints of this node's Pods. */
static struct kslice *parse_slice(struct tl_kpods *m, struct json_object *obj)
{
	struct json_object *md = tl_json_get(obj, "metadata"), *eps = tl_json_array(obj, "endpoints");
	const char *uid = tl_json_str(md, "uid"), *name = tl_json_str(md, "name");
	const char *svc = tl_json_str(tl_json_get(md, "labels"), "kubernetes.io/service-name");
	size_t n = eps ? json_object_array_length(eps) : 0;
	struct kslice *s;

	if (!uid || !name)
		return NULL;
	if (n > KP_MAX_ENDPOINTS)
		n = KP_MAX_ENDPOINTS;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->uid = strdup(uid);
	s->name = strdup(name);
	s->service = xstrdup(svc);
	s->eps = calloc(n ? n : 1, sizeof(*s->eps));
	if (!s->uid || !s->name || (svc && !s->service) || !s->eps)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(eps, i);
		struct json_object *tr = tl_json_get(e, "targetRef"), *cond = tl_json_get(e, "conditions");
		struct json_object *addrs = tl_json_array(e, "addresses");
		const char *kind = tl_json_str(tr, "kind"), *tuid = tl_json_str(tr, "uid");
		const char *nn = tl_json_str(e, "nodeName");
		const char *addr = addrs && json_object_array_length(addrs) > 0 ?
			json_object_get_string(json_object_array_get_idx(addrs, 0)) : NULL;
		bool is_pod = kind && strcmp(kind, "Pod") == 0 && tuid && strlen(tuid) < TL_UID_MAX;
		struct kep *k = &s->eps[s->neps];

		if (!((nn && strcmp(nn, m->node) == 0) || (is_pod && pod_known_live(m, tuid))))
			continue;
		if (addr && strlen(addr) >= 64)
			addr = NULL;
		if (!is_pod && !addr)
			continue; /* nothing to key it by */
		/* Missing ready/serving mean true, missing terminating false
		 * (discovery.k8s.io/v1 EndpointConditions). */
		k->ready = tl_json_bool(cond, "ready", true);
		k->serving = tl_json_bool(cond, "serving", true);
		k->terminating = tl_json_bool(cond, "terminating", false);
		k->key = strdup(is_pod ? tuid : addr);
		k->pod_uid = strdup(is_pod ? tuid : "");
		k->address = xstrdup(addr);
		s->neps++;
		if (!k->key || !k->pod_uid || (addr && !k->address))
			goto fail;
	}
	return s;
fail:
	kslice_free(s);
	return NULL;
}

static const struct kep *find_ep(const struct kslice *s, const char *key)
{
	for (size_t i = 0; s && i < s->neps; i++)
		if (strcmp(s->eps[i].key, key) == 0)
			return &s->eps[i];
	return NULL;
}

static void slice_replace(struct tl_kpods *m, struct kslice *old, struct kslice *ns, bool baseline)
{
	for (size_t i = 0; ns && i < ns->neps; i++) {
		const struct kep *o = find_ep(old, ns->eps[i].key);
		const struct kep *e = &ns->eps[i];

		if (o ? (o->ready != e->ready || o->serving != e->serving ||
			 o->terminating != e->terminating) : !baseline)
			emit_ep(m, ns, e, false);
	}
	for (size_t i = 0; old && i < old->neps; i++)
		if (!find_ep(ns, old->eps[i].key))
			emit_ep(m, old, &old->eps[i], true);
	if (old) {
		lh_table_delete(m->slices, old->uid);
		kslice_free(old);
	}
	if (ns && ns->neps > 0) {
		if (lh_table_insert(m->slices, ns->uid, ns) < 0)
			kslice_free(ns);
	} else
		kslice_free(ns);
}

static struct kslice *slice_lookup(struct tl_kpods *m, const char *uid)
{
	void *v;

	return uid && lh_table_lookup_ex(m->slices, uid, &v) ? v : NULL;
}

static void slice_apply(struct tl_kpods *m, struct json_object *obj, bool baseline)
{
	struct kslice *ns = parse_slice(m, obj);

	if (!ns)
		return;
	ns->mark = m->slice_gen;
	slice_replace(m, slice_lookup(m, ns->uid), ns, baseline);
}

static void slices_list_begin(void *userdata, bool initial _unused_)
{
	struct tl_kpods *m = userdata;

	m->slice_gen++;
}

static void slices_list_item(void *userdata, struct json_object *obj, bool initial)
{
	slice_apply(userdata, obj, initial);
}

static void slices_list_end(void *userdata, bool initial _unused_)
{
	struct tl_kpods *m = userdata;
	struct lh_entry *e, *tmp;

	lh_foreach_safe(m->slices, e, tmp) {
		struct kslice *s = (struct kslice *)lh_entry_v(e);

		if (s->mark != m->slice_gen)
			slice_replace(m, s, NULL, false);
	}
}

static void slices_event(void *userdata, const char *type, struct json_object *obj)
{
	struct tl_kpods *m = userdata;

	if (strcmp(type, "DELETED") == 0) {
		struct kslice *s = slice_lookup(m, tl_json_str(tl_json_get(obj, "metadata"), "uid"));

		if (s)
			slice_replace(m, s, NULL, false);
		return;
	}
	slice_apply(m, obj, false);
}

const struct tl_reflector_ops tl_kpods_slice_ops = {
	.list_begin = slices_list_begin,
	.list_item = slices_list_item,
	.list_end = slices_list_end,
	.event = slices_event,
};

size_t tl_kpods_foreach_endpoint(const struct tl_kpods *m, const char *uid, tl_kpods_endpoint_cb cb,
				 void *ud)
{
	struct lh_entry *e;
	size_t n = 0;

	if (!uid || !uid[0])
		return 0;
	lh_foreach(m->slices, e) {
		const struct kslice *s = lh_entry_v(e);

		for (size_t i = 0; i < s->neps; i++) {
			const struct kep *k = &s->eps[i];

			if (strcmp(k->pod_uid, uid) != 0)
				continue;
			cb(ud, s->name, s->service ? s->service : "", k->ready, k->serving, k->terminating);
			n++;
		}
	}
	return n;
}

/* ---- lifetime and lookups ---- */

int tl_kpods_new(const char *node, const struct tl_emitter *emit, struct tl_kpods **ret)
{
	struct tl_kpods *m;

	if (!node || !*node || !emit || !emit->emit)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->node = strdup(node);
	m->emit = *emit;
#define IGNORED_HELP "Pods from the API server not tracked: of another node, past the limit, " \
		     "or with a namespace or name past Kubernetes' limits"
	m->m_other_node = tl_metric_new("termline_kube_pods_ignored_total", "reason=\"other-node\"",
					TL_METRIC_COUNTER, IGNORED_HELP);
	m->m_limit = tl_metric_new("termline_kube_pods_ignored_total", "reason=\"limit\"",
				   TL_METRIC_COUNTER, IGNORED_HELP);
	m->m_invalid = tl_metric_new("termline_kube_pods_ignored_total", "reason=\"invalid\"",
				     TL_METRIC_COUNTER, IGNORED_HELP);
#undef IGNORED_HELP
	tl_metric_describe("termline_kube_pod_fields_dropped_total", TL_METRIC_COUNTER,
			   "Parts of Pod objects read from the API server and left out of the timeline's "
			   "metadata: containers past 256 or without a usable name, over-long "
			   "containerIDs or owners (once per object read)");
	m->pods = lh_kchar_table_new(64, NULL);
	m->by_id = lh_kchar_table_new(64, NULL);
	m->by_ip = lh_kchar_table_new(64, NULL);
	m->slices = lh_kchar_table_new(64, NULL);
	if (!m->node || !m->pods || !m->by_id || !m->by_ip || !m->slices) {
		tl_kpods_free(m);
		return -ENOMEM;
	}
	*ret = m;
	return 0;
}

void tl_kpods_free(struct tl_kpods *m)
{
	struct lh_entry *e;

	if (!m)
		return;
	if (m->pods)
		lh_foreach(m->pods, e)
			kpod_free((struct kpod *)lh_entry_v(e));
	if (m->slices)
		lh_foreach(m->slices, e)
			kslice_free((struct kslice *)lh_entry_v(e));
	if (m->pods)
		lh_table_free(m->pods);
	if (m->by_id)
		lh_table_free(m->by_id);
	if (m->by_ip)
		lh_table_free(m->by_ip);
	if (m->slices)
		lh_table_free(m->slices);
	free(m->node);
	free(m);
}

void tl_kpods_set_callbacks(struct tl_kpods *m, const struct tl_kpods_callbacks *cb)
{
	if (cb)
		m->cb = *cb;
	else
		memset(&m->cb, 0, sizeof(m->cb));
}

int tl_kpods_lookup_container(const struct tl_kpods *m, const char *bare_id,
			      const char **ret_pod_uid, const char **ret_container_name)
{
	struct kpod *p;
	void *v;

	if (!bare_id || !lh_table_lookup_ex(m->by_id, bare_id, &v))
		return -ENOENT;
	p = v;
	for (uint32_t i = 0; p->meta && i < p->meta->n_containers; i++) {
		const char *id = ctr_bare_id(p, i);

		if (id && strcmp(id, bare_id) == 0) {
			if (ret_pod_uid)
				*ret_pod_uid = p->uid;
			if (ret_container_name)
				*ret_container_name = p->meta->containers[i].name;
			return 0;
		}
	}
	return -ENOENT;
}

const char *tl_kpods_pod_by_ip(const struct tl_kpods *m, const char *ip)
{
	void *v;

	if (!ip || !lh_table_lookup_ex(m->by_ip, ip, &v))
		return NULL;
	return ((struct kpod *)v)->uid;
}

struct tl_pod_meta *tl_kpods_pod_meta(const struct tl_kpods *m, const char *uid)
{
	void *v;

	if (!uid || !lh_table_lookup_ex(m->pods, uid, &v))
		return NULL;
	return tl_pod_meta_ref(((struct kpod *)v)->meta);
}

void tl_kpods_forget(struct tl_kpods *m, const char *uid)
{
	struct kpod *p;
	void *v;

	if (!uid || !lh_table_lookup_ex(m->pods, uid, &v))
		return;
	p = v;
	if (!p->deleted)
		return; /* a live Pod is not forgotten */
	unindex_pod(m, p);
	lh_table_delete(m->pods, p->uid);
	m->retained--;
	kpod_free(p);
}
