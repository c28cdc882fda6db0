/* SPDX-License-Identifier: Apache-2.0 */
/* Istio's four overlapping drain settings (istio/istio#34855) are read from
 * the Pod itself so findings can say what the proxy really did: pilot-agent
 * waits terminationDrainDuration after SIGTERM before stopping Envoy;
 * drainDuration and parentShutdownDuration govern hot restarts and the
 * drain on shutdown; holdApplicationUntilProxyStarts orders the start. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "kube-istio.h"

#define SIDECAR_PREFIX "sidecar.istio.io/"

int tl_kube_go_duration(const char *s, double *ret_s)
{
	static const struct {
		const char *unit;
		double s;
	} units[] = { { "ns", 1e-9 }, { "us", 1e-6 }, { "µs", 1e-6 }, { "ms", 1e-3 },
		      { "s", 1 },     { "m", 60 },    { "h", 3600 } };
	double total = 0;
	const char *p = s;

	if (!s || !*s || strlen(s) > 64)
		return -EINVAL;
	if (strcmp(s, "0") == 0) {
		*ret_s = 0;
		return 0;
	}
	while (*p) {
		char *end;
		double v;
		size_t best = 0, bi = 0;

		v = strtod(p, &end);
		if (end == p || v < 0 || !isfinite(v))
			return -EINVAL;
		p = end;
		/* the longest unit that matches ("ms" before "m") */
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t n = strlen(units[i].unit);

			if (n > best && strncmp(p, units[i].unit, n) == 0) {
				best = n;
				bi = i;
			}
		}
		if (!best)
			return -EINVAL;
		total += v * units[bi].s;
		p += best;
	}
	*ret_s = total;
	return 0;
}

static const char *const duration_keys[] = { "terminationDrainDuration", "drainDuration",
					      "parentShutdownDuration" };

static void add_error(struct json_object *pc, const char *msg)
{
	json_object_object_add(pc, "error", json_object_new_string(msg));
}

/* The ProxyConfig keys we keep, from the root mapping of the document. */
static void read_proxy_config(const char *text, struct json_object *pc)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	size_t len = strlen(text);

	if (len > TL_ISTIO_CONFIG_MAX) {
		add_error(pc, "proxy.istio.io/config is too long");
		return;
	}
	if (!yaml_parser_initialize(&parser)) {
		add_error(pc, "out of memory");
		return;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		add_error(pc, "proxy.istio.io/config is not YAML");
		yaml_parser_delete(&parser);
		return;
	}
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE) {
		if (root)
			add_error(pc, "proxy.istio.io/config is not a mapping");
		goto out;
	}
	for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
	     pair < root->data.mapping.pairs.top; pair++) {
		yaml_node_t *k = yaml_document_get_node(&doc, pair->key);
		yaml_node_t *v = yaml_document_get_node(&doc, pair->value);
		const char *key, *val;

		if (!k || !v || k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE)
			continue;
		key = (const char *)k->data.scalar.value;
		val = (const char *)v->data.scalar.value;
		if (v->data.scalar.length > TL_ISTIO_VALUE_MAX)
			continue;
		for (size_t i = 0; i < sizeof(duration_keys) / sizeof(duration_keys[0]); i++) {
			double secs;

			if (strcmp(key, duration_keys[i]) != 0)
				continue;
			json_object_object_add(pc, key, json_object_new_string(val));
			if (i == 0 && tl_kube_go_duration(val, &secs) == 0)
				json_object_object_add(pc, "terminationDrainSeconds",
						       json_object_new_double(secs));
		}
		if (strcmp(key, "holdApplicationUntilProxyStarts") == 0) {
			if (strcmp(val, "true") == 0 || strcmp(val, "false") == 0)
				json_object_object_add(pc, key, json_object_new_boolean(val[0] == 't'));
		}
	}
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
}

struct json_object *tl_kube_istio_settings(struct json_object *annotations)
{
	struct json_object *out, *pc = NULL, *ann = NULL, *cfg;
	unsigned n = 0;

	if (!annotations || !json_object_is_type(annotations, json_type_object))
		return NULL;
	out = json_object_new_object();
	if (!out)
		return NULL;
	if (json_object_object_get_ex(annotations, "proxy.istio.io/config", &cfg) &&
	    json_object_is_type(cfg, json_type_string)) {
		pc = json_object_new_object();
		if (pc) {
			read_proxy_config(json_object_get_string(cfg), pc);
			json_object_object_add(out, "proxyConfig", pc);
		}
	}
	json_object_object_foreach(annotations, key, val) {
		if (strncmp(key, SIDECAR_PREFIX, strlen(SIDECAR_PREFIX)) != 0 ||
		    !json_object_is_type(val, json_type_string) ||
		    json_object_get_string_len(val) > TL_ISTIO_VALUE_MAX)
			continue;
		if (n++ >= TL_ISTIO_ANNOTATIONS_MAX)
			break;
		if (!ann) {
			ann = json_object_new_object();
			if (!ann)
				break;
			json_object_object_add(out, "annotations", ann);
		}
		json_object_object_add(ann, key, json_object_new_string(json_object_get_string(val)));
	}
	if (!pc && !ann) {
		json_object_put(out);
		return NULL;
	}
	return out;
}
