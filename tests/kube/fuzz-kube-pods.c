/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: Pods and EndpointSlices as a hostile API server may send
 * them, through the model that turns them into events. The input is a
 * stream of JSON objects; the first byte picks, per object, LIST item or
 * watch event and Pod or EndpointSlice; lookups run after every object. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube-pods.h"
#include "kube-stream.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ctx {
	struct tl_kpods *m;
	unsigned mode, n;
};

static void emit_cb(void *userdata _unused_, struct tl_event *ev)
{
	tl_event_clear(ev);
}

static int obj_cb(void *userdata, struct json_object *obj)
{
	static const char *const types[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK" };
	struct ctx *c = userdata;
	unsigned bits = (c->mode >> (2 * (c->n++ % 4))) & 3;
	const struct tl_reflector_ops *ops = bits & 1 ? &tl_kpods_slice_ops : &tl_kpods_pod_ops;
	struct json_object *md, *uid, *ip;
	const char *bare, *pu, *cn;

	if (bits & 2) {
		ops->list_begin(c->m, c->n < 3);
		ops->list_item(c->m, obj, c->n < 3);
		ops->list_end(c->m, c->n < 3);
	} else {
		ops->event(c->m, types[c->n % 4], obj);
	}
	/* lookups by whatever the object claims */
	if (json_object_object_get_ex(obj, "metadata", &md) &&
	    json_object_object_get_ex(md, "uid", &uid) && json_object_is_type(uid, json_type_string)) {
		struct tl_pod_meta *pm = tl_kpods_pod_meta(c->m, json_object_get_string(uid));

		/* the encoder and the decoder on whatever the model kept */
		if (pm) {
			struct json_object *j = tl_pod_meta_to_json(pm);
			struct tl_pod_meta *back = NULL;

			if (j && tl_pod_meta_from_json(j, NULL, &back) == 0 && !tl_pod_meta_equal(pm, back) &&
			    pm->containers_dropped == 0)
				__builtin_trap(); /* the record does not say what the model said */
			tl_pod_meta_unref(back);
			json_object_put(j);
		}
		tl_pod_meta_unref(pm);
		if (c->n % 5 == 0)
			tl_kpods_forget(c->m, json_object_get_string(uid));
	}
	if (json_object_object_get_ex(obj, "ip", &ip) && json_object_is_type(ip, json_type_string))
		(void)tl_kpods_pod_by_ip(c->m, json_object_get_string(ip));
	bare = tl_kpods_bare_id("containerd://abc");
	if (bare)
		(void)tl_kpods_lookup_container(c->m, bare, &pu, &cn);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tl_emitter e = { .emit = emit_cb };
	struct tl_kstream_limits lim = { .max_object = 1 << 16, .max_depth = 32 };
	struct ctx c = { 0 };
	struct tl_kstream *s;

	if (size < 1)
		return 0;
	c.mode = data[0];
	if (tl_kpods_new("node-a", &e, &c.m) < 0)
		return 0;
	if (tl_kstream_new(&lim, obj_cb, &c, &s) == 0) {
		tl_kstream_feed(s, (const char *)data + 1, size - 1);
		tl_kstream_free(s);
	}
	tl_kpods_free(c.m);
	return 0;
}
