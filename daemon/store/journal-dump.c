/* SPDX-License-Identifier: Apache-2.0 */
/* termline-journal: prints the events of a timeline journal (STATE/journal/
 * UID.tlj) as JSON lines, {"k":"ev","e":{event with podUid, containerId}},
 * in journal order: for operators on a node and for tests that compare a
 * journal with --emit-events. docs/journal-format.md describes the frames. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "journal.h"
#include "strtab.h"
#include "tl-buf.h"

struct dump {
	const char *uid;
	struct tl_strtab *strs;
	struct { uint32_t id_s, name_s; } ctrs[1024];
	uint32_t n_ctrs;
	unsigned long bad;
};

static int on_frame(void *ud, const uint8_t *p, size_t len)
{
	static struct tl_event ev;
	struct dump *d = ud;
	uint64_t v, kind, source, flags, ctr;
	size_t o = 1, n;
	int64_t t;
	struct tl_buf b;

	if (len < 1)
		return 0;
	if (p[0] == 'S') {
		if (tl_strtab_intern(d->strs, (const char *)p + 1, len - 1) < 0)
			d->bad++;
		return 0;
	}
	if (p[0] == 'C') {
		uint64_t id = 0, name = 0;

		if (d->n_ctrs >= 1024 || !(n = tl_varint_get(p + o, len - o, &id)) ||
		    !tl_varint_get(p + o + n, len - o - n, &name)) {
			d->bad++;
			return 0;
		}
		d->ctrs[d->n_ctrs].id_s = id ? (uint32_t)(id - 1) : UINT32_MAX;
		d->ctrs[d->n_ctrs].name_s = name ? (uint32_t)(name - 1) : UINT32_MAX;
		d->n_ctrs++;
		return 0;
	}
	if (p[0] != 'E' && p[0] != 'R')
		return 0;
	if (!(n = tl_varint_get(p + o, len - o, &v)))
		goto bad;
	t = tl_unzigzag(v);
	o += n;
	if (len - o < 2)
		goto bad;
	kind = p[o++];
	source = p[o++];
	if (!(n = tl_varint_get(p + o, len - o, &flags)))
		goto bad;
	o += n;
	if (!(n = tl_varint_get(p + o, len - o, &ctr)) || ctr > d->n_ctrs)
		goto bad;
	o += n;
	if (tl_event_init_kind(&ev, (enum tl_kind)kind, (enum tl_source)source, t) < 0 ||
	    tl_event_unpack(&ev, p + o, len - o, (uint32_t)flags, d->strs) < 0)
		goto bad;
	snprintf(ev.pod_uid, sizeof(ev.pod_uid), "%s", d->uid);
	if (ctr) {
		const char *id = tl_strtab_get(d->strs, d->ctrs[ctr - 1].id_s, NULL);
		const char *name = tl_strtab_get(d->strs, d->ctrs[ctr - 1].name_s, NULL);

		snprintf(ev.container_id, sizeof(ev.container_id), "%s", id ? id : "");
		snprintf(ev.container, sizeof(ev.container), "%s", name ? name : "");
	}
	tl_buf_init(&b, 0);
	tl_buf_adds(&b, "{\"k\":\"ev\",\"e\":");
	tl_event_append_json(&ev, true, &b);
	tl_buf_adds(&b, "}\n");
	if (!b.err)
		fwrite(b.p, 1, b.len, stdout);
	tl_buf_free(&b);
	tl_event_clear(&ev);
	return 0;
bad:
	d->bad++;
	return 0;
}

int main(int argc, char **argv)
{
	struct dump d = { 0 };
	char dirbuf[PATH_MAX], namebuf[PATH_MAX], *dir, *name, *dot;
	uint64_t bad = 0;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: termline-journal STATE/journal/UID.tlj\n");
		return 2;
	}
	snprintf(dirbuf, sizeof(dirbuf), "%s", argv[1]);
	snprintf(namebuf, sizeof(namebuf), "%s", argv[1]);
	dir = dirname(dirbuf);
	name = basename(namebuf);
	dot = strrchr(name, '.');
	if (!dot || strcmp(dot, TL_JOURNAL_EXT) != 0) {
		fprintf(stderr, "termline-journal: %s: not a %s file\n", argv[1], TL_JOURNAL_EXT);
		return 2;
	}
	*dot = '\0';
	d.uid = name;
	if (tl_strtab_new(&d.strs) < 0)
		return 1;
	r = tl_journal_replay(dir, name, on_frame, &d, &bad);
	tl_strtab_free(d.strs);
	if (fflush(stdout) != 0)
		return 1;
	if (r < 0) {
		fprintf(stderr, "termline-journal: %s: %s\n", argv[1], strerror(-r));
		return 1;
	}
	if (bad + d.bad)
		fprintf(stderr, "termline-journal: %s: %llu unreadable frames\n", argv[1],
			(unsigned long long)(bad + d.bad));
	return 0;
}
