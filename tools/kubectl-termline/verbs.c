// SPDX-License-Identifier: Apache-2.0
/* The verbs: the flags each uses (any other is bad usage), its outputs,
 * and its help with examples (VERB --help, help VERB). docs/cli.md says
 * the same at length. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define CONN (F_FROM | F_KUBECONFIG | F_CONTEXT | F_CLUSTER | F_USER | F_TIMEOUT | F_VERBOSE)
#define TARGET "NS/POD | pod/POD | POD"

const struct verb CLI_VERBS[] = {
    {
	.name = "explain",
	.fn = cmd_explain,
	.flags = CONN | F_NS | F_OUTPUT | F_COLOR | F_NO_RESOLVE,
	.outputs = "text|json|yaml",
	.min_args = 1,
	.max_args = 1,
	.synopsis = TARGET " [flags]",
	.summary = "why requests failed while a Pod terminated, and the fix",
	.help = "The first line is the verdict: what failed, how many, when, and the cause. Then "
		"the fix, once, paste-ready (a kubectl patch of the Pod's owner, or the YAML to "
		"add), with the preStop gate as the alternative. Then the findings, most severe "
		"first, each saying which of the failed requests it covers. Times are offsets "
		"from the deletion request. -v adds each finding's numbers and every request "
		"ID; -o json or -o yaml prints {\"findings\": [...]}.",
	.examples = "  # why requests failed while this Pod terminated, and what to change\n"
		    "  kubectl termline explain shop/web-5d9c7-x2x9q\n"
		    "  # the same Pod, in the context's namespace, with the numbers\n"
		    "  kubectl termline explain pod/web-5d9c7-x2x9q -v 1\n"
		    "  # the findings as YAML, from a copy of an agent's state dir\n"
		    "  kubectl termline explain shop/web-5d9c7-x2x9q --from ./state -o yaml\n",
    },
    {
	.name = "show",
	.fn = cmd_show,
	.flags = CONN | F_NS | F_OUTPUT | F_COLOR | F_ALL | F_FAILED | F_SINCE | F_NO_RESOLVE,
	.outputs = "text|wide|json|yaml",
	.min_args = 1,
	.max_args = 1,
	.synopsis = TARGET " [--all | --failed] [--since OFFSET] [flags]",
	.summary = "the timeline: the verdict, then its events, offset from the deletion",
	.help = "A column per lane (API server and endpoints, then each container), the "
		"offset from the deletion request, and the event. Key moments (the deletion, "
		"signals, listener closed, the endpoint's way out, the first and last failed "
		"request, exits) are marked with '>'. Runs of requests with the same outcome "
		"on the same lane are one line (\"120 x inbound GET /orders -> 200, "
		"-2.900...-0.100 s\"): --all lists every request, --failed every failed one "
		"and the key moments only. --since OFFSET starts at that offset (\"-2s\", "
		"\"0\", \"500ms\"). -o json or -o yaml prints the timeline document.",
	.examples = "  # what happened, a screenful\n"
		    "  kubectl termline show shop/web-5d9c7-x2x9q\n"
		    "  # every failed request with its ID, from the deletion on\n"
		    "  kubectl termline show shop/web-5d9c7-x2x9q --failed --since 0\n"
		    "  # the document itself\n"
		    "  kubectl termline show shop/web-5d9c7-x2x9q -o json\n",
    },
    {
	.name = "list",
	.fn = cmd_list,
	.flags = CONN | F_NS | F_ALLNS | F_OUTPUT | F_COLOR,
	.outputs = "text|wide|json|yaml",
	.min_args = 0,
	.max_args = 0,
	.synopsis = "[-n NS | -A] [-o wide|json|yaml] [flags]",
	.summary = "the recorded timelines: age, failed requests, top finding",
	.help = "NAMESPACE, POD, AGE (since the deletion, else the first event), FAILED "
		"(failed requests), TOP FINDING (the most severe) and COMPLETE, newest first, "
		"within the terminal's width (80 columns when not a terminal). -o wide adds "
		"the owner, node, state, deletion time, duration, findings and UID. Without "
		"-n every namespace is listed.",
	.examples = "  # the timelines of one namespace\n"
		    "  kubectl termline list -n shop\n"
		    "  # every column\n"
		    "  kubectl termline list -A -o wide\n",
    },
    {
	.name = "render",
	.fn = cmd_render,
	.flags = CONN | F_NS | F_OUTPUT | F_OUT | F_NO_RESOLVE,
	.outputs = "svg|trace",
	.min_args = 1,
	.max_args = 1,
	.synopsis = TARGET " [-o svg|trace] --out FILE [flags]",
	.summary = "a picture (SVG) or a Perfetto trace of the timeline",
	.help = "-o svg: the termination as a picture: a lane per container and one for the "
		"endpoint, state bands (in the slice, listening, draining), the key moments "
		"labelled with their offsets, the failure window shaded and counted, the "
		"verdict under the title. -o trace: Chrome Trace Event JSON for ui.perfetto.dev "
		"with a track per lane and one for the findings. The format may come from "
		"--out's extension (.svg, .json). Neither is written to a terminal: give --out "
		"FILE, or --out - to write to stdout anyway.",
	.examples = "  # the picture\n"
		    "  kubectl termline render shop/web-5d9c7-x2x9q --out web.svg\n"
		    "  # a trace for ui.perfetto.dev\n"
		    "  kubectl termline render shop/web-5d9c7-x2x9q --out web.json\n"
		    "  # SVG on stdout, into another tool\n"
		    "  kubectl termline render shop/web-5d9c7-x2x9q -o svg --out - | rsvg-convert "
		    "> web.png\n",
    },
    {
	.name = "check",
	.fn = cmd_check,
	.flags = CONN | F_NS | F_OUTPUT | F_COLOR | F_MAXFAIL | F_MAXRATIO | F_GRACEFUL | F_LAG |
		 F_SINCE | F_REVISION,
	.outputs = "text|json|yaml|junit",
	.min_args = 1,
	.max_args = -1,
	.synopsis = TARGET "... | deployment/NAME | rollout/NAME\n"
			   "      [--since TIME|DURATION] [--revision N]\n"
			   "      [--max-failed-requests N] [--max-failed-ratio R] [--require-graceful]"
			   "\n      [--max-endpoint-lag SECONDS] [flags]",
	.summary = "a gate for pipelines: exit 0 pass, 1 fail, 2 missing or incomplete",
	.help = "One PASS or FAIL line per Pod and assertion, with its evidence. Without an "
		"assertion, --max-failed-requests 0 is asserted: never a silent pass. "
		"--max-failed-ratio R: at most R (0.01, or 1%) of the captured requests failed. "
		"--require-graceful: no container SIGKILLed or ignoring SIGTERM, and a deletion "
		"recorded. --max-endpoint-lag S: the endpoint left every slice at most S seconds "
		"after the app stopped serving. deployment/NAME: the Pods of its replaced "
		"ReplicaSets (as rollout finds them) replaced since the current revision's "
		"ReplicaSet was created, or since --since (a time, or how long ago), or of "
		"--revision N; --max-failed-requests and --max-failed-ratio are then asserted over "
		"all of them together, the others per Pod. rollout/NAME (ro/NAME): an Argo "
		"Rollout's, the same way. -o json or yaml: every result as data; "
		"-o junit: JUnit XML for a CI's test report. Exit status 0 when every assertion "
		"passed, 1 when one failed, 2 when a timeline is missing or incomplete, or a "
		"Deployment has no replaced Pod with a timeline (nothing to judge is no pass).",
	.examples = "  # fail the pipeline if any request failed while the old Pods went away\n"
		    "  kubectl termline check shop/web-5d9c7-x2x9q shop/web-5d9c7-k8d2f\n"
		    "  # the rollout gate: the Pods this rollout of web replaced\n"
		    "  kubectl termline check deployment/web -n shop --max-failed-requests 0\n"
		    "  # at most 0.1 % failed, Pods replaced in the last 15 minutes\n"
		    "  kubectl termline check deployment/web -n shop --since 15m "
		    "--max-failed-ratio 0.001\n"
		    "  # revision 4's Pods, graceful, as a JUnit report\n"
		    "  kubectl termline check deployment/web -n shop --revision 4 "
		    "--require-graceful -o junit > termline.xml\n"
		    "  # an Argo Rollout's gate (the AnalysisTemplate's Job)\n"
		    "  kubectl termline check rollout/web -n shop\n",
    },
    {
	.name = "rollout",
	.fn = cmd_rollout,
	.flags = CONN | F_NS | F_OUTPUT | F_COLOR | F_REVISION | F_NO_RESOLVE,
	.outputs = "text|json|yaml",
	.min_args = 1,
	.max_args = 1,
	.synopsis = "deployment/NAME | rollout/NAME [-n NS] [--revision N] [flags]",
	.summary = "a Deployment's (Argo Rollout's) replaced Pods: the verdict, one fix",
	.help = "The replaced ReplicaSets (every ReplicaSet the Deployment owns whose revision "
		"is not the Deployment's; --revision N: that one) and every timeline owned by "
		"them, from every agent. The verdict: how many Pods lost requests, how many "
		"requests, the cause; then one fix that covers every Pod (the largest value any "
		"Pod needed); then each finding with the Pods and requests it covers, and the "
		"worst Pods. With --from there is no API server: Pods owned by ReplicaSets named "
		"NAME-<hash> are taken, and --revision cannot be told. rollout/NAME (ro/NAME): "
		"an Argo Rollout's ReplicaSets, the same way.",
	.examples = "  # the last rollout of web\n"
		    "  kubectl termline rollout deployment/web -n shop\n"
		    "  # revision 3's Pods, as JSON\n"
		    "  kubectl termline rollout deployment/web -n shop --revision 3 -o json\n",
    },
    {
	.name = "completion",
	.fn = cmd_completion,
	.flags = 0,
	.outputs = NULL,
	.min_args = 1,
	.max_args = 1,
	.synopsis = "bash|zsh|fish",
	.summary = "shell completion for kubectl-termline",
	.help = "Prints a script that completes kubectl-termline's verbs, flags, output "
		"formats and, with --from DIR, the Pods of that state dir. `kubectl termline` "
		"completes through kubectl (1.26+) when kubectl_complete-termline, installed "
		"next to kubectl-termline, is on PATH.",
	.examples = "  # bash, for this shell\n"
		    "  source <(kubectl-termline completion bash)\n"
		    "  # zsh\n"
		    "  kubectl-termline completion zsh > \"${fpath[1]}/_kubectl-termline\"\n"
		    "  # fish\n"
		    "  kubectl-termline completion fish > "
		    "~/.config/fish/completions/kubectl-termline.fish\n",
    },
    {
	.name = "help",
	.fn = cmd_help,
	.flags = 0,
	.outputs = NULL,
	.min_args = 0,
	.max_args = 1,
	.synopsis = "[VERB]",
	.summary = "help on a verb",
	.help = "The same as VERB --help.",
	.examples = "  kubectl termline help explain\n",
    },
    {0},
};

const struct verb *verb_find(const char *name)
{
	for (const struct verb *v = CLI_VERBS; v->name; v++)
		if (strcmp(v->name, name) == 0)
			return v;
	return NULL;
}

static const struct {
	unsigned bit;
	const char *spelling, *text;
} FLAG_HELP[] = {
    {F_NS, "-n, --namespace NS",
     "the namespace of a POD named without one (default: the "
     "context's, else default)"},
    {F_ALLNS, "-A, --all-namespaces", "every namespace"},
    {F_OUTPUT, "-o, --output FORMAT", NULL},
    {F_OUT, "    --out FILE",
     "where the picture or trace goes (- = stdout); its extension "
     "gives the format"},
    {F_ALL, "    --all", "every request on its own line (no runs)"},
    {F_FAILED, "    --failed", "the key moments and every failed request only"},
    {F_SINCE, "    --since OFFSET",
     "from this offset from the deletion on (\"-2s\", \"0\", "
     "\"500ms\")"},
    {F_SINCE, "    --since TIME|DURATION",
     "Pods replaced since then (2026-12-04T17:00:00Z) or for that long (\"15m\")"},
    {F_MAXFAIL, "    --max-failed-requests N",
     "assert at most N failed requests (a Deployment: in all its replaced Pods)"},
    {F_MAXRATIO, "    --max-failed-ratio R",
     "assert at most R of the captured requests failed (0.01 or 1%)"},
    {F_GRACEFUL, "    --require-graceful",
     "assert no SIGKILL, no ignored SIGTERM, a "
     "deletion recorded"},
    {F_LAG, "    --max-endpoint-lag SECONDS",
     "assert the endpoint left at most this long "
     "after the app stopped serving"},
    {F_REVISION, "    --revision N", "that revision's ReplicaSet (default: every replaced one)"},
    {F_REVISION, "    --revision N", "the Pods of that revision's ReplicaSet"},
    {F_NO_RESOLVE, "    --no-resolve",
     "do not ask the API server who the peers were (with --from, "
     "peers are named only when --kubeconfig is given too)"},
    {F_COLOR, "    --color auto|always|never",
     "colours (auto: on a terminal, without "
     "NO_COLOR, TERM not dumb)"},
    {F_FROM, "    --from DIR|URL",
     "a termlined state dir, or one agent (http://HOST:9440), "
     "instead of the cluster"},
    {F_KUBECONFIG, "    --kubeconfig FILE",
     "default: $KUBECONFIG (a:b merged, as kubectl), "
     "else ~/.kube/config"},
    {F_CONTEXT, "    --context NAME", "the kubeconfig context to use"},
    {F_CLUSTER, "    --cluster NAME", "the kubeconfig cluster to use"},
    {F_USER, "    --user NAME", "the kubeconfig user to use"},
    {F_TIMEOUT, "    --request-timeout DURATION",
     "bound on each request (\"5s\", \"1m\"; 0 = "
     "none; default 30s)"},
    {F_VERBOSE, "-v, --v N",
     "1: numbers, request IDs and the URL and answer of an error; "
     "6: every request"},
};

/* "  -n, --namespace NS   text..." within 80 columns, the text aligned */
static void flag_line(FILE *f, const char *spelling, const char *text)
{
	const int col = 37, width = 80;
	int at = fprintf(f, "  %-*s ", col - 3, spelling);
	bool first = true;

	for (const char *p = text; *p;) {
		size_t n = strcspn(p, " ");

		if (!first && at + 1 + (int)n > width) {
			fprintf(f, "\n%*s", col, "");
			at = col;
			first = true;
		}
		if (!first) {
			fputc(' ', f);
			at++;
		}
		fwrite(p, 1, n, f);
		at += (int)n;
		first = false;
		p += n;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

static void usage_line(const struct verb *v, FILE *f)
{
	fprintf(f, "  kubectl termline %s %s\n", v->name, v->synopsis);
}

int cli_help(const struct cli *cli, const struct verb *v, FILE *f)
{
	(void)cli;
	if (!v) {
		fputs("kubectl termline: what happened while a Pod terminated, from termlined's "
		      "timelines.\n\nVerbs:\n",
		      f);
		for (const struct verb *x = CLI_VERBS; x->name; x++)
			if (!x->hidden)
				fprintf(f, "  %-11s %s\n", x->name, x->summary);
		fputs("\nUsage:\n", f);
		for (const struct verb *x = CLI_VERBS; x->name; x++)
			if (!x->hidden)
				usage_line(x, f);
		fputs("\nExamples:\n"
		      "  kubectl termline list -n shop\n"
		      "  kubectl termline explain shop/web-5d9c7-x2x9q\n"
		      "  kubectl termline rollout deployment/web -n shop\n"
		      "\nBy default the kubeconfig is used (--kubeconfig, --context, --cluster, "
		      "--user,\n$KUBECONFIG merged as kubectl does) and the agent on the Pod's "
		      "node is read\nthrough the API server's pod proxy; --from DIR reads a state "
		      "dir, --from URL\none agent.\n"
		      "\nExit status: 0 found, 1 not found, 2 bad usage or unreachable source;\n"
		      "check: 0 all passed, 1 an assertion failed, 2 a timeline missing or "
		      "incomplete.\n"
		      "\nkubectl termline VERB --help (or kubectl termline help VERB) for a verb's "
		      "flags and examples.\n",
		      f);
		return 0;
	}
	fprintf(f, "%s: %s.\n\nUsage:\n", v->name, v->summary);
	usage_line(v, f);
	fprintf(f, "\n");
	{
		/* the help paragraph, wrapped to 80 columns */
		struct cli w = {.width = 80};

		wrap(&w, f, 0, 0, v->help);
	}
	fprintf(f, "\nExamples:\n%s", v->examples);
	if (v->flags) {
		fprintf(f, "\nFlags:\n");
		for (size_t i = 0; i < sizeof(FLAG_HELP) / sizeof(FLAG_HELP[0]); i++) {
			char text[256];

			if (!(v->flags & FLAG_HELP[i].bit))
				continue;
			/* --since and --revision read differently in check */
			if ((FLAG_HELP[i].bit == F_SINCE || FLAG_HELP[i].bit == F_REVISION) &&
			    (v->fn == cmd_check) != (i + 1 < sizeof(FLAG_HELP) / sizeof(FLAG_HELP[0]) &&
						     FLAG_HELP[i + 1].bit != FLAG_HELP[i].bit))
				continue;
			if (FLAG_HELP[i].bit == F_OUTPUT) {
				char fmts[64];

				snprintf(fmts, sizeof(fmts), "%s", v->outputs);
				for (char *p = fmts; *p; p++)
					if (*p == '|')
						*p = ',';
				snprintf(text, sizeof(text), "one of %s (default %.*s)", fmts,
					 (int)strcspn(v->outputs, "|"), v->outputs);
			} else {
				snprintf(text, sizeof(text), "%s", FLAG_HELP[i].text);
			}
			flag_line(f, FLAG_HELP[i].spelling, text);
		}
		flag_line(f, "-h, --help", "this help");
	}
	if (v->fn == cmd_check)
		fputs(
		    "\nExit status: 0 every assertion passed, 1 one failed, 2 a timeline missing\n"
		    "or incomplete, a Deployment without a replaced Pod's timeline, or bad usage.\n",
		    f);
	else if (v->flags & F_FROM)
		fputs("\nExit status: 0 found, 1 not found, 2 bad usage or unreachable source.\n",
		      f);
	return 0;
}

int cmd_help(struct cli *cli)
{
	const struct verb *v = NULL;

	if (cli->nargs == 1) {
		v = verb_find(cli->args[0]);
		if (!v || v->hidden) {
			cli_err(cli, "no verb '%s' (kubectl termline help lists them)",
				cli->args[0]);
			return EXIT_USAGE;
		}
	}
	cli_help(cli, v, stdout);
	return EXIT_FOUND;
}
