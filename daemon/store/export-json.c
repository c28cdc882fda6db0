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
#include "fileio.h"

bool tl_export_is_temp(const char *file)
{
	size_t n = strlen(file), p = strlen(TL_EXPORT_TMP_PREFIX), x = strlen(TL_EXPORT_TMP_SUFFIX);

	return n == p + 6 + x && strncmp(file, TL_EXPORT_TMP_PREFIX, p) == 0 &&
	       strcmp(file + n - x, TL_EXPORT_TMP_SUFFIX) == 0;
}

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

int tl_export_write_atomic(const char *dir, const char *file, const char *data, size_t len)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	int fd = -1, dfd = -1, r, n;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	/* A short temp name of its own shape (TL_EXPORT_TMP_PREFIX...
	 * TL_EXPORT_TMP_SUFFIX): derived from FILE it passed NAME_MAX for long
	 * Pod names, and a Pod named ".x" looked like a temp file. */
	n = snprintf(tmp, sizeof(tmp), "%s/" TL_EXPORT_TMP_PREFIX "XXXXXX" TL_EXPORT_TMP_SUFFIX, dir);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	n = snprintf(dst, sizeof(dst), "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= sizeof(dst))
		return -ENAMETOOLONG;
	fd = mkostemps(tmp, (int)strlen(TL_EXPORT_TMP_SUFFIX), O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = tl_write_all(fd, data, len, NULL);
	if (r < 0)
		goto fail;
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0) {
		r = -errno;
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		r = -errno;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, dst) < 0) {
		r = -errno;
		goto fail;
	}
	/* The rename itself must survive a power cut too. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	r = fsync(dfd) < 0 ? -errno : 0;
	close(dfd);
	return r;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return r;
}
