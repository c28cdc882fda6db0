// SPDX-License-Identifier: Apache-2.0
/* Shell completion. `__complete WORDS... CURRENT` answers in cobra's
 * protocol, the one kubectl (1.26+) speaks with a plugin's
 * kubectl_complete-termline: one candidate a line, then ":DIRECTIVE" (4:
 * no file names; 0: the shell may complete file names). `completion
 * bash|zsh|fish` prints a script that asks it. Candidates: the verbs, a
 * verb's flags, -o's formats, --color's values, and with --from DIR the
 * Pods of that state dir. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum { DIR_DEFAULT = 0, DIR_NOFILE = 4 };

static const struct {
	unsigned bit;
	const char *longf, *shortf;
	bool value;
} FLAGS[] = {
    {F_FROM, "--from", NULL, true},
    {F_KUBECONFIG, "--kubeconfig", NULL, true},
    {F_CONTEXT, "--context", NULL, true},
    {F_CLUSTER, "--cluster", NULL, true},
    {F_USER, "--user", NULL, true},
    {F_TIMEOUT, "--request-timeout", NULL, true},
    {F_NS, "--namespace", "-n", true},
    {F_ALLNS, "--all-namespaces", "-A", false},
    {F_OUTPUT, "--output", "-o", true},
    {F_OUT, "--out", NULL, true},
    {F_VERBOSE, "--v", "-v", true},
    {F_COLOR, "--color", NULL, true},
    {F_MAXFAIL, "--max-failed-requests", NULL, true},
    {F_MAXRATIO, "--max-failed-ratio", NULL, true},
    {F_GRACEFUL, "--require-graceful", NULL, false},
    {F_LAG, "--max-endpoint-lag", NULL, true},
    {F_REVISION, "--revision", NULL, true},
    {F_ALL, "--all", NULL, false},
    {F_FAILED, "--failed", NULL, false},
    {F_SINCE, "--since", NULL, true},
    {F_NO_RESOLVE, "--no-resolve", NULL, false},
};

static int flag_of(const char *w)
{
	for (size_t i = 0; i < sizeof(FLAGS) / sizeof(FLAGS[0]); i++)
		if (strcmp(w, FLAGS[i].longf) == 0 ||
		    (FLAGS[i].shortf && strcmp(w, FLAGS[i].shortf) == 0))
			return (int)i;
	return -1;
}

static void cand(const char *c, const char *cur)
{
	if (strncmp(c, cur, strlen(cur)) == 0)
		printf("%s\n", c);
}

static void list_values(const char *list, const char *cur)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *save = NULL, *p = strtok_r(buf, "|", &save); p; p = strtok_r(NULL, "|", &save))
		cand(p, cur);
}

/* A candidate said before (the same deployment of several Pods). */
static bool seen(const char *c)
{
	static char said[64][300];
	static size_t n;

	for (size_t i = 0; i < n; i++)
		if (strcmp(said[i], c) == 0)
			return true;
	if (n < 64)
		snprintf(said[n++], sizeof(said[0]), "%.299s", c);
	return false;
}

/* NS/POD of a state dir's timelines/NS/POD_UID.json; kind ("deployment",
 * "rollout"): the KIND/NAME of its Pods named NAME-<hash>-<suffix> instead
 * (a Deployment's and an Argo Rollout's are named alike) */
static void state_pods(const char *dir, const char *cur, const char *kind)
{
	char top[4096];
	DIR *d, *sub;
	struct dirent *de, *fe;

	snprintf(top, sizeof(top), "%s/timelines", dir);
	d = opendir(top);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char nsdir[4096 + 256];

		if (de->d_name[0] == '.')
			continue;
		snprintf(nsdir, sizeof(nsdir), "%s/%s", top, de->d_name);
		sub = opendir(nsdir);
		if (!sub)
			continue;
		while ((fe = readdir(sub))) {
			char c[600];
			const char *us = strrchr(fe->d_name, '_');

			if (fe->d_name[0] == '.' || !us || !strstr(us, ".json"))
				continue;
			snprintf(c, sizeof(c), "%s/%.*s", de->d_name, (int)(us - fe->d_name),
				 fe->d_name);
			if (kind) {
				/* POD is NAME-<hash>-<suffix>: KIND/NAME, once */
				char pod[300];
				char *a, *b;

				snprintf(pod, sizeof(pod), "%.*s", (int)(us - fe->d_name), fe->d_name);
				a = strrchr(pod, '-');
				if (!a || a == pod)
					continue;
				*a = 0;
				b = strrchr(pod, '-');
				if (!b || b == pod)
					continue;
				*b = 0;
				snprintf(c, sizeof(c), "%s/%s", kind, pod);
				if (seen(c))
					continue;
			}
			cand(c, cur);
		}
		closedir(sub);
	}
	closedir(d);
}

int cli_complete(int argc, char **argv)
{
	const char *cur = argc ? argv[argc - 1] : "", *from = NULL;
	const struct verb *v = NULL;
	int directive = DIR_NOFILE;

	/* the words before the one completed: the verb, and --from */
	for (int i = 0; i + 1 < argc; i++) {
		int fl = flag_of(argv[i]);

		if (fl >= 0 && FLAGS[fl].value) {
			if (FLAGS[fl].bit == F_FROM && i + 2 < argc)
				from = argv[i + 1];
			i++;
			continue;
		}
		if (strncmp(argv[i], "--from=", 7) == 0)
			from = argv[i] + 7;
		if (argv[i][0] != '-' && !v)
			v = verb_find(argv[i]);
	}
	if (argc >= 2) {
		int fl = flag_of(argv[argc - 2]);

		if (fl >= 0 && FLAGS[fl].value) {
			switch (FLAGS[fl].bit) {
			case F_OUTPUT:
				list_values(v && v->outputs ? v->outputs
							    : "text|wide|json|yaml|junit|svg|trace",
					    cur);
				break;
			case F_COLOR:
				list_values("auto|always|never", cur);
				break;
			case F_FROM:
			case F_OUT:
			case F_KUBECONFIG:
				directive = DIR_DEFAULT; /* file names */
				break;
			default:
				break;
			}
			printf(":%d\n", directive);
			return 0;
		}
	}
	if (cur[0] == '-') {
		for (size_t i = 0; i < sizeof(FLAGS) / sizeof(FLAGS[0]); i++)
			if (!v || (v->flags & FLAGS[i].bit))
				cand(FLAGS[i].longf, cur);
		cand("--help", cur);
	} else if (!v) {
		for (const struct verb *x = CLI_VERBS; x->name; x++)
			if (!x->hidden)
				cand(x->name, cur);
	} else if (strcmp(v->name, "completion") == 0) {
		list_values("bash|zsh|fish", cur);
	} else if (strcmp(v->name, "help") == 0) {
		for (const struct verb *x = CLI_VERBS; x->name; x++)
			if (!x->hidden)
				cand(x->name, cur);
	} else if (v->fn == cmd_rollout || v->fn == cmd_check) {
		/* a Deployment or an Argo Rollout (check: or Pods) */
		if (from && strncmp(from, "http", 4) != 0) {
			state_pods(from, cur, "deployment");
			state_pods(from, cur, "rollout");
			if (v->fn == cmd_check)
				state_pods(from, cur, NULL);
		} else {
			cand("deployment/", cur);
			cand("rollout/", cur);
		}
	} else if (v->min_args > 0 && from && strncmp(from, "http", 4) != 0) {
		state_pods(from, cur, NULL);
	}
	printf(":%d\n", directive);
	return 0;
}

static const char BASH[] =
    "# bash completion for kubectl-termline (kubectl-termline completion bash)\n"
    "_kubectl_termline() {\n"
    "\tlocal cur=${COMP_WORDS[COMP_CWORD]} out directive line\n"
    "\tout=$(kubectl-termline __complete \"${COMP_WORDS[@]:1:COMP_CWORD}\" 2>/dev/null) || return\n"
    "\tdirective=${out##*:}\n"
    "\tCOMPREPLY=()\n"
    "\twhile IFS= read -r line; do\n"
    "\t\t[[ -z $line || $line == :* ]] && continue\n"
    "\t\tCOMPREPLY+=(\"$line\")\n"
    "\tdone <<<\"$out\"\n"
    "\tif [[ ${#COMPREPLY[@]} -eq 0 && $((directive & 4)) -eq 0 ]]; then\n"
    "\t\tmapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n"
    "\tfi\n"
    "}\n"
    "complete -F _kubectl_termline kubectl-termline\n";

static const char ZSH[] =
    "#compdef kubectl-termline\n"
    "# zsh completion for kubectl-termline (kubectl-termline completion zsh)\n"
    "_kubectl-termline() {\n"
    "\tlocal out directive\n"
    "\tlocal -a cands\n"
    "\tout=$(kubectl-termline __complete \"${(@)words[2,CURRENT]}\" 2>/dev/null) || return 1\n"
    "\tcands=(\"${(@f)out}\")\n"
    "\tdirective=${${cands[-1]}#:}\n"
    "\tcands=(${cands:#:*})\n"
    "\tif (( ${#cands} )); then\n"
    "\t\tcompadd -- \"${cands[@]}\"\n"
    "\telif (( !(directive & 4) )); then\n"
    "\t\t_files\n"
    "\tfi\n"
    "}\n"
    "compdef _kubectl-termline kubectl-termline\n";

static const char FISH[] =
    "# fish completion for kubectl-termline (kubectl-termline completion fish)\n"
    "function __kubectl_termline_complete\n"
    "    set -l args (commandline -opc)[2..-1] (commandline -ct)\n"
    "    kubectl-termline __complete $args 2>/dev/null | string match -v -r '^:'\n"
    "end\n"
    "complete -c kubectl-termline -f -a '(__kubectl_termline_complete)'\n"
    "complete -c kubectl-termline -l from -r -F\n"
    "complete -c kubectl-termline -l out -r -F\n"
    "complete -c kubectl-termline -l kubeconfig -r -F\n";

int cmd_completion(struct cli *cli)
{
	const char *sh = cli->args[0];

	if (strcmp(sh, "bash") == 0)
		fputs(BASH, stdout);
	else if (strcmp(sh, "zsh") == 0)
		fputs(ZSH, stdout);
	else if (strcmp(sh, "fish") == 0)
		fputs(FISH, stdout);
	else {
		cli_err(cli, "%s: bash, zsh or fish", sh);
		return EXIT_USAGE;
	}
	return EXIT_FOUND;
}
