/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"

struct tl_journal {
	int fd;
	char path[PATH_MAX];
	uint64_t bytes;
	bool dirty;
};

static int journal_path(const char *dir, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s.jsonl", dir, name);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* Offset just past the last '\n' of fd (0 when there is none). */
static int last_line_end(int fd, off_t size, off_t *ret)
{
	char buf[4096];
	off_t pos = size;

	while (pos > 0) {
		size_t chunk = pos > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)pos;
		ssize_t n = pread(fd, buf, chunk, pos - (off_t)chunk);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if ((size_t)n != chunk)
			return -EIO;
		for (size_t i = chunk; i > 0; i--) {
			if (buf[i - 1] == '\n') {
				*ret = pos - (off_t)chunk + (off_t)i;
				return 0;
			}
		}
		pos -= (off_t)chunk;
	}
	*ret = 0;
	return 0;
}

int tl_journal_open(const char *dir, const char *name, struct tl_journal **ret)
{
	struct tl_journal *j;
	struct stat st;
	off_t end;
	int r;

	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->fd = -1;
	r = journal_path(dir, name, j->path, sizeof(j->path));
	if (r < 0)
		goto fail;
	j->fd = open(j->path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (j->fd < 0) {
		r = -errno;
		goto fail;
	}
	if (fstat(j->fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	r = last_line_end(j->fd, st.st_size, &end);
	if (r < 0)
		goto fail;
	if (end != st.st_size && ftruncate(j->fd, end) < 0) {
		r = -errno;
		goto fail;
	}
	j->bytes = (uint64_t)end;
	*ret = j;
	return 0;
fail:
	if (j->fd >= 0)
		close(j->fd);
	free(j);
	return r;
}

int tl_journal_append(struct tl_journal *j, struct json_object *rec)
{
	const char *s;
	size_t len, done = 0;
	char *line;
	int r = 0;

	s = json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		return -ENOMEM;
	len = strlen(s);
	if (len + 1 > TL_JOURNAL_RECORD_MAX)
		return -E2BIG;
	line = malloc(len + 1);
	if (!line)
		return -ENOMEM;
	memcpy(line, s, len);
	line[len] = '\n';
	len++;
	while (done < len) {
		ssize_t n = write(j->fd, line + done, len - done);

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
	free(line);
	if (r < 0 && done > 0) {
		/* A partial record (ENOSPC mid-write) would glue itself to the
		 * next one; cut it off. If that fails too, the replay skips the
		 * torn line anyway. */
		if (ftruncate(j->fd, (off_t)j->bytes) < 0)
			j->bytes += done;
	} else if (r == 0) {
		j->bytes += len;
	}
	j->dirty = true;
	return r;
}

int tl_journal_sync(struct tl_journal *j)
{
	if (!j || !j->dirty)
		return 0;
	if (fdatasync(j->fd) < 0)
		return -errno;
	j->dirty = false;
	return 0;
}

uint64_t tl_journal_bytes(const struct tl_journal *j)
{
	return j ? j->bytes : 0;
}

void tl_journal_close(struct tl_journal *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	free(j);
}

int tl_journal_remove(struct tl_journal *j)
{
	int r = 0;

	if (!j)
		return 0;
	if (unlink(j->path) < 0 && errno != ENOENT)
		r = -errno;
	tl_journal_close(j);
	return r;
}

static int replay_line(char *line, size_t len, tl_journal_record_cb cb, void *userdata,
		       uint64_t *bad)
{
	struct json_tokener *tok;
	struct json_object *rec;
	int r = 0;

	if (len == 0)
		return 0;
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	rec = json_tokener_parse_ex(tok, line, (int)len);
	if (!rec || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len ||
	    !json_object_is_type(rec, json_type_object)) {
		(*bad)++;
	} else {
		r = cb(userdata, rec);
	}
	json_object_put(rec);
	json_tokener_free(tok);
	return r;
}

int tl_journal_replay(const char *dir, const char *name, tl_journal_record_cb cb, void *userdata,
		      uint64_t *ret_bad)
{
	char path[PATH_MAX];
	char *line = NULL;
	size_t len = 0, cap = 0;
	bool skipping = false;
	uint64_t bad = 0;
	FILE *f;
	int c, r;

	r = journal_path(dir, name, path, sizeof(path));
	if (r < 0)
		return r;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while ((c = getc(f)) != EOF) {
		if (c == '\n') {
			if (skipping)
				bad++;
			else
				r = replay_line(line, len, cb, userdata, &bad);
			len = 0;
			skipping = false;
			if (r < 0)
				goto out;
			continue;
		}
		if (skipping)
			continue;
		if (len + 1 >= TL_JOURNAL_RECORD_MAX) {
			skipping = true;
			continue;
		}
		if (len + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *n = realloc(line, ncap);

			if (!n) {
				r = -ENOMEM;
				goto out;
			}
			line = n;
			cap = ncap;
		}
		line[len++] = (char)c;
	}
	if (ferror(f)) {
		r = -EIO;
		goto out;
	}
	/* A last line without '\n' was torn by a crash: not a record. */
	if (len > 0 || skipping)
		bad++;
	r = 0;
out:
	free(line);
	fclose(f);
	if (r == 0 && ret_bad)
		*ret_bad = bad;
	return r;
}
