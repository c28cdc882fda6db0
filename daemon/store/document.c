/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline document (schema/timeline.schema.json, docs/timeline-format.md)
 * written from a timeline's compact state: the events through the one
 * encoder of event.c, the rest through json-c (small). Written in chunks,
 * so a GET streams it and never holds it whole. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "export-json.h"
#include "store-int.h"


const char *state_meta_str(const struct tl_state *s, const char *key)
{
	const char *v = NULL;

	if (!s->meta)
		return NULL;
	if (strcmp(key, "namespace") == 0)
		v = s->meta->ns;
	else if (strcmp(key, "name") == 0)
		v = s->meta->name;
	else if (strcmp(key, "node") == 0)
		v = s->meta->node;
	else if (strcmp(key, "ip") == 0)
		v = s->meta->ip;
	return v && v[0] ? v : NULL;
}

static void ctr_strings(const struct tl_state *s, uint16_t ctr, struct tl_event *ev)
{
	const char *id, *name;

	ev->container_id[0] = '\0';
	ev->container[0] = '\0';
	if (ctr == NO_CTR || ctr >= s->n_ctrs)
		return;
	id = tl_strtab_get(s->strs, s->ctrs[ctr].id_s, NULL);
	name = tl_strtab_get(s->strs, s->ctrs[ctr].name_s, NULL);
	if (id)
		snprintf(ev->container_id, sizeof(ev->container_id), "%s", id);
	if (name)
		snprintf(ev->container, sizeof(ev->container), "%s", name);
	ev->cgroup_id = s->ctrs[ctr].cgroup_id;
}

int state_event(const struct tl_state *s, size_t i, struct tl_event *ev)
{
	const struct entry *e = &s->ev[i];

	if (e->ref & AGG_REF) {
		const struct agg *a = &s->aggs[e->ref & ~AGG_REF];
		const char *type = tl_kind_name((enum tl_kind)a->kind);

		tl_event_init_kind(ev, TL_KIND_EVENTS_AGGREGATED, (enum tl_source)a->source, e->time_ns);
		ctr_strings(s, a->ctr, ev);
		tl_event_set_s(ev, TL_F_AGG_TYPE, type, strlen(type));
		tl_event_set_i(ev, TL_F_AGG_INTERVAL_MS, a->interval_ms);
		tl_event_set_i(ev, TL_F_AGG_COUNT, (int64_t)a->count);
		if (a->kind == TL_KIND_HTTP_REQUEST)
			tl_event_set_i(ev, TL_F_AGG_FAILED, (int64_t)a->failed);
		return 0;
	} else {
		struct rec_hdr h;
		const uint8_t *payload = rec_get(s->arena + e->ref, &h);

		if (tl_event_init_kind(ev, (enum tl_kind)h.kind, (enum tl_source)h.source,
				       e->time_ns) < 0)
			return -EINVAL;
		ctr_strings(s, h.ctr, ev);
		return tl_event_unpack(ev, payload, h.len, h.flags, s->strs);
	}
}

static struct json_object *str_or_null(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

static bool container_id_matches(const char *full, const char *bare)
{
	return strcmp(tl_container_id_bare(full), bare) == 0;
}

/* Distinct container ids the events name, with the first name and cgroup
 * seen for each. */
struct seen {
	const char *id, *name;
	uint64_t cgroup_id;
	bool used;
};

static size_t seen_containers(const struct tl_state *s, struct seen *out, size_t max)
{
	size_t n = 0;

	for (uint32_t c = 0; c < s->n_ctrs; c++) {
		const char *id = tl_strtab_get(s->strs, s->ctrs[c].id_s, NULL);
		const char *name = tl_strtab_get(s->strs, s->ctrs[c].name_s, NULL);
		size_t k;

		if (!id || !*id)
			continue;
		for (k = 0; k < n; k++)
			if (strcmp(out[k].id, id) == 0)
				break;
		if (k == n) {
			if (n == max)
				continue;
			out[n++] = (struct seen){ .id = id };
		}
		if (name && *name && !out[k].name)
			out[k].name = name;
		if (s->ctrs[c].cgroup_id && !out[k].cgroup_id)
			out[k].cgroup_id = s->ctrs[c].cgroup_id;
	}
	return n;
}

static struct json_object *build_containers(const struct tl_state *s)
{
	struct json_object *arr = json_object_new_array();
	struct seen seen[64];
	size_t n_seen = seen_containers(s, seen, 64);

	if (!arr)
		return NULL;
	/* The Pod's containers (pod-meta.h), with the cgroup the kernel side
	 * saw when the API side did not have it yet. */
	for (uint32_t i = 0; s->meta && i < s->meta->n_containers; i++) {
		const struct tl_pod_container *c = &s->meta->containers[i];
		const char *id = c->container_id;
		uint64_t cg = c->cgroup_id;
		struct json_object *o;

		for (size_t k = 0; *id && k < n_seen; k++) {
			if (container_id_matches(id, seen[k].id)) {
				seen[k].used = true;
				if (!cg)
					cg = seen[k].cgroup_id;
			}
		}
		o = tl_pod_meta_container_json(c, cg, false);
		if (!o)
			break;
		json_object_array_add(arr, o);
	}
	/* Containers only the kernel side knows (--no-api, or metadata late). */
	for (size_t k = 0; k < n_seen; k++) {
		struct json_object *o;

		if (seen[k].used)
			continue;
		o = json_object_new_object();
		if (!o)
			break;
		json_object_object_add(o, "name", str_or_null(seen[k].name));
		json_object_object_add(o, "containerID", json_object_new_string(seen[k].id));
		json_object_object_add(o, "role", NULL);
		json_object_object_add(o, "cgroupId", json_object_new_int64((int64_t)seen[k].cgroup_id));
		json_object_array_add(arr, o);
	}
	return arr;
}

bool state_complete(const struct tl_state *s)
{
	const struct loss *l = &s->loss;

	bool any = false;

	/* unreadable is already in disk */
#define ANY(field, key) any |= (key) != NULL && l->field != 0;
	LOSS_FIELDS(ANY)
#undef ANY
	return !any;
}

static struct json_object *build_recorder(const struct tl_state *s, const struct recorder_info *ri)
{
	struct json_object *r = json_object_new_object(), *probes;
	char tbuf[TL_TIME_STRLEN];

	if (!r)
		return NULL;
	json_object_object_add(r, "agentVersion", json_object_new_string(ri->agent_version));
	json_object_object_add(r, "node", json_object_new_string(ri->node));
	json_object_object_add(r, "kernel", json_object_new_string(ri->kernel));
	probes = json_object_new_array();
	for (size_t i = 0; probes && i < ri->n_probes; i++)
		json_object_array_add(probes, json_object_new_string(ri->probes[i]));
	json_object_object_add(r, "probes", probes);
	json_object_object_add(r, "configDigest", json_object_new_string(ri->config_digest));
	json_object_object_add(r, "recordingSince",
			       json_object_new_string(tl_time_format(s->recording_since_ns, tbuf)));
	if (s->gaps)
		json_object_object_add(r, "gaps", json_object_get(s->gaps));
	return r;
}

static struct json_object *build_loss(const struct loss *l)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
#define ADD(field, key) \
	if (key) \
		json_object_object_add(o, key, json_object_new_int64((int64_t)l->field));
	LOSS_FIELDS(ADD)
#undef ADD
	return o;
}

/* Appends ,"key":<o serialized> and drops o; -ENOMEM when o is NULL. */
static int add_part(struct tl_buf *out, const char *key, struct json_object *o, bool first)
{
	const char *s;
	size_t n;

	if (!o)
		return -ENOMEM;
	s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN |
					      JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	if (!first)
		tl_buf_addc(out, ',');
	tl_buf_addc(out, '"');
	tl_buf_adds(out, key);
	tl_buf_add(out, "\":", 2);
	if (s)
		tl_buf_add(out, s, n);
	json_object_put(o);
	return s ? 0 : -ENOMEM;
}

int document_write(const struct tl_state *s, const struct recorder_info *rec,
		   struct doc_cursor *cur, struct tl_buf *out, size_t chunk)
{
	static struct tl_event ev;
	int r;

	if (cur->phase == 0) {
		tl_buf_adds(out, "{\"apiVersion\":\"" TL_API_VERSION "\",");
		r = add_part(out, "pod", tl_export_pod(s->uid, s->meta), true);
		r = r ?: add_part(out, "containers", build_containers(s), false);
		if (r < 0)
			return r;
		tl_buf_adds(out, ",\"events\":[");
		cur->phase = 1;
		cur->i = 0;
	}
	while (cur->phase == 1) {
		if (cur->i >= s->n) {
			tl_buf_addc(out, ']');
			cur->phase = 2;
			break;
		}
		if (chunk && out->len >= chunk)
			return out->err ? out->err : 1;
		if (state_event(s, cur->i, &ev) < 0) {
			/* Never happens for a state this agent built; skip
			 * rather than write half an event. */
			cur->i++;
			continue;
		}
		if (cur->i > 0)
			tl_buf_addc(out, ',');
		tl_event_append_json(&ev, false, out);
		tl_event_clear(&ev);
		cur->i++;
	}
	if (cur->phase == 2) {
		/* The findings are computed off the loop once the document is
		 * on disk (termline-findings, docs/timeline-format.md): an open
		 * timeline and a document being written have none yet. */
		tl_buf_adds(out, ",\"findings\":[]");
		tl_buf_adds(out, state_complete(s) ? ",\"complete\":true" : ",\"complete\":false");
		r = add_part(out, "loss", build_loss(&s->loss), false);
		r = r ?: add_part(out, "recorder", build_recorder(s, rec), false);
		if (r < 0)
			return r;
		tl_buf_addc(out, '}');
		cur->phase = 3;
	}
	return out->err ? out->err : 0;
}

/* ---- state copies ---- */

/* In front of the arena: who shares it, and the size of its buffer
 * (big_grow's cap, this header included). */
struct arena_hdr {
	uint32_t refs;
	uint32_t _pad;
	size_t cap;
};

static struct arena_hdr *arena_hdr(uint8_t *arena)
{
	return (struct arena_hdr *)(void *)(arena - sizeof(struct arena_hdr));
}

uint8_t *arena_ref(uint8_t *arena)
{
	if (arena)
		arena_hdr(arena)->refs++;
	return arena;
}

void arena_unref(uint8_t *arena)
{
	struct arena_hdr *h = arena ? arena_hdr(arena) : NULL;

	if (h && --h->refs == 0)
		big_free(h, h->cap);
}

int arena_reserve(struct tl_state *s, size_t need)
{
	struct arena_hdr *h;
	size_t cap;

	if (need <= s->acap)
		return 0;
	if (s->arena && arena_hdr(s->arena)->refs == 1) {
		h = arena_hdr(s->arena);
		cap = h->cap;
		h = big_grow(h, &cap, sizeof(*h) + s->alen, sizeof(*h) + need);
		if (!h)
			return -ENOMEM;
	} else {
		/* Shared with a snapshot (or new): a copy of our own. */
		cap = 0;
		h = big_grow(NULL, &cap, 0, sizeof(*h) + need);
		if (!h)
			return -ENOMEM;
		h->refs = 1;
		if (s->arena) {
			memcpy(h + 1, s->arena, s->alen);
			arena_unref(s->arena);
		}
	}
	h->cap = cap;
	s->arena = (uint8_t *)(h + 1);
	s->acap = cap - sizeof(*h);
	return 0;
}

static void *dup_mem(const void *p, size_t n)
{
	void *c = malloc(n ? n : 1);

	if (c && n)
		memcpy(c, p, n);
	return c;
}

int state_copy(const struct tl_state *s, struct tl_state *ret)
{
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->uid, s->uid, sizeof(ret->uid));
	ret->meta = tl_pod_meta_ref(s->meta);
	ret->gaps = json_object_get(s->gaps);
	ret->loss = s->loss;
	ret->opened_ns = s->opened_ns;
	ret->recording_since_ns = s->recording_since_ns;
	ret->ctrs = dup_mem(s->ctrs, s->n_ctrs * sizeof(*s->ctrs));
	ret->n_ctrs = ret->cap_ctrs = s->n_ctrs;
	/* shared: a reference, not a copy (see arena_reserve) */
	ret->arena = arena_ref(s->arena);
	ret->alen = ret->acap = s->alen;
	{
		size_t bytes;

		ret->ev = big_dup(s->ev, s->n * sizeof(*s->ev), &bytes);
		ret->n = s->n;
		ret->cap = bytes / sizeof(*s->ev);
	}
	ret->aggs = dup_mem(s->aggs, s->n_aggs * sizeof(*s->aggs));
	ret->n_aggs = ret->cap_aggs = s->n_aggs;
	if (!ret->ctrs || (s->alen && !ret->arena) || !ret->ev || !ret->aggs ||
	    tl_strtab_clone(s->strs, &ret->strs) < 0) {
		state_release(ret);
		return -ENOMEM;
	}
	return 0;
}

void state_release(struct tl_state *s)
{
	if (!s)
		return;
	tl_pod_meta_unref(s->meta);
	json_object_put(s->gaps);
	tl_strtab_free(s->strs);
	free(s->ctrs);
	arena_unref(s->arena);
	big_free(s->ev, s->cap * sizeof(*s->ev));
	free(s->aggs);
	memset(s, 0, sizeof(*s));
}
