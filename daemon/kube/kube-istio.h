/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stddef.h>
#include <json-c/json.h>

/* The Istio sidecar settings a Pod declares, for the timeline's pod.istio
 * (docs/drain.md): from the proxy.istio.io/config annotation (a ProxyConfig
 * in YAML or JSON) the keys that shape termination, and every
 * sidecar.istio.io/... annotation verbatim. annotations is the Pod's
 * metadata.annotations (may be NULL). New object, or NULL when the Pod has
 * none of them. */
struct json_object *tl_kube_istio_settings(struct json_object *annotations);

/* A Go duration ("5s", "1m30s", "250ms", "1h") in seconds. 0 or -EINVAL. */
int tl_kube_go_duration(const char *s, double *ret_s);

/* Bounds on peer-controlled input. */
#define TL_ISTIO_CONFIG_MAX (16 * 1024)
#define TL_ISTIO_ANNOTATIONS_MAX 64
#define TL_ISTIO_VALUE_MAX 1024
