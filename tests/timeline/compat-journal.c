/* SPDX-License-Identifier: Apache-2.0 */
/* compat-journal OUT: writes, with this build's store, a journal that
 * exercises every frame type a live agent writes (O, S, C, M, E, A, D, L,
 * P; R and T by a compaction) and the document the store serves from it,
 * as OUT.tlj and OUT.json, and a journal with a G frame as OUT-gone.tlj
 * and OUT-gone.json. The pairs in corpus-journal/compat-* were
 * written by earlier builds: test-timeline replays each with the current
 * store and compares the documents, so that a journal of an agent being
 * upgraded still replays (docs/journal-format.md). Two runs with a
 * restart between them, as an agent's life has. An http.request with
 * alsoSeenBy and preRoll: builds before they had a slot kept them as the
 * event's extra fields. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "journal.h"
#include "scenario.h"

#define UID "c0c0c0c0-0000-4000-8000-00000000c0c0"
#define UID_GONE "c1c1c1c1-0000-4000-8000-00000000c1c1"
/* 2026-11-19: fixed, so that two builds write the same events */
#define T0 (1795000000LL * SCN_S)

static bool only_main(void *ud, const char *uid)
{
	(void)ud;
	return strcmp(uid, UID) == 0;
}

/* An event as a document says it (the fields every build reads by name). */
static int add_json(struct tl_timelines *t, const char *text)
{
	struct json_object *o = json_tokener_parse(text);
	struct tl_event ev;
	int r = o ? tl_event_from_json(o, &ev) : -EINVAL;

	json_object_put(o);
	if (r < 0)
		return r;
	snprintf(ev.pod_uid, sizeof(ev.pod_uid), "%s", UID);
	r = tl_timelines_add(t, &ev);
	tl_event_clear(&ev);
	return r;
}

static int run(const char *state, bool again)
{
	static const char *const kinds[] = { "process.exec", "http.request", "process.exit",
					     "tcp.reset_sent", "http.request", "socket.listen" };
	struct tl_timelines_config cfg = {
		.state_dir = state,
		.linger_s = 3600,
		.max_events = 6000,
		.findings_helper = "",
		.recorder = { .agent_version = "compat", .node = "node-1" },
	};
	struct tl_loop *loop;
	struct tl_timelines *t;
	struct json_object *m;
	int r = 0;

	if (tl_loop_new(&loop) < 0 || tl_timelines_new(&cfg, loop, &t) < 0)
		return -1;
	if (!again) {
		m = scn_meta("shop", "compat", UID);
		r = scn_set_meta(t, UID, m);
		json_object_put(m);
		r = r ?: add_json(t, "{\"time\":\"2026-11-19T10:00:00.5Z\",\"source\":\"log\","
				  "\"type\":\"http.request\",\"container\":\"istio-proxy\","
				  "\"requestId\":\"rid-1\",\"method\":\"GET\",\"path\":\"/\","
				  "\"status\":200,\"start\":\"2026-11-19T10:00:00Z\","
				  "\"durationMs\":5,\"direction\":\"inbound\","
				  "\"alsoSeenBy\":\"kernel\",\"preRoll\":true}");
		/* past the budget: folded (A, D) and, past 256 KiB of
		 * frames, a compaction (R, T) */
		for (int i = 0; r == 0 && i < 12000; i++)
			r = scn_add(t, UID, kinds[i % 6], T0 + (int64_t)i * (SCN_S / 50));
		r = r ?: scn_add(t, UID_GONE, "process.exec", T0);
		/* the second Pod is gone while nobody listened (G) */
		if (r == 0 && tl_timelines_close_missing(t, only_main, NULL, 0, TL_CLOSE_UNKNOWN_TO_API) != 1)
			r = -1;
	} else {
		/* after a restart (P, L), a termination */
		r = scn_termination(t, UID, T0 + 200 * SCN_S, false);
		r = r < 0 ? r : 0;
		m = scn_meta("shop", "compat-renamed", UID);
		r = r ?: scn_set_meta(t, UID, m);
		json_object_put(m);
	}
	for (int i = 0; i < 5; i++)
		tl_loop_run_once(loop, 10);
	tl_timelines_note_kernel_loss(t, 3);
	if (r == 0)
		r = tl_timelines_flush(t);
	tl_timelines_free(t);
	tl_loop_free(loop);
	return r;
}

/* The journal of uid and the document served from it into OUT[-suffix]. */
static int save(const char *state, const char *uid, const char *ns, const char *name,
		const char *out, const char *suffix)
{
	struct tl_timelines_config cfg = { .state_dir = state, .findings_helper = "",
					   .linger_s = 3600 };
	char path[PATH_MAX], cmd[3 * PATH_MAX];
	struct tl_loop *loop = NULL;
	struct tl_timelines *t = NULL;
	char *doc = NULL;
	size_t len = 0;
	FILE *f;
	int r = 0;

	snprintf(path, sizeof(path), "%s/journal/%s%s", state, uid, TL_JOURNAL_EXT);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s%s.tlj'", path, out, suffix);
	if (system(cmd) != 0)
		return -1;
	/* as this build serves it, after one more restart (of a copy) */
	if (tl_loop_new(&loop) < 0 || tl_timelines_new(&cfg, loop, &t) < 0 ||
	    tl_timelines_get(t, ns, name, uid, &doc, &len) < 0)
		r = -1;
	snprintf(path, sizeof(path), "%s%s.json", out, suffix);
	if (r == 0 && (!(f = fopen(path, "we")) || fwrite(doc, 1, len, f) != len || fclose(f) != 0))
		r = -1;
	free(doc);
	tl_timelines_free(t);
	tl_loop_free(loop);
	return r;
}

int main(int argc, char **argv)
{
	char *state = scn_tmpdir();
	int r;

	if (argc != 2 || !state) {
		fprintf(stderr, "usage: compat-journal OUT\n");
		return 2;
	}
	r = run(state, false);
	r = r ?: run(state, true);
	r = r ?: save(state, UID, "shop", "compat-renamed", argv[1], "");
	r = r ?: save(state, UID_GONE, "_unknown", UID_GONE, argv[1], "-gone");
	scn_rm_rf(state);
	free(state);
	if (r < 0)
		fprintf(stderr, "compat-journal: failed\n");
	return r < 0 ? 1 : 0;
}
