/* SPDX-License-Identifier: Apache-2.0 */
/* Writes timeline documents covering every event type and the loss paths
 * into DIR, for the schema check (validate.py --sample). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "scenario.h"

static const char *const probes[] = { "signal_generate:tp_btf", "sched_process_exit:tp_btf", NULL };

static bool all_closed(void *ud)
{
	return tl_timelines_open_count(ud) == 0;
}

static bool one_open(void *ud)
{
	return tl_timelines_open_count(ud) == 1;
}

static int make_store(const char *dir, uint32_t max_events, struct tl_loop *loop,
		      struct tl_timelines **ret)
{
	struct tl_timelines_config cfg = {
		.state_dir = dir,
		.linger_s = 0,
		.max_events = max_events,
		/* so the samples carry the findings of closed documents */
		.findings_helper = TL_FINDINGS_HELPER,
		.recorder = { .agent_version = "0.1.0", .node = "node-1", .kernel = "6.18.0",
			      .config_digest = "sha256:00", .probes = probes },
	};

	return tl_timelines_new(&cfg, loop, ret);
}

static int fail(const char *what, int r)
{
	fprintf(stderr, "timeline-sample: %s: %s\n", what, strerror(r < 0 ? -r : r));
	return 1;
}

int main(int argc, char **argv)
{
	char a[PATH_MAX], b[PATH_MAX];
	struct tl_loop *loop = NULL;
	struct tl_timelines *t = NULL;
	struct json_object *meta;
	int64_t t0 = tl_now_real_ns() - 120 * SCN_S;
	int r;

	if (argc != 2)
		return fail("usage: timeline-sample DIR", EINVAL);
	snprintf(a, sizeof(a), "%s/a", argv[1]);
	snprintf(b, sizeof(b), "%s/b", argv[1]);
	r = tl_loop_new(&loop);
	if (r < 0)
		return fail("loop", r);

	/* Named Pod, whole termination; a --no-api Pod; an open Pod that is
	 * replayed by a second store and closed there. */
	r = make_store(a, 1000, loop, &t);
	if (r < 0)
		return fail("store", r);
	meta = scn_meta("shop", "web-5d8f-abcde", "11111111-1111-1111-1111-111111111111");
	r = scn_set_meta(t, "11111111-1111-1111-1111-111111111111", meta);
	json_object_put(meta);
	if (r < 0 || scn_termination(t, "11111111-1111-1111-1111-111111111111", t0, true) < 0 ||
	    scn_termination(t, "22222222-2222-2222-2222-222222222222", t0, true) < 0 ||
	    scn_termination(t, "33333333-3333-3333-3333-333333333333", t0, false) < 0)
		return fail("add", -EIO);
	if (!scn_run_until(loop, one_open, t))
		return fail("close", -ETIMEDOUT);
	tl_timelines_free(t);
	r = make_store(a, 1000, loop, &t);
	if (r < 0)
		return fail("replay", r);
	if (scn_add(t, "33333333-3333-3333-3333-333333333333", "pod.deleted", t0 + 40 * SCN_S) < 0)
		return fail("add", -EIO);
	if (!scn_run_until(loop, all_closed, t))
		return fail("close after replay", -ETIMEDOUT);
	tl_timelines_free(t);

	/* Capped: aggregation, drops and ring-buffer loss. */
	r = make_store(b, 8, loop, &t);
	if (r < 0)
		return fail("store", r);
	for (int i = 0; i < 40; i++)
		if (scn_add(t, "44444444-4444-4444-4444-444444444444", "http.request",
			    t0 + i * 100000000LL) < 0)
			return fail("add", -EIO);
	tl_timelines_note_kernel_loss(t, 3);
	if (scn_termination(t, "44444444-4444-4444-4444-444444444444", t0, true) < 0)
		return fail("add", -EIO);
	if (!scn_run_until(loop, all_closed, t))
		return fail("close", -ETIMEDOUT);
	tl_timelines_free(t);
	tl_loop_free(loop);
	return 0;
}
