// SPDX-License-Identifier: Apache-2.0
/* rollout deployment/NAME (rollout/NAME, an Argo Rollout): every Pod of
 * the replaced ReplicaSet(s), from every node's agent: Pods terminated,
 * failed requests in total and by finding, the worst Pods, and one
 * recommendation for the Deployment: the largest value any Pod needed of
 * the most severe finding's setting (the setting that would have covered
 * every Pod). docs/cli.md. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "clock.h"
#include "findings.h"

#define REVISION_ANNOTATION "deployment.kubernetes.io/revision"
/* Argo Rollouts: the revision on the Rollout and on each of its
 * ReplicaSets, and the label its ReplicaSets carry the Pod template's hash
 * in (the Rollout's status.currentPodHash names the current one). */
#define ARGO_REVISION_ANNOTATION "rollout.argoproj.io/revision"
#define ARGO_HASH_LABEL "rollouts-pod-template-hash"
#define ARGO_GROUP_VERSION "/apis/argoproj.io/v1alpha1"
#define WORST 5

static long revision_of(struct json_object *o, bool rollout)
{
	const char *r = json_str(json_path(o, "metadata.annotations"),
				 rollout ? ARGO_REVISION_ANNOTATION : REVISION_ANNOTATION);

	return r ? strtol(r, NULL, 10) : 0;
}

const char *replaced_kind(const struct replaced *sel)
{
	return sel->rollout ? "rollout" : "deployment";
}

/* After a Rollout's 404: whether the API server serves rollouts in
 * argoproj.io at all (Argo CD and Argo Workflows share the group). */
static bool rollouts_served(struct source *src)
{
	struct json_object *list = NULL, *res;
	struct src_err e;
	bool found = false;

	if (source_api_get(src, ARGO_GROUP_VERSION, &list, &e) < 0)
		return false;
	if (json_object_object_get_ex(list, "resources", &res) &&
	    json_object_is_type(res, json_type_array))
		for (size_t i = 0; i < json_object_array_length(res); i++) {
			const char *n = json_str(json_object_array_get_idx(res, i), "name");

			found |= n && strcmp(n, "rollouts") == 0;
		}
	json_object_put(list);
	return found;
}

static bool owned_by(struct json_object *rs, const char *uid)
{
	struct json_object *owners;
	bool mine = false;

	if (uid &&
	    json_object_object_get_ex(json_path(rs, "metadata"), "ownerReferences", &owners) &&
	    json_object_is_type(owners, json_type_array))
		for (size_t k = 0; k < json_object_array_length(owners); k++) {
			const char *ou = json_str(json_object_array_get_idx(owners, k), "uid");

			mine |= ou && strcmp(ou, uid) == 0;
		}
	return mine;
}

/* The replaced ReplicaSets' names (or the one of --revision), and when
 * the current revision's ReplicaSet was created (0: not known). A
 * Rollout's current ReplicaSet is the one of its status.currentPodHash,
 * else the one of its revision. -ENOENT: no such object; -ENOPKG: no
 * Rollout CRD. */
static int replicasets(const struct cli *cli, struct source *src, bool rollout, const char *ns,
		       const char *name, struct json_object *names, long *ret_current,
		       int64_t *current_created, struct src_err *e)
{
	struct json_object *dep = NULL, *rsl = NULL, *items = NULL;
	const char *uid, *hash = NULL;
	char path[1024];
	long current;
	int r;

	if (rollout)
		snprintf(path, sizeof(path), ARGO_GROUP_VERSION "/namespaces/%s/rollouts/%s", ns,
			 name);
	else
		snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/deployments/%s", ns,
			 name);
	r = source_api_get(src, path, &dep, e);
	if (r == -ENOENT && rollout && !rollouts_served(src))
		return -ENOPKG;
	if (r < 0)
		return r;
	uid = json_str(json_path(dep, "metadata"), "uid");
	current = revision_of(dep, rollout);
	if (rollout) {
		hash = json_str(json_path(dep, "status"), "currentPodHash");
		if (hash && !hash[0])
			hash = NULL;
	}
	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/replicasets", ns);
	r = source_api_get(src, path, &rsl, e);
	if (r < 0)
		goto out;
	if (!json_object_object_get_ex(rsl, "items", &items) ||
	    !json_object_is_type(items, json_type_array))
		items = NULL;
	/* the Rollout's current revision: its current Pod hash's ReplicaSet's */
	for (size_t i = 0; hash && items && i < json_object_array_length(items); i++) {
		struct json_object *rs = json_object_array_get_idx(items, i);
		const char *h = json_str(json_path(rs, "metadata.labels"), ARGO_HASH_LABEL);

		if (owned_by(rs, uid) && h && strcmp(h, hash) == 0 && revision_of(rs, true))
			current = revision_of(rs, true);
	}
	*ret_current = current;
	for (size_t i = 0; items && i < json_object_array_length(items); i++) {
		struct json_object *rs = json_object_array_get_idx(items, i);
		bool mine = owned_by(rs, uid);
		long rev = revision_of(rs, rollout);

		if (mine && rev == current && current_created) {
			const char *c = json_str(json_path(rs, "metadata"), "creationTimestamp");

			if (!c || tl_time_parse(c, current_created) < 0)
				*current_created = 0;
		}
		if (!mine || (cli->revision ? rev != cli->revision : rev == current))
			continue;
		if (json_object_array_add(
			names, json_object_new_string(json_str(json_path(rs, "metadata"), "name")
							  ?: "")) < 0) {
			r = -ENOMEM;
			goto out;
		}
	}
	r = 0;
out:
	json_object_put(dep);
	json_object_put(rsl);
	return r;
}

static bool name_in(struct json_object *names, const char *n)
{
	for (size_t i = 0; n && i < json_object_array_length(names); i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(names, i)), n) == 0)
			return true;
	return false;
}

bool is_deployment_arg(const char *arg)
{
	static const char *const forms[] = {"deployment/", "deploy/", "deployments/",
					    "deployment.apps/"};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (strncmp(arg, forms[i], strlen(forms[i])) == 0)
			return true;
	return false;
}

bool is_rollout_arg(const char *arg)
{
	/* kubectl's names of Argo's Rollout: its short name is ro */
	static const char *const forms[] = {"rollout/", "rollouts/", "ro/", "rollout.argoproj.io/",
					    "rollouts.argoproj.io/"};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (strncmp(arg, forms[i], strlen(forms[i])) == 0)
			return true;
	return false;
}

bool is_workload_arg(const char *arg)
{
	return is_deployment_arg(arg) || is_rollout_arg(arg);
}

/* When a timeline's Pod was replaced: its deletion, else its first SIGTERM,
 * else its first event. */
static int64_t replaced_at(struct json_object *doc)
{
	struct tl_model m;
	int64_t t = 0;

	if (tl_model_build(doc, &m) == 0)
		t = m.ref_ns;
	tl_model_done(&m);
	return t;
}

int replaced_pods(const struct cli *cli, const char *arg, struct replaced *sel)
{
	const char *slash = strchr(arg, '/');
	struct json_object *all = NULL;
	struct src_err e;
	int r;

	sel->name[0] = sel->ns[0] = 0;
	sel->names = json_object_new_array();
	sel->docs = json_object_new_array();
	if (!sel->names || !sel->docs)
		return EXIT_USAGE;
	if (slash && !is_workload_arg(arg)) {
		cli_err(cli, "%s: only deployment/NAME or rollout/NAME", arg);
		return EXIT_USAGE;
	}
	sel->rollout = slash && is_rollout_arg(arg);
	snprintf(sel->name, sizeof(sel->name), "%s", slash ? slash + 1 : arg);
	if (!sel->name[0]) {
		cli_err(cli, "no %s name", sel->rollout ? "Rollout" : "Deployment");
		return EXIT_USAGE;
	}
	r = source_open(cli, &sel->src, &e);
	snprintf(sel->ns, sizeof(sel->ns), "%s", source_namespace(sel->src, cli));
	if (r == 0) {
		r = replicasets(cli, sel->src, sel->rollout, sel->ns, sel->name, sel->names,
				&sel->current_revision, &sel->current_created_ns, &e);
		if (r == 0 && sel->since_current && !sel->since_ns)
			sel->since_ns = sel->current_created_ns;
		if (r == -ENOTSUP) {
			/* --from: no API server to ask which ReplicaSets the
			 * Deployment (Rollout) owns: its Pods' owners are
			 * NAME-<hash> (Argo names a Rollout's the same way) */
			sel->guessed = true;
			r = 0;
		} else if (r == -ENOPKG) {
			cli_err(cli,
				"rollout %s/%s: the API server has no rollouts.argoproj.io (Argo "
				"Rollouts' CRD is not installed)",
				sel->ns, sel->name);
			fprintf(stderr, "  next: kubectl get crd rollouts.argoproj.io\n");
			return EXIT_USAGE;
		} else if (r == -ENOENT) {
			cli_err(cli, "%s %s/%s not found", replaced_kind(sel), sel->ns, sel->name);
			fprintf(stderr, "  next: kubectl -n %s get %s\n", tx(sel->ns),
				sel->rollout ? "rollouts.argoproj.io" : "deployments");
			return EXIT_NOT_FOUND;
		}
	}
	if (r == 0)
		r = source_list(sel->src, sel->ns, "ReplicaSet", NULL, &all, &e);
	if (r < 0) {
		if (!e.msg[0])
			snprintf(e.msg, sizeof(e.msg), "%s", strerror(-r));
		report(cli, &e);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < json_object_array_length(all); i++) {
		struct json_object *d = json_object_array_get_idx(all, i);
		const char *owner = json_str(json_path(d, "pod.owner"), "name");
		size_t n = strlen(sel->name);

		if (sel->guessed ? !(owner && strncmp(owner, sel->name, n) == 0 && owner[n] == '-' &&
				     !strchr(owner + n + 1, '-'))
				 : !name_in(sel->names, owner))
			continue;
		if (sel->since_ns && replaced_at(d) < sel->since_ns)
			continue;
		if (json_object_array_add(sel->docs, json_object_get(d)) < 0) {
			json_object_put(d);
			json_object_put(all);
			return EXIT_USAGE;
		}
	}
	json_object_put(all);
	return 0;
}

void replaced_done(struct replaced *sel)
{
	json_object_put(sel->names);
	json_object_put(sel->docs);
	source_free(sel->src);
	memset(sel, 0, sizeof(*sel));
}

struct pod_sum {
	struct json_object *doc, *fs;
	size_t failed;
	struct verdict v;
};

static int by_failed(const void *a, const void *b)
{
	const struct pod_sum *x = a, *y = b;

	return x->failed < y->failed ? 1 : x->failed > y->failed ? -1 : 0;
}

/* A finding that says something is wrong (not an all-clear "no change"). */
static bool affects(struct json_object *f)
{
	return tl_finding_severity_rank(json_str(f, "severity")) >= 2;
}

#define CONSUMER_LINES 10 /* consumers told without -v */

static double lag_of(struct json_object *a, const char *k)
{
	struct json_object *v = json_path(a, k);

	return v && (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int))
		   ? json_object_get_double(v)
		   : -1e18;
}

static int by_lag(const void *x, const void *y)
{
	struct json_object *a = *(struct json_object *const *)x, *b = *(struct json_object *const *)y;
	double la = lag_of(a, "lagMaxSeconds"), lb = lag_of(b, "lagMaxSeconds");

	if (la != lb)
		return la > lb ? -1 : 1;
	return (int)(json_object_get_int64(json_path(b, "failed")) -
		     json_object_get_int64(json_path(a, "failed")));
}

/* The consumers of every replaced Pod, by workload: "ingress-nginx/
 * ingress-nginx-controller (deploy), 3 Pods, sent to 3 of the 3 replaced
 * Pods: lag p50 +0.400 s, p99 +2.900 s, max +3.100 s; 27 of 310 requests
 * failed", the slowest first. */
static void print_consumers(const struct cli *cli, struct json_object *agg, size_t pods)
{
	size_t n = agg ? json_object_array_length(agg) : 0, shown;
	struct json_object **v;

	if (!n)
		return;
	v = calloc(n, sizeof(*v));
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = json_object_array_get_idx(agg, i);
	qsort(v, n, sizeof(*v), by_lag);
	shown = cli->verbose > 0 || n <= CONSUMER_LINES + 1 ? n : CONSUMER_LINES;
	{
		char head[300];

		snprintf(head, sizeof(head),
			 "Who kept sending, over the %zu replaced Pod%s (lag: its last request after "
			 "the endpoint left every slice):",
			 pods, pods == 1 ? "" : "s");
		wrap(cli, stdout, 0, 2, head);
	}
	for (size_t i = 0; i < shown; i++) {
		struct json_object *a = v[i], *w = json_path(a, "workload");
		const char *kind = json_str(a, "kind"), *key = json_str(a, "consumer");
		long long members = json_object_get_int64(json_path(a, "pods"));
		long long seen = json_object_get_int64(json_path(a, "timelines"));
		char who[400], lags[200] = "", p50[OFFSET_LEN], p99[OFFSET_LEN], mx[OFFSET_LEN];
		char text[1200];

		if (json_str(w, "kind") && json_str(w, "name"))
			/* the key is NAMESPACE/Kind/NAME */
			snprintf(who, sizeof(who), "%.*s/%s (%s)", (int)strcspn(key ? key : "", "/"),
				 key ? key : "", json_str(w, "name"), json_str(w, "kind"));
		else
			snprintf(who, sizeof(who), "%s", key ? key : "?");
		if (lag_of(a, "lagMaxSeconds") > -1e17)
			snprintf(lags, sizeof(lags), "lag p50 %s, p99 %s, max %s; ",
				 fmt_offset(p50, 1 + llround(lag_of(a, "lagP50Seconds") * 1e9), 1),
				 fmt_offset(p99, 1 + llround(lag_of(a, "lagP99Seconds") * 1e9), 1),
				 fmt_offset(mx, 1 + llround(lag_of(a, "lagMaxSeconds") * 1e9), 1));
		bool pod = kind && strcmp(kind, "Pod") == 0, node = kind && strcmp(kind, "Node") == 0;

		snprintf(text, sizeof(text), "%s, %lld %s, sent to %lld of the %zu replaced Pod%s: %s%lld "
			 "of %lld requests failed",
			 tx(who), members,
			 pod    ? (members == 1 ? "Pod" : "Pods")
			 : node ? (members == 1 ? "Node" : "Nodes")
				: (members == 1 ? "address" : "addresses"),
			 seen, pods, pods == 1 ? "" : "s", lags,
			 (long long)json_object_get_int64(json_path(a, "failed")),
			 (long long)json_object_get_int64(json_path(a, "requests")));
		wrap(cli, stdout, 2, 4, text);
	}
	if (shown < n)
		printf("  %s %zu more (-v lists them; -o json has each)\n", glyph_ellipsis(cli),
		       n - shown);
	printf("\n");
	free(v);
}

int cmd_rollout(struct cli *cli)
{
	const char *ns, *name;
	struct replaced sel = {0};
	struct json_object *names, *docs, *out = NULL, *by_rule = NULL, *best = NULL,
						  *worst = NULL;
	struct json_object *best_f = NULL, *best_doc = NULL;
	struct pod_sum *sums = NULL;
	char text[2048];
	bool json = !output_is(cli, "text"), guessed;
	size_t n = 0, total = 0, terminated = 0, incomplete = 0, with_failures = 0;
	int best_rank = 0, rc, r;

	r = replaced_pods(cli, cli->args[0], &sel);
	if (r) {
		replaced_done(&sel);
		return r;
	}
	rc = EXIT_USAGE;
	ns = sel.ns;
	name = sel.name;
	names = sel.names;
	docs = sel.docs;
	guessed = sel.guessed;
	sums = calloc(json_object_array_length(docs) + 1, sizeof(*sums));
	by_rule = json_object_new_object();
	worst = json_object_new_array();
	if (!sums || !by_rule || !worst)
		goto done;
	for (size_t i = 0; i < json_object_array_length(docs); i++) {
		struct json_object *d = json_object_array_get_idx(docs, i), *fs = NULL;
		struct tl_model m;

		if (resolve_peers(cli, d) < 0 || (!json && doc_escape(d) < 0))
			goto done;
		if (doc_findings(d, &fs) < 0)
			continue;
		rollout_consumers_add(fs);
		if (tl_model_build(d, &m) == 0) {
			if (m.deletion_ns)
				terminated++;
			verdict_build(cli, &m, fs, &sums[n].v);
		}
		if (!m.complete)
			incomplete++;
		tl_model_done(&m);
		sums[n].doc = d;
		sums[n].fs = fs;
		sums[n].failed = sums[n].v.failed;
		total += sums[n].failed;
		with_failures += sums[n].failed > 0;
		n++;
		for (size_t k = 0; k < json_object_array_length(fs); k++) {
			struct json_object *f = json_object_array_get_idx(fs, k), *agg, *v, *reco;
			const char *rule = json_str(f, "rule");
			int rank = tl_finding_severity_rank(json_str(f, "severity"));
			size_t nf = json_object_array_length(json_path(f, "requestIds"));

			/* an all-clear is no Pod affected */
			if (!rule || !affects(f))
				continue;
			if (!json_object_object_get_ex(by_rule, rule, &agg)) {
				agg = json_object_new_object();
				if (!agg || json_object_object_add(by_rule, rule, agg) < 0) {
					json_object_put(agg);
					continue;
				}
				json_object_object_add(agg, "pods", json_object_new_int(0));
				json_object_object_add(agg, "failedRequests",
						       json_object_new_int(0));
			}
			json_object_int_inc(json_path(agg, "pods"), 1);
			if ((v = json_path(f, "numbers.failedRequests")))
				nf = (size_t)json_object_get_int64(v);
			json_object_int_inc(json_path(agg, "failedRequests"), (int64_t)nf);
			/* the Deployment's recommendation: the most severe
			 * finding's setting, at the largest value any Pod needed */
			reco = json_path(f, "recommendation");
			v = json_path(reco, "value");
			if (!reco || !v || !json_object_is_type(v, json_type_int))
				continue;
			if (!best || rank > best_rank ||
			    (rank == best_rank &&
			     strcmp(json_str(best, "setting") ?: "",
				    json_str(reco, "setting") ?: "") == 0 &&
			     json_object_get_int64(v) >
				 json_object_get_int64(json_path(best, "value")))) {
				struct json_object *copy = NULL;

				if (json_object_deep_copy(reco, &copy, NULL) < 0)
					continue;
				json_object_object_add(copy, "rule", json_object_new_string(rule));
				json_object_object_add(
				    copy, "pod",
				    json_object_new_string(json_str(json_path(d, "pod"), "name")
							       ?: "?"));
				json_object_put(best);
				best = copy;
				best_rank = rank;
				best_f = f;
				best_doc = d;
			}
		}
	}
	qsort(sums, n, sizeof(*sums), by_failed);
	for (size_t i = 0; i < n && i < WORST; i++) {
		struct json_object *w = json_object_new_object();

		if (!w || json_object_array_add(worst, w) < 0) {
			json_object_put(w);
			goto done;
		}
		json_object_object_add(
		    w, "pod",
		    json_object_new_string(json_str(json_path(sums[i].doc, "pod"), "name") ?: "?"));
		json_object_object_add(w, "failedRequests",
				       json_object_new_int64((int64_t)sums[i].failed));
	}
	/* the verdict: the cause most Pods share, told as the worst of them tells it */
	{
		const char *cause = NULL, *cause_rule = NULL;
		size_t cause_pods = 0;

		for (size_t i = 0; i < n; i++) {
			size_t same = 0;

			if (!sums[i].v.cause_rule || !sums[i].failed)
				continue;
			for (size_t k = 0; k < n; k++)
				same += sums[k].v.cause_rule && sums[k].failed &&
					strcmp(sums[k].v.cause_rule, sums[i].v.cause_rule) == 0;
			if (same > cause_pods) {
				cause_pods = same;
				cause = sums[i].v.cause;
				cause_rule = sums[i].v.cause_rule;
			}
		}
		if (total)
			snprintf(text, sizeof(text),
				 "%zu request%s failed in %zu of %zu Pod%s (%zu "
				 "terminated)%s%s",
				 total, total == 1 ? "" : "s", with_failures, n, n == 1 ? "" : "s",
				 terminated, cause ? ": " : "", cause ? cause : "");
		else
			snprintf(text, sizeof(text),
				 "no request failed in %zu Pod%s (%zu terminated)", n,
				 n == 1 ? "" : "s", terminated);
		if (total && cause && cause_pods < with_failures) {
			size_t l = strlen(text);

			snprintf(text + l, sizeof(text) - l, " (in %zu of those %zu Pods)",
				 cause_pods, with_failures);
		}
		(void)cause_rule;
	}
	if (json) {
		out = json_object_new_object();
		if (!out)
			goto done;
		/* "rollout" for an Argo Rollout; "kind" says which */
		json_object_object_add(out, replaced_kind(&sel), json_object_new_string(name));
		json_object_object_add(out, "kind",
				       json_object_new_string(sel.rollout ? "Rollout" : "Deployment"));
		json_object_object_add(out, "namespace", json_object_new_string(ns));
		json_object_object_add(out, "replicaSets", json_object_get(names));
		json_object_object_add(out, "pods", json_object_new_int64((int64_t)n));
		json_object_object_add(out, "podsTerminated",
				       json_object_new_int64((int64_t)terminated));
		json_object_object_add(out, "podsWithFailedRequests",
				       json_object_new_int64((int64_t)with_failures));
		json_object_object_add(out, "failedRequests",
				       json_object_new_int64((int64_t)total));
		json_object_object_add(out, "incompleteTimelines",
				       json_object_new_int64((int64_t)incomplete));
		json_object_object_add(out, "verdict", json_object_new_string(text));
		json_object_object_add(out, "byFinding", json_object_get(by_rule));
		json_object_object_add(out, "worstPods", json_object_get(worst));
		json_object_object_add(out, "recommendation", json_object_get(best));
		json_object_object_add(out, "consumers", rollout_consumers());
		if (print_structured(cli, out) != EXIT_FOUND)
			goto done;
	} else {
		char head[2400];

		snprintf(head, sizeof(head), "%s%s %s/%s:%s %s%s.%s", col(cli, "bold"),
			 replaced_kind(&sel), tx(ns), tx(name), col(cli, "reset"), total ? col(cli, "red") : "", text,
			 total ? col(cli, "reset") : "");
		wrap(cli, stdout, 0, 2, head);
		snprintf(head, sizeof(head), "The Pods of %s%s.",
			 guessed ? "the ReplicaSets named after it (no API server with --from)"
				 : "the replaced ReplicaSet(s) ",
			 "");
		if (!guessed) {
			for (size_t i = 0; i < json_object_array_length(names); i++) {
				size_t l = strlen(head) - 1;

				snprintf(head + l, sizeof(head) - l, "%s%s.", i ? ", " : "",
					 tx(json_object_get_string(
					     json_object_array_get_idx(names, i))));
			}
		}
		wrap(cli, stdout, 0, 2, head);
		if (incomplete)
			printf("%s%zu timeline%s incomplete: the figures are lower bounds%s\n",
			       col(cli, "red"), incomplete, incomplete == 1 ? "" : "s",
			       col(cli, "reset"));
		printf("\n");
		if (best && best_doc) {
			/* the fix at the largest value any Pod needed: told with that
			 * Pod's timeline */
			struct tl_model m;
			struct verdict v;

			if (tl_model_build(best_doc, &m) == 0) {
				memset(&v, 0, sizeof(v));
				v.fix = best_f;
				if (verdict_print_fix(cli, stdout, &m, &v))
					printf("  (the largest value any Pod needed: %s, finding "
					       "%s)\n\n",
					       tx(json_str(best, "pod") ?: "?"),
					       json_str(best, "rule") ?: "?");
			}
			tl_model_done(&m);
		} else {
			printf("No fix: no finding with a setting to change.\n\n");
		}
		{
			struct json_object *agg = rollout_consumers();

			print_consumers(cli, agg, n);
			json_object_put(agg);
		}
		if (json_object_object_length(by_rule))
			printf("Findings, by the Pods and failed requests they cover (a request "
			       "can be "
			       "in several):\n");
		json_object_object_foreach(by_rule, k, v)
		{
			int pods = json_object_get_int(json_path(v, "pods"));
			long long fr = json_object_get_int64(json_path(v, "failedRequests"));

			printf("  %-32s %d Pod%s, %lld of the %zu failed requests\n", k, pods,
			       pods == 1 ? " " : "s", fr, total);
		}
		if (n) {
			printf("Worst Pods:\n");
			for (size_t i = 0; i < n && i < WORST; i++)
				printf("  %-40s %zu failed\n",
				       json_str(json_path(sums[i].doc, "pod"), "name") ?: "?",
				       sums[i].failed);
		}
	}
	rc = n ? EXIT_FOUND : EXIT_NOT_FOUND;
	if (!n) {
		cli_err(cli, "no timelines of %s %s/%s's Pods", replaced_kind(&sel), ns, name);
		fprintf(stderr, "  next: kubectl termline list -n %s\n", tx(ns));
	}
done:
	for (size_t i = 0; sums && i < n; i++)
		json_object_put(sums[i].fs);
	free(sums);
	json_object_put(out);
	json_object_put(by_rule);
	json_object_put(worst);
	json_object_put(best);
	replaced_done(&sel);
	return rc;
}
