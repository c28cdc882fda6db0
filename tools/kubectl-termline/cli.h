/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* kubectl-termline: the verbs (one file each), their flags and help
 * (main.c, verbs.c), where documents come from (source.c), the verdict and
 * fix that every verb opens with (verdict.c) and the text helpers they
 * share (text.c). docs/cli.md is the user's side of all of it. */

struct json_object;
struct tl_model;

/* Exit statuses (docs/cli.md): 0 found / all passed, 1 not found / an
 * assertion failed, 2 bad usage, unreachable source, or (check) a timeline
 * missing or incomplete. */
enum { EXIT_FOUND = 0, EXIT_NOT_FOUND = 1, EXIT_USAGE = 2 };

/* Flags, one bit each: a verb lists those it uses, any other is bad usage. */
enum {
	F_FROM = 1u << 0,
	F_KUBECONFIG = 1u << 1,
	F_CONTEXT = 1u << 2,
	F_CLUSTER = 1u << 3,
	F_USER = 1u << 4,
	F_TIMEOUT = 1u << 5,
	F_NS = 1u << 6,
	F_ALLNS = 1u << 7,
	F_OUTPUT = 1u << 8,
	F_OUT = 1u << 9,
	F_VERBOSE = 1u << 10,
	F_COLOR = 1u << 11,
	F_MAXFAIL = 1u << 12,
	F_GRACEFUL = 1u << 13,
	F_LAG = 1u << 14,
	F_REVISION = 1u << 15,
	F_ALL = 1u << 16,
	F_FAILED = 1u << 17,
	F_SINCE = 1u << 18,
	F_NO_RESOLVE = 1u << 19,
	F_MAXRATIO = 1u << 20,
};

struct cli;

struct verb {
	const char *name;
	int (*fn)(struct cli *);
	unsigned flags;		/* F_* it uses */
	const char *outputs;	/* its -o values, "|"-separated, first the default; NULL: none */
	int min_args, max_args; /* positional arguments; max -1 = any */
	const char *synopsis;	/* after "kubectl termline VERB " */
	const char *summary;	/* one line, for the verb list */
	const char *help;	/* what it does, paragraphs */
	const char *examples;	/* lines of "  # comment" and "  kubectl termline ..." */
	bool hidden;
};

extern const struct verb CLI_VERBS[];
const struct verb *verb_find(const char *name);

struct cli {
	const char *prog;
	const struct verb *verb;
	unsigned given; /* F_* seen on the command line */
	/* where documents come from */
	const char *from; /* DIR, http://HOST:PORT, or NULL: the kubeconfig */
	const char
	    *kubeconfig; /* --kubeconfig, else $KUBECONFIG (a:b merged), else ~/.kube/config */
	const char *context, *cluster, *user;
	long timeout_ms; /* --request-timeout per request, 0 = none */
	const char *ns;	 /* -n */
	bool all_namespaces;
	/* output */
	const char *output;   /* -o, resolved: never NULL once parsed */
	const char *out_file; /* --out */
	int verbose;	      /* -v N */
	bool color;	      /* resolved from --color, the TTY, NO_COLOR, TERM */
	bool utf8;	      /* the locale writes UTF-8: … and × rather than ... and x */
	int width;	      /* columns for wrapping and tables */
	/* show: --since OFFSET (since_ns from the deletion); check: --since
	 * TIME|DURATION (since_ns a time) */
	bool show_all, show_failed, has_since;
	const char *since_arg;
	int64_t since_ns;
	/* check */
	long max_failed; /* -1 = not asserted */
	double max_ratio; /* --max-failed-ratio, < 0 = not asserted */
	bool require_graceful;
	double max_endpoint_lag; /* < 0 = not asserted */
	long revision;		 /* rollout --revision, 0 = every replaced one */
	bool no_resolve;	 /* --no-resolve: peers are not asked of the API server */
	char **args;		 /* positional arguments after the verb */
	int nargs;
};

int cli_help(const struct cli *cli, const struct verb *v, FILE *f);

/* ---- sources (source.c) ---- */

/* What went wrong, for people: msg is one short line naming who failed
 * (the agent on node X, the API server, a state dir); hint what to run
 * next; detail (the URL and the answer) is shown under -v. All three are
 * escaped for a terminal. */
struct src_err {
	char msg[512];
	char hint[512];
	char detail[2048];
};

struct source;
int source_open(const struct cli *cli, struct source **ret, struct src_err *e);
void source_free(struct source *s);
/* The namespace of a name given without one: -n, else the kubeconfig's
 * context's namespace (when the source is the kubeconfig), else "default",
 * as kubectl. */
const char *source_namespace(const struct source *s, const struct cli *cli);
/* Every timeline document the source has (newest first), filtered by
 * namespace (NULL = all) and by owner (kind/name, NULL = any). A json
 * array of documents. -errno with e. */
int source_list(struct source *s, const char *ns, const char *owner_kind, const char *owner_name,
		struct json_object **ret, struct src_err *e);
/* The newest timeline of NS/POD: 0, -ENOENT when not there (e says why
 * and what else there is: another namespace, no such namespace, a Pod not
 * terminated yet), else -errno with e. */
int source_get(struct source *s, const char *ns, const char *name, struct json_object **ret,
	       struct src_err *e);
/* Only for the kubeconfig source: GET an API path, parsed (rollout reads
 * Deployments and ReplicaSets). -ENOTSUP for the others. */
int source_api_get(struct source *s, const char *path, struct json_object **ret, struct src_err *e);
/* Prints e once: the message and hint, and under -v the detail. */
void report(const struct cli *cli, const struct src_err *e);

/* ---- text helpers (text.c) ---- */
const char *json_str(struct json_object *o, const char *key);
struct json_object *json_path(struct json_object *o, const char *dotted);
/* "NS/POD", "pod/POD", "pods/POD", "po/POD" or "POD" -> ns, name. -EINVAL. */
int split_ns_name(const char *arg, const char *dflt_ns, char **ret_ns, char **ret_name);

/* The one time formatter: an offset from the reference, "+1.500 s",
 * "-0.992 s", "+0.000 s" (never "-0.000 s"), and "invalid time" for a
 * time the document does not hold validly (t == 0). */
#define OFFSET_LEN 40
const char *fmt_offset(char *buf, int64_t t, int64_t ref);
/* A duration, "1.480 s". */
const char *fmt_secs(char *buf, int64_t ns);
/* A span of offsets, "+0.105…+1.406 s". */
const char *fmt_span(const struct cli *cli, char *buf, size_t len, int64_t from, int64_t to,
		     int64_t ref);
/* A kubectl-style age, "5m", "3h", "2d". */
const char *fmt_age(char *buf, size_t len, int64_t ns);

/* A string from elsewhere (a document, an argument, an answer) made safe
 * for a terminal (daemon/core/term-escape.h): s itself when it needs
 * nothing, else an escaped copy that lives until exit. */
const char *tx(const char *s);
/* Escapes every string and key of a parsed document in place, for the
 * text renderers (the JSON and YAML outputs print the document exact). */
int doc_escape(struct json_object *doc);

/* Where output goes: --out FILE or stdout. NULL with errno on failure. */
FILE *open_out(const struct cli *cli);
int close_out(const struct cli *cli, FILE *f);
/* ANSI colour or "" when colours are off. */
const char *col(const struct cli *cli, const char *which);
const char *glyph_ellipsis(const struct cli *cli);
const char *glyph_times(const struct cli *cli);
/* Prints text (no newline in it) wrapped to the terminal's width (at most
 * 100 columns): the first line after first_indent spaces, the rest after
 * indent. */
void wrap(const struct cli *cli, FILE *f, int first_indent, int indent, const char *text);
/* Display columns of UTF-8 text (one per code point). */
size_t text_cols(const char *s);

/* Counts the failed http.request events of doc (failed as in findings). */
size_t doc_failed_requests(struct json_object *doc);
/* One http.request event failed, as the findings count it. */
bool event_failed(struct json_object *ev);
/* gRPC's name of a status code ("UNAVAILABLE"), "CODE" past them. */
const char *grpc_status_name(long long code);
/* Prints o as the verb's -o asks: json (2-space indentation) or yaml
 * (libyaml's emitter). -errno; -EILSEQ when yaml cannot hold a string
 * that is not UTF-8. */
int print_json(FILE *f, struct json_object *o);
int print_yaml(FILE *f, struct json_object *o);
/* -o json or yaml of o on stdout; an exit status. */
int print_structured(const struct cli *cli, struct json_object *o);
bool output_is(const struct cli *cli, const char *what);
/* The timeline's findings as the CLI computes them (not the stored ones:
 * the CLI's rules may be newer than the agent's). -errno. */
int doc_findings(struct json_object *doc, struct json_object **ret);

/* One line on stderr, prefixed with the program and verb, escaped. */
void cli_err(const struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Opens the source and reads NS/POD: EXIT_FOUND with *ret, else the exit
 * status (the reason printed, once, unless quiet; then e holds it). */
int load_doc(const struct cli *cli, const char *arg, struct json_object **ret, bool quiet,
	     struct src_err *e);
/* The event's one-line description (show, SVG titles, trace args). */
void describe_event(struct json_object *ev, char *buf, size_t len);
/* The event is the API server's (a Pod or endpoint fact): it belongs on
 * the API/endpoint lane. A kernel or log event without a container (the
 * sandbox's pause process, a cgroup not attributed) belongs on none. */
bool event_is_api(struct json_object *ev);
/* A short human name of the event's kind ("SIGTERM", "listener closed"). */
const char *kind_name(struct json_object *ev);

/* ---- the verdict (verdict.c) ---- */

/* The answer every verb opens with, from the document's model and its
 * findings (any rule: what a rule is not known for here is told from its
 * summary). */
struct verdict {
	char headline[768]; /* one sentence: what failed, how many, when, the cause */
	char cause[512];    /* the cause alone ("app closed :8080 1.480 s before ...") */
	size_t failed;	    /* failed requests (a request seen twice counts once) */
	int64_t first_fail_ns, last_fail_ns;
	const char *cause_rule;		/* the finding the cause comes from, or NULL */
	struct json_object *primary;	/* that finding (borrowed) */
	struct json_object *fix;	/* the finding whose recommendation is the fix, or NULL */
	int64_t window_from, window_to; /* the failure window (0: none) */
	char window_label[160];
	bool terminated; /* a deletion or SIGTERM was recorded */
};
int verdict_build(const struct cli *cli, const struct tl_model *m, struct json_object *findings,
		  struct verdict *v);
/* "all 14 requests" (first), "the same 14 requests, seen as those ...",
 * "12 of the 14 failed requests", "none of the 14 failed requests": what a
 * finding covers of the failed requests, so that the counts reconcile. */
void verdict_covers(const struct verdict *v, struct json_object *finding, bool first, char *buf,
		    size_t len);
/* The fix, paste-ready: a kubectl patch of the owner (or a YAML fragment)
 * and the alternatives. Lines into f, indented. Returns 0 when there was
 * none to print. */
int verdict_print_fix(const struct cli *cli, FILE *f, const struct tl_model *m,
		      const struct verdict *v);
/* The container a recommendation's setting names (spec.containers[NAME]),
 * into buf; false when it names none. */
bool setting_container(const char *setting, char *buf, size_t len);
/* The span of time a finding is about (its rule's window, else its first
 * to last failed request): false when it has none. */
bool finding_window(const struct tl_model *m, struct json_object *finding, int64_t *from,
		    int64_t *to);
/* The fix in a few words ("preStop sleep 3 s on app"), "" when none. */
void verdict_fix_short(const struct verdict *v, char *buf, size_t len);

/* The container's preStop hook: its first exec from about the deletion
 * on (the API's word of the deletion may reach the agent after the
 * kubelet already ran the hook: PRESTOP_SKEW_NS earlier counts) and before
 * its SIGTERM. 0 when none. */
#define PRESTOP_SKEW_NS 1000000000LL
int64_t prestop_of(const struct tl_model *m, struct json_object *events, const char *ctr);

/* ---- peers (peers.c) ---- */
/* Resolves doc's peer addresses into its "peers" (explain, rollout): not
 * with --no-resolve, nor with --from and no --kubeconfig. 0 (a resolution
 * that cannot be made is said once on stderr) or -ENOMEM. */
int resolve_peers(const struct cli *cli, struct json_object *doc);
/* rollout: the consumers of each timeline's findings, then their aggregate. */
void rollout_consumers_add(struct json_object *findings);
struct json_object *rollout_consumers(void);

/* ---- a Deployment's or an Argo Rollout's replaced Pods (rollout.c:
 * rollout and check) ---- */
struct replaced {
	char name[256], ns[256];
	bool rollout;		   /* rollout/NAME: an Argo Rollout (argoproj.io), not a Deployment */
	struct source *src;
	struct json_object *names; /* the replaced ReplicaSets (with --from: none known) */
	struct json_object *docs;  /* the timelines of their Pods, newest first */
	bool guessed;		   /* --from: ReplicaSets told by their name, NAME-<hash> */
	int64_t since_ns;	   /* in: only Pods replaced at or after it (0: any) */
	bool since_current;	   /* in: without since_ns, since the current ReplicaSet's creation */
	long current_revision;	   /* the Deployment's revision (0: unknown) */
	int64_t current_created_ns; /* the current revision's ReplicaSet was created (0: unknown) */
};
/* "deployment/NAME" (deploy/, deployments/, deployment.apps/). */
bool is_deployment_arg(const char *arg);
/* "rollout/NAME" (rollouts/, ro/, rollout.argoproj.io/,
 * rollouts.argoproj.io/): an Argo Rollout. */
bool is_rollout_arg(const char *arg);
/* Either of them: a workload whose replaced Pods rollout and check take. */
bool is_workload_arg(const char *arg);
/* "deployment" or "rollout", as a selection is told. */
const char *replaced_kind(const struct replaced *sel);
/* The timelines of the Pods of deployment/NAME's (rollout/NAME's)
 * replaced ReplicaSets (--revision N: that revision's), replaced at or
 * after sel->since_ns: 0, else the exit status with the reason printed
 * (EXIT_NOT_FOUND: no such Deployment or Rollout; EXIT_USAGE: among
 * others, no Rollout CRD on the API server). sel->since_ns is read;
 * replaced_done() after. */
int replaced_pods(const struct cli *cli, const char *arg, struct replaced *sel);
void replaced_done(struct replaced *sel);

/* ---- consumers (consumers.c) ---- */

/* A peer ("ADDR:PORT") as the consumer findings name it: "ns/name" of a
 * Pod (workload "deploy/NAME", kubectl's short kind), "node/NAME", else
 * its address; self for loopback, the Pod's own address and a peer
 * resolved as "self". From the document's "peers" when resolved. */
struct peer_who {
	char name[300];
	char addr[64];
	char workload[300]; /* "" when none is known */
	const char *kind;   /* "Pod", "Node", "external", "unknown", "self"; NULL: not resolved */
	bool self, created_after;
};
/* 0, or -EINVAL when peer is not an address. */
int peer_who(struct json_object *doc, const char *peer, struct peer_who *w);

struct consumer {
	struct peer_who who;
	size_t requests, failed; /* inbound, the whole document, a request once */
	size_t connections;	 /* tcp.accepted */
	size_t reused;		 /* keep-alive connections from before the drain used after it */
	int64_t first_ns, last_ns;
	struct json_object *entry; /* its traffic_after_endpoint_removed entry, or NULL */
	int lane;		   /* consumers_lanes(): its lane, -1 before */
	int rank;		   /* its place in the finding's list (slowest first), -1 none */
};
struct consumers {
	struct consumer *c;
	size_t n, cap;
	int *req;		    /* per model request: its consumer, -1 none */
	int64_t cutoff_ns;	    /* the drain's start: first SIGTERM, else the removal */
	bool any_peer;		    /* the document has peers at all */
	struct json_object *finding; /* traffic_after_endpoint_removed, or NULL (borrowed) */
	struct json_object *index;   /* name -> index */
	char (*lane_name)[300];
	size_t n_lanes;
	int lanes_by; /* 0 a consumer a lane, 1 a workload, 2 a kind */
};
/* The consumers of the model's document (its inbound requests' peers and
 * accepted connections, not the Pod itself). 0 or -ENOMEM. */
int consumers_build(const struct tl_model *m, struct json_object *findings, struct consumers *cs);
void consumers_done(struct consumers *cs);
/* Groups the consumers into at most max lanes when it can (by consumer,
 * else workload, else kind): the number of lanes, or -ENOMEM. */
int consumers_lanes(struct consumers *cs, size_t max);
/* What a lane holds in a few words ("deploy/web", "3 consumers"). */
const char *consumers_lane_sub(const struct consumers *cs, size_t lane, char *buf, size_t len);
/* s within cols columns, its middle cut with an ellipsis (a namespace
 * and a Pod's hash both stay). */
void cut_middle(const struct cli *cli, const char *s, size_t cols, char *buf, size_t len);
/* s within cols columns, its end cut ("deploy/ingress-n…"). */
void cut_end(const struct cli *cli, const char *s, size_t cols, char *buf, size_t len);

/* ---- verbs ---- */
int cmd_list(struct cli *cli);
int cmd_show(struct cli *cli);
int cmd_explain(struct cli *cli);
int cmd_render(struct cli *cli);
int cmd_check(struct cli *cli);
int cmd_rollout(struct cli *cli);
int cmd_completion(struct cli *cli);
int cmd_help(struct cli *cli);
/* `__complete ARGS... WORD`: the candidates for WORD, one per line, then
 * ":DIRECTIVE" (cobra's protocol, which kubectl_complete-termline and
 * kubectl's plugin completion speak). */
int cli_complete(int argc, char **argv);

int render_svg(const struct cli *cli, FILE *f, struct json_object *doc);
int render_trace(FILE *f, struct json_object *doc);
