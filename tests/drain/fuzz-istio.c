/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: a Pod author's annotations (docs/drain.md, pod.istio): the
 * bytes as proxy.istio.io/config and, when they are JSON, as the whole
 * annotations object. The result is bounded and always encodes. */
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "kube-istio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(struct json_object *r)
{
	struct json_object *ann;

	if (!r)
		return;
	if (!json_object_to_json_string(r))
		abort();
	if (json_object_object_get_ex(r, "annotations", &ann) &&
	    json_object_object_length(ann) > TL_ISTIO_ANNOTATIONS_MAX)
		abort();
	json_object_put(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct json_object *a, *parsed;
	double secs;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	a = json_object_new_object();
	if (a) {
		json_object_object_add(a, "proxy.istio.io/config", json_object_new_string(s));
		json_object_object_add(a, "sidecar.istio.io/x", json_object_new_string(s));
		check(tl_kube_istio_settings(a));
		json_object_put(a);
	}
	parsed = json_tokener_parse(s);
	check(tl_kube_istio_settings(parsed));
	json_object_put(parsed);
	if (tl_kube_go_duration(s, &secs) == 0 && !(secs >= 0))
		abort();
	free(s);
	return 0;
}
