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
#include "frames.h"
#include "journal.h"
#include "macro.h"
#include "strtab.h"
#include "tl-buf.h"

struct dump {
	const char *uid;
	struct tl_strtab *strs;
	struct state_ctr ctrs[STATE_MAX_CTRS];
	uint32_t n_ctrs;
	unsigned long bad;
};

static int print_event(struct dump *d, const struct frame_rec *f)
{
	static struct tl_event ev;
	const struct state_hdr *h = &f->event.h;
	struct tl_buf b;

	if ((h->ctr != STATE_NO_CTR && h->ctr >= d->n_ctrs) ||
	    tl_event_init_kind(&ev, (enum tl_kind)h->kind, (enum tl_source)h->source,
			       f->event.time_ns) < 0 ||
	    tl_event_unpack(&ev, f->event.payload, h->len, h->flags, d->strs) < 0)
		return -EINVAL;
	tl_copy_str(ev.pod_uid, sizeof(ev.pod_uid), d->uid);
	if (h->ctr != STATE_NO_CTR) {
		const char *id = tl_strtab_get(d->strs, d->ctrs[h->ctr].id_s, NULL);
		const char *name = tl_strtab_get(d->strs, d->ctrs[h->ctr].name_s, NULL);

		tl_copy_str(ev.container_id, sizeof(ev.container_id), id ? id : "");
		tl_copy_str(ev.container, sizeof(ev.container), name ? name : "");
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
}

/* The frames that name strings and containers, and the events: the same
 * decoder as the agent's replay (frames.c). */
static int on_frame(void *ud, const uint8_t *p, size_t len)
{
	struct dump *d = ud;
	struct frame_rec f;
	int r = frame_decode(p, len, d->uid, &f);

	if (r == 0) {
		switch (f.type) {
		case FRAME_STRING:
			r = tl_strtab_intern(d->strs, f.str.s, f.str.len) < 0 ? -EINVAL : 0;
			break;
		case FRAME_CTR:
			if (d->n_ctrs >= STATE_MAX_CTRS)
				r = -EINVAL;
			else
				d->ctrs[d->n_ctrs++] = f.ctr;
			break;
		case FRAME_EVENT:
		case FRAME_RAW:
			r = print_event(d, &f);
			break;
		default:
			break;
		}
	}
	frame_rec_clear(&f);
	if (r < 0)
		d->bad++;
	return 0;
}

int main(int argc, char **argv)
{
	static struct dump d;
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
