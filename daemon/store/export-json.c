/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export-json.h"

bool tl_export_name_ok(const char *s)
{
	size_t n;

	if (!s || !*s)
		return false;
	n = strlen(s);
	if (n > 253 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-' || c == '_'))
			return false;
	}
	return true;
}

int tl_export_doc_location(const char *ns, const char *name, const char *uid, char *dir,
			   size_t dirlen, char *file, size_t filelen)
{
	int a, b;

	if (!tl_export_name_ok(uid))
		return -EINVAL;
	/* "_unknown" cannot collide with a real namespace: DNS labels have no '_'. */
	if (tl_export_name_ok(ns) && tl_export_name_ok(name)) {
		/* A Pod name may have 253 bytes: with "_", the UID and ".json"
		 * that passes NAME_MAX (255). The name is then cut in the file
		 * name only; the document itself says the whole name, and the
		 * index is built from documents, not file names. */
		int keep = (int)(TL_EXPORT_FILE_MAX - 1 - strlen(uid) - 5);

		a = snprintf(dir, dirlen, "%s", ns);
		b = snprintf(file, filelen, "%.*s_%s.json", keep, name, uid);
	} else {
		a = snprintf(dir, dirlen, "%s", TL_UNKNOWN_NS);
		b = snprintf(file, filelen, "%s.json", uid);
	}
	if (a < 0 || (size_t)a >= dirlen || b < 0 || (size_t)b >= filelen)
		return -ENAMETOOLONG;
	return 0;
}

struct json_object *tl_export_pod(const char *uid, const struct tl_pod_meta *meta)
{
	return tl_pod_meta_pod_json(meta, uid);
}
