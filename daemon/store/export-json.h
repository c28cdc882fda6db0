/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "pod-meta.h"

/* Building blocks of the timeline document (schema/timeline.schema.json)
 * and its file on disk. */
#define TL_API_VERSION "termline/v1"
/* Directory used for Pods whose namespace/name are unknown (--no-api). */
#define TL_UNKNOWN_NS "_unknown"

/* True when s can be one path component: non-empty, at most 253 bytes,
 * only [A-Za-z0-9._-], not "." or "..". Kubernetes namespaces, names and
 * UIDs all pass. */
bool tl_export_name_ok(const char *s);

/* Longest file name (NAME_MAX). */
#define TL_EXPORT_FILE_MAX 255

/* Directory (relative to STATE/timelines) and file name of a document:
 * "NS" + "NAME_UID.json" (NAME cut so the file name fits NAME_MAX), or
 * "_unknown" + "UID.json" when ns or name is NULL or unusable.
 * -ENAMETOOLONG if the buffers are short. */
int tl_export_doc_location(const char *ns, const char *name, const char *uid, char *dir,
			   size_t dirlen, char *file, size_t filelen);

/* The "pod" object from the API metadata (may be NULL: --no-api): every
 * key present, null where unknown; uid always set. The encoder is
 * tl_pod_meta_pod_json(). */
struct json_object *tl_export_pod(const char *uid, const struct tl_pod_meta *meta);
