/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline document (document.h): the events through the one encoder
 * of event.c, the rest through json-c (small parts). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "document.h"
#include "export-json.h"

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

static struct json_object *build_recorder(const struct tl_state *s, const struct doc_recorder *ri)
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
	if (s->n_gaps) {
		struct json_object *gaps = json_object_new_array();

		for (size_t i = 0; gaps && i < s->n_gaps; i++) {
			struct json_object *g = json_object_new_object();
			char a[TL_TIME_STRLEN], b[TL_TIME_STRLEN];

			if (!g)
				continue;
			json_object_object_add(g, "from", json_object_new_string(tl_time_format(s->gaps[i].from_ns, a)));
			json_object_object_add(g, "to", json_object_new_string(tl_time_format(s->gaps[i].to_ns, b)));
			json_object_array_add(gaps, g);
		}
		json_object_object_add(r, "gaps", gaps);
	}
	return r;
}

static struct json_object *build_loss(const struct state_loss *l)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
#define ADD(field, key) \
	if (key) \
		json_object_object_add(o, key, json_object_new_int64((int64_t)l->field));
	STATE_LOSS_FIELDS(ADD)
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

int doc_write(const struct tl_state *s, const struct doc_recorder *rec, struct doc_cursor *cur,
	      struct tl_buf *out, size_t chunk)
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
		/* only when the Pod's end was not recorded (docs/timeline-format.md) */
		if (state_close_reason_name(s->close_reason)) {
			tl_buf_adds(out, ",\"closeReason\":\"");
			tl_buf_adds(out, state_close_reason_name(s->close_reason));
			tl_buf_addc(out, '"');
		}
		r = add_part(out, "loss", build_loss(&s->loss), false);
		r = r ?: add_part(out, "recorder", build_recorder(s, rec), false);
		if (r < 0)
			return r;
		tl_buf_addc(out, '}');
		cur->phase = 3;
	}
	return out->err ? out->err : 0;
}
