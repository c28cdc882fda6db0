/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cri-log.h"

int tl_cri_parse_line(const char *line, size_t len, struct tl_cri_piece *ret)
{
	const char *sp1, *sp2, *end = line + len;
	char ts[64];
	struct tl_cri_piece p = { 0 };
	size_t tl;

	sp1 = memchr(line, ' ', len);
	if (!sp1)
		return -EINVAL;
	tl = (size_t)(sp1 - line);
	if (tl == 0 || tl >= sizeof(ts))
		return -EINVAL;
	memcpy(ts, line, tl);
	ts[tl] = '\0';
	if (tl_time_parse(ts, &p.time_ns) < 0)
		return -EINVAL;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1));
	if (!sp2)
		return -EINVAL;
	if (sp2 - sp1 - 1 == 6 && memcmp(sp1 + 1, "stdout", 6) == 0)
		p.is_stderr = false;
	else if (sp2 - sp1 - 1 == 6 && memcmp(sp1 + 1, "stderr", 6) == 0)
		p.is_stderr = true;
	else
		return -EINVAL;
	/* The tag field is a ':'-separated list whose first element is P or
	 * F (CRI logging format); nothing else is defined today. */
	{
		const char *tag = sp2 + 1, *te = memchr(tag, ' ', (size_t)(end - tag));

		if (!te)
			te = end;
		if (te - tag < 1 || (tag[0] != 'P' && tag[0] != 'F') || (te - tag > 1 && tag[1] != ':'))
			return -EINVAL;
		p.partial = tag[0] == 'P';
		p.text = te < end ? te + 1 : end;
		p.len = (size_t)(end - p.text);
	}
	*ret = p;
	return 0;
}

struct joiner {
	char *buf;
	size_t len;
	int64_t time_ns;
	bool active;
	bool cut;
};

struct tl_cri_reader {
	char *line;          /* partial physical line */
	size_t line_len;
	bool skipping;       /* an over-long line: drop up to its '\n' */
	struct joiner j[2];  /* stdout, stderr */
	uint64_t garbage;
};

int tl_cri_reader_new(struct tl_cri_reader **ret)
{
	struct tl_cri_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->line = malloc(TL_CRI_LINE_MAX);
	r->j[0].buf = malloc(TL_CRI_RECORD_MAX + 1);
	r->j[1].buf = malloc(TL_CRI_RECORD_MAX + 1);
	if (!r->line || !r->j[0].buf || !r->j[1].buf) {
		tl_cri_reader_free(r);
		return -ENOMEM;
	}
	*ret = r;
	return 0;
}

void tl_cri_reader_free(struct tl_cri_reader *r)
{
	if (!r)
		return;
	free(r->line);
	free(r->j[0].buf);
	free(r->j[1].buf);
	free(r);
}

void tl_cri_reader_reset(struct tl_cri_reader *r)
{
	r->line_len = 0;
	r->skipping = false;
	for (int i = 0; i < 2; i++) {
		r->j[i].len = 0;
		r->j[i].active = false;
		r->j[i].cut = false;
	}
}

uint64_t tl_cri_reader_garbage(const struct tl_cri_reader *r)
{
	return r->garbage;
}

static void on_line(struct tl_cri_reader *r, const char *line, size_t len, tl_cri_record_cb cb,
		    void *ud)
{
	struct tl_cri_piece p;
	struct joiner *j;
	size_t room, k;

	if (tl_cri_parse_line(line, len, &p) < 0) {
		r->garbage++;
		return;
	}
	j = &r->j[p.is_stderr];
	if (!j->active) {
		j->active = true;
		j->time_ns = p.time_ns;
		j->len = 0;
		j->cut = false;
	}
	room = TL_CRI_RECORD_MAX - j->len;
	k = p.len < room ? p.len : room;
	memcpy(j->buf + j->len, p.text, k);
	j->len += k;
	if (k < p.len)
		j->cut = true;
	if (p.partial)
		return;
	j->buf[j->len] = '\0';
	j->active = false;
	cb(ud, j->time_ns, p.is_stderr, j->buf, j->len, j->cut);
}

int tl_cri_reader_feed(struct tl_cri_reader *r, const char *buf, size_t len, tl_cri_record_cb cb,
		       void *userdata)
{
	while (len > 0) {
		const char *nl = memchr(buf, '\n', len);
		size_t n = nl ? (size_t)(nl - buf) : len;

		if (r->skipping) {
			if (nl)
				r->skipping = false;
		} else if (r->line_len + n > TL_CRI_LINE_MAX) {
			r->garbage++;
			r->line_len = 0;
			r->skipping = !nl;
		} else if (nl && r->line_len == 0) {
			on_line(r, buf, n, cb, userdata);
		} else {
			memcpy(r->line + r->line_len, buf, n);
			r->line_len += n;
			if (nl) {
				on_line(r, r->line, r->line_len, cb, userdata);
				r->line_len = 0;
			}
		}
		if (!nl)
			break;
		buf += n + 1;
		len -= n + 1;
	}
	return 0;
}
