/* SPDX-License-Identifier: Apache-2.0 */
/* The drained condition (docs/drain.md). Why "out of rotation" is not only
 * "gone or serving:false": the kubelet keeps running readiness probes while
 * a Pod terminates, so an app that is still up during its preStop stays
 * serving:true, and the endpoint leaves its slice only once the Pod is
 * terminal, i.e. after the preStop. Waiting for either inside a preStop
 * would always run to the timeout. What stops new connections is the
 * EndpointSlice controller's ready:false, terminating:true: kube-proxy then
 * routes to that endpoint only when the Service has no ready endpoint left,
 * and traffic that still arrives that way is what condition (c) observes. */
#include <errno.h>
#include <string.h>

#include "drain.h"

void tl_drain_state_init(struct tl_drain_state *s)
{
	memset(s, 0, sizeof(*s));
}

void tl_drain_fact_deletion(struct tl_drain_state *s, int64_t t)
{
	/* The first request counts: a second DELETE only shortens the grace. */
	if (!s->deletion_ns)
		s->deletion_ns = t > 0 ? t : 1;
}

static struct tl_drain_slice *find_slice(struct tl_drain_state *s, const char *name)
{
	for (size_t i = 0; i < s->nslices; i++)
		if (strcmp(s->slices[i].name, name) == 0)
			return &s->slices[i];
	return NULL;
}

/* A slice's entry in *ret, added when new: 0, -EINVAL for a name that is
 * not one (empty, too long), -ENOSPC when no slot is free. */
static int get_slice(struct tl_drain_state *s, const char *name, struct tl_drain_slice **ret)
{
	struct tl_drain_slice *sl;

	if (!name || !name[0] || strlen(name) >= TL_DRAIN_NAME_MAX)
		return -EINVAL;
	sl = find_slice(s, name);
	if (sl) {
		*ret = sl;
		return 0;
	}
	if (s->nslices < TL_DRAIN_MAX_SLICES) {
		sl = &s->slices[s->nslices++];
	} else {
		/* Reuse the slot of a slice the endpoint already left: its
		 * removal no longer holds anything back. */
		for (size_t i = 0; i < s->nslices && !sl; i++)
			if (!s->slices[i].present)
				sl = &s->slices[i];
		if (!sl)
			return -ENOSPC;
	}
	memset(sl, 0, sizeof(*sl));
	memcpy(sl->name, name, strlen(name) + 1);
	*ret = sl;
	return 0;
}

int tl_drain_fact_endpoint(struct tl_drain_state *s, const char *slice, const char *service,
			   bool ready, bool serving, bool terminating, int64_t t)
{
	struct tl_drain_slice *sl;
	int r;

	r = get_slice(s, slice, &sl);
	if (r == -ENOSPC)
		s->slices_ignored++;
	if (r < 0)
		return r;
	if (service && strlen(service) < TL_DRAIN_NAME_MAX)
		memcpy(sl->service, service, strlen(service) + 1);
	sl->present = true;
	sl->ready = ready;
	sl->serving = serving;
	sl->terminating = terminating;
	sl->changed_ns = t;
	return 0;
}

int tl_drain_fact_endpoint_removed(struct tl_drain_state *s, const char *slice, int64_t t)
{
	struct tl_drain_slice *sl;
	int r;

	/* A removal from a slice never seen listing it (the agent started
	 * after): remember it was listed, now gone. */
	r = get_slice(s, slice, &sl);
	if (r == -ENOSPC)
		return 0; /* every slot listing it: nothing to record */
	if (r < 0)
		return r;
	sl->present = false;
	sl->ready = sl->serving = false;
	sl->changed_ns = t;
	return 0;
}

void tl_drain_fact_connection(struct tl_drain_state *s, uint64_t count, int64_t t)
{
	s->connections += count;
	if (t > s->last_connection_ns)
		s->last_connection_ns = t;
}

void tl_drain_fact_request(struct tl_drain_state *s, int64_t t)
{
	s->requests++;
	if (t > s->last_request_ns)
		s->last_request_ns = t;
}

bool tl_drain_slice_in_rotation(const struct tl_drain_slice *sl)
{
	return sl->present && sl->serving && (sl->ready || !sl->terminating);
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

void tl_drain_evaluate(const struct tl_drain_state *s, int64_t now_ns, int64_t quiet_ns,
		       struct tl_drain_verdict *ret)
{
	int64_t out = s->deletion_ns;

	memset(ret, 0, sizeof(*ret));
	if (!s->deletion_ns) {
		ret->unmet = TL_DRAIN_NO_DELETION;
		return;
	}
	for (size_t i = 0; i < s->nslices; i++) {
		const struct tl_drain_slice *sl = &s->slices[i];

		if (tl_drain_slice_in_rotation(sl)) {
			ret->unmet = TL_DRAIN_IN_ROTATION;
			ret->slice = sl->name;
			return;
		}
		out = max64(out, sl->changed_ns);
	}
	if (s->slices_ignored) {
		ret->unmet = TL_DRAIN_IN_ROTATION;
		return;
	}
	ret->out_of_rotation_ns = out;
	ret->quiet_since_ns = max64(out, max64(s->last_connection_ns, s->last_request_ns));
	ret->drained_at_ns = ret->quiet_since_ns + (quiet_ns > 0 ? quiet_ns : 0);
	ret->unmet = now_ns >= ret->drained_at_ns ? TL_DRAIN_MET : TL_DRAIN_TRAFFIC;
}

const char *tl_drain_cond_name(enum tl_drain_cond c)
{
	switch (c) {
	case TL_DRAIN_MET:
		return "none";
	case TL_DRAIN_NO_DELETION:
		return "deletion";
	case TL_DRAIN_IN_ROTATION:
		return "endpoint";
	case TL_DRAIN_TRAFFIC:
		return "traffic";
	}
	return "unknown";
}
