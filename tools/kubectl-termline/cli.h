/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* kubectl-termline: the verbs (one file each), where documents come from
 * (source.c) and the text helpers they share (text.c). */

struct json_object;

/* Exit statuses (docs/cli.md): 0 found / all passed, 1 not found / an
 * assertion failed, 2 bad usage, unreachable source, or (check) a timeline
 * missing or incomplete. */
enum { EXIT_FOUND = 0, EXIT_NOT_FOUND = 1, EXIT_USAGE = 2 };

struct cli {
	const char *prog;
	const char *from;	/* DIR, http://HOST:PORT, or NULL: the kubeconfig */
	const char *kubeconfig; /* --kubeconfig, else $KUBECONFIG, else ~/.kube/config */
	const char *ns;		/* -n */
	const char *output;	/* -o */
	const char *out_file;	/* --out */
	bool all_namespaces;
	bool color;
	/* check */
	long max_failed; /* -1 = not asserted */
	bool require_graceful;
	double max_endpoint_lag; /* < 0 = not asserted */
	long revision;		 /* rollout --revision, 0 = the newest replaced */
	bool no_resolve;	 /* --no-resolve: peers are not asked of the API server */
	char **args;		 /* positional arguments after the verb */
	int nargs;
};

/* ---- sources (source.c) ---- */
struct source;
/* -errno; err says why in one line. */
int source_open(const struct cli *cli, struct source **ret, char *err, size_t errlen);
void source_free(struct source *s);
/* The namespace of a name given without one: -n, else the kubeconfig's
 * current context's namespace (when the source is the kubeconfig), else
 * "default", as kubectl. */
const char *source_namespace(const struct source *s, const struct cli *cli);
/* Every timeline document the source has (newest first), filtered by
 * namespace (NULL = all) and by owner (kind/name, NULL = any), and by
 * time (deletion or first event at or after since_ns, 0 = any). Returns
 * a json array of documents. -errno with err. */
int source_list(struct source *s, const char *ns, const char *owner_kind, const char *owner_name,
		int64_t since_ns, struct json_object **ret, char *err, size_t errlen);
/* The newest timeline of NS/POD: 0, -ENOENT when not there, else -errno
 * with err. */
int source_get(struct source *s, const char *ns, const char *name, struct json_object **ret,
	       char *err, size_t errlen);
/* Only for the kubeconfig source: GET an API path, parsed (rollout reads
 * Deployments and ReplicaSets). -ENOTSUP for the others. */
int source_api_get(struct source *s, const char *path, struct json_object **ret, char *err,
		   size_t errlen);

/* ---- text helpers (text.c) ---- */
const char *json_str(struct json_object *o, const char *key);
struct json_object *json_path(struct json_object *o, const char *dotted);
/* "NS/POD" -> ns, name (pointing into a static copy). -EINVAL. */
int split_ns_name(const char *arg, const char *dflt_ns, char **ret_ns, char **ret_name);
/* "+1.234s" / "-0.500s" */
void fmt_offset(char *buf, size_t len, int64_t ns);
/* Where output goes: --out FILE or stdout. NULL with errno on failure. */
FILE *open_out(const struct cli *cli);
int close_out(const struct cli *cli, FILE *f);
/* ANSI colour or "" when colours are off. */
const char *col(const struct cli *cli, const char *which);
/* Counts the failed http.request events of doc (failed as in findings). */
size_t doc_failed_requests(struct json_object *doc);
/* Print json with 2-space indentation and a newline. */
int print_json(FILE *f, struct json_object *o);
/* The timeline's findings as the CLI computes them (not the stored ones:
 * the CLI's rules may be newer than the agent's). -errno. */
int doc_findings(struct json_object *doc, struct json_object **ret);

/* ---- peers (peers.c) ---- */
/* Resolves doc's peer addresses into its "peers" (explain, rollout): not
 * with --no-resolve, nor with --from and no --kubeconfig. 0 (a resolution
 * that cannot be made is said once on stderr) or -ENOMEM. */
int resolve_peers(const struct cli *cli, struct json_object *doc);
/* rollout: the consumers of each timeline's findings, then their aggregate. */
void rollout_consumers_add(struct json_object *findings);
struct json_object *rollout_consumers(void);

/* ---- verbs ---- */
int cmd_list(struct cli *cli);
int cmd_show(struct cli *cli);
int cmd_explain(struct cli *cli);
int cmd_render(struct cli *cli);
int cmd_check(struct cli *cli);
int cmd_rollout(struct cli *cli);

int render_svg(FILE *f, struct json_object *doc);
int render_trace(FILE *f, struct json_object *doc);
int explain_text(FILE *f, const struct cli *cli, struct json_object *doc,
		 struct json_object *findings);

/* One line on stderr, prefixed with the program name. */
void cli_err(const struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Opens the source and reads NS/POD: EXIT_FOUND with *ret, else the exit
 * status (message printed). */
int load_doc(const struct cli *cli, const char *arg, struct json_object **ret);
/* The event's one-line description (show, SVG titles, trace names). */
void describe_event(struct json_object *ev, char *buf, size_t len);
