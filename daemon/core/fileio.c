/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

int tl_read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	struct stat st;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		r = -EISDIR;
		goto out;
	}
	/* Grow as we go: sizes from stat are not trustworthy for procfs,
	 * FIFOs or files being rewritten. One byte past max tells "exactly
	 * full" from "too big". */
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 8192;
			char *nb;

			if (ncap > max + 1)
				ncap = max + 1;
			if (ncap <= len) {
				r = -EFBIG;
				goto out;
			}
			nb = realloc(buf, ncap + 1);
			if (!nb) {
				r = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			r = -EFBIG;
			goto out;
		}
	}
	if (!buf) {
		buf = malloc(1);
		if (!buf) {
			r = -ENOMEM;
			goto out;
		}
	}
	buf[len] = '\0';
	*ret = buf;
	if (ret_len)
		*ret_len = len;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return r;
}

int tl_write_all(int fd, const void *p, size_t len, size_t *ret_done)
{
	const char *c = p;
	size_t done = 0;
	int r = 0;

	while (done < len) {
		ssize_t n = write(fd, c + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (n == 0) {
			r = -EIO;
			break;
		}
		done += (size_t)n;
	}
	if (ret_done)
		*ret_done = done;
	return r;
}

bool tl_file_is_temp(const char *name)
{
	size_t n = strlen(name), p = strlen(TL_FILE_TMP_PREFIX), x = strlen(TL_FILE_TMP_SUFFIX);

	return n == p + 6 + x && strncmp(name, TL_FILE_TMP_PREFIX, p) == 0 &&
	       strcmp(name + n - x, TL_FILE_TMP_SUFFIX) == 0;
}

int tl_file_temp(const char *dir, char *tmp, size_t size)
{
	int n, fd;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	n = snprintf(tmp, size, "%s/" TL_FILE_TMP_PREFIX "XXXXXX" TL_FILE_TMP_SUFFIX, dir);
	if (n < 0 || (size_t)n >= size) {
		if (size)
			tmp[0] = '\0';
		return -ENAMETOOLONG;
	}
	fd = mkostemps(tmp, (int)strlen(TL_FILE_TMP_SUFFIX), O_CLOEXEC);
	if (fd < 0) {
		n = -errno;
		tmp[0] = '\0';
		return n;
	}
	return fd;
}

int tl_file_commit(int fd, const char *tmp, const char *path, const char *dir, bool *renamed)
{
	int dfd, r = 0;

	*renamed = false;
	if (fchmod(fd, 0644) < 0 || fdatasync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		return r;
	*renamed = true;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fsync(dfd) < 0)
		r = -errno;
	close(dfd);
	return r;
}

int tl_file_write_atomic(const char *dir, const char *file, const char *data, size_t len)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	bool renamed = false;
	int fd, r, n;

	n = snprintf(dst, sizeof(dst), "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= sizeof(dst))
		return -ENAMETOOLONG;
	fd = tl_file_temp(dir, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	r = tl_write_all(fd, data, len, NULL);
	if (r < 0)
		close(fd);
	else
		r = tl_file_commit(fd, tmp, dst, dir, &renamed);
	if (r < 0 && !renamed)
		unlink(tmp);
	return r;
}
