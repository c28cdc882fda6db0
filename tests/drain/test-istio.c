/* SPDX-License-Identifier: Apache-2.0 */
/* pod.istio from a Pod's annotations: proxy.istio.io/config (YAML or JSON)
 * and sidecar.istio.io/..., with bounds on what a Pod author controls. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "kube-istio.h"
#include "../check-run.h"

static struct json_object *settings(const char *annotations_json)
{
	struct json_object *a = json_tokener_parse(annotations_json);
	struct json_object *r;

	ck_assert_ptr_nonnull(a);
	r = tl_kube_istio_settings(a);
	json_object_put(a);
	return r;
}

static const char *str_at(struct json_object *o, const char *k1, const char *k2)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k1, &v) || !json_object_object_get_ex(v, k2, &v))
		return NULL;
	return json_object_get_string(v);
}

START_TEST(yaml_proxy_config)
{
	struct json_object *r = settings(
		"{\"proxy.istio.io/config\":\"terminationDrainDuration: 30s\\nholdApplicationUntilProxyStarts: true\\n"
		"drainDuration: 45s\\nparentShutdownDuration: 1m0s\\nproxyMetadata:\\n  EXIT_ON_ZERO_ACTIVE_CONNECTIONS: 'true'\\n\","
		"\"sidecar.istio.io/inject\":\"true\",\"sidecar.istio.io/proxyCPU\":\"100m\",\"app.kubernetes.io/name\":\"web\"}");
	struct json_object *pc, *v;

	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(str_at(r, "proxyConfig", "terminationDrainDuration"), "30s");
	ck_assert_str_eq(str_at(r, "proxyConfig", "drainDuration"), "45s");
	ck_assert_str_eq(str_at(r, "proxyConfig", "parentShutdownDuration"), "1m0s");
	ck_assert(json_object_object_get_ex(r, "proxyConfig", &pc));
	ck_assert(json_object_object_get_ex(pc, "holdApplicationUntilProxyStarts", &v));
	ck_assert(json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v));
	ck_assert(json_object_object_get_ex(pc, "terminationDrainSeconds", &v));
	ck_assert(json_object_get_double(v) == 30.0);
	ck_assert(!json_object_object_get_ex(pc, "proxyMetadata", NULL));
	ck_assert_str_eq(str_at(r, "annotations", "sidecar.istio.io/inject"), "true");
	ck_assert_str_eq(str_at(r, "annotations", "sidecar.istio.io/proxyCPU"), "100m");
	ck_assert_ptr_null(str_at(r, "annotations", "app.kubernetes.io/name"));
	json_object_put(r);
}
END_TEST

START_TEST(json_proxy_config_and_errors)
{
	struct json_object *r = settings("{\"proxy.istio.io/config\":\"{\\\"terminationDrainDuration\\\": \\\"1m30s\\\"}\"}");
	struct json_object *pc, *v;

	ck_assert_str_eq(str_at(r, "proxyConfig", "terminationDrainDuration"), "1m30s");
	ck_assert(json_object_object_get_ex(r, "proxyConfig", &pc));
	ck_assert(json_object_object_get_ex(pc, "terminationDrainSeconds", &v));
	ck_assert(json_object_get_double(v) == 90.0);
	json_object_put(r);

	r = settings("{\"proxy.istio.io/config\":\"a: [\"}");
	ck_assert_str_eq(str_at(r, "proxyConfig", "error"), "proxy.istio.io/config is not YAML");
	json_object_put(r);
	r = settings("{\"proxy.istio.io/config\":\"- 1\\n- 2\\n\"}");
	ck_assert_str_eq(str_at(r, "proxyConfig", "error"), "proxy.istio.io/config is not a mapping");
	json_object_put(r);
	{
		size_t n = TL_ISTIO_CONFIG_MAX + 64;
		char *big = malloc(n + 64);
		struct json_object *a = json_object_new_object();

		ck_assert_ptr_nonnull(big);
		memset(big, 'x', n);
		big[n] = '\0';
		json_object_object_add(a, "proxy.istio.io/config", json_object_new_string(big));
		r = tl_kube_istio_settings(a);
		ck_assert_str_eq(str_at(r, "proxyConfig", "error"), "proxy.istio.io/config is too long");
		json_object_put(r);
		json_object_put(a);
		free(big);
	}
	/* none of them: nothing to add */
	ck_assert_ptr_null(settings("{\"app\":\"web\"}"));
	ck_assert_ptr_null(tl_kube_istio_settings(NULL));
}
END_TEST

START_TEST(annotation_bounds)
{
	struct json_object *a = json_object_new_object(), *r, *ann;
	char key[64];

	for (int i = 0; i < TL_ISTIO_ANNOTATIONS_MAX + 20; i++) {
		snprintf(key, sizeof(key), "sidecar.istio.io/k%d", i);
		json_object_object_add(a, key, json_object_new_string("v"));
	}
	r = tl_kube_istio_settings(a);
	ck_assert(json_object_object_get_ex(r, "annotations", &ann));
	ck_assert_int_eq(json_object_object_length(ann), TL_ISTIO_ANNOTATIONS_MAX);
	json_object_put(r);
	json_object_put(a);
}
END_TEST

START_TEST(go_durations)
{
	static const struct {
		const char *in;
		double s;
		int r;
	} cases[] = {
		{ "5s", 5, 0 }, { "1m30s", 90, 0 }, { "250ms", 0.25, 0 }, { "1h", 3600, 0 }, { "0", 0, 0 },
		{ "1.5s", 1.5, 0 }, { "", 0, -EINVAL }, { "5", 0, -EINVAL }, { "5x", 0, -EINVAL },
		{ "-1s", 0, -EINVAL }, { "s", 0, -EINVAL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double s = -1;

		ck_assert_msg(tl_kube_go_duration(cases[i].in, &s) == cases[i].r, "%s", cases[i].in);
		if (!cases[i].r)
			ck_assert_msg(s > cases[i].s - 1e-9 && s < cases[i].s + 1e-9, "%s: %f", cases[i].in, s);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("istio");
	TCase *tc = tcase_create("settings");

	tcase_add_test(tc, yaml_proxy_config);
	tcase_add_test(tc, json_proxy_config_and_errors);
	tcase_add_test(tc, annotation_bounds);
	tcase_add_test(tc, go_durations);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? 1 : 0;
}
