/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
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
