// SPDX-License-Identifier: Apache-2.0
/* kubectl-termline: investigate Pod terminations recorded by termlined.
 * Installed on PATH as kubectl-termline, so `kubectl termline VERB` runs it.
 * Verbs, sources and exit statuses: docs/cli.md. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli.h"
#include "termline-config.h"

static const char USAGE[] =
    "usage:\n"
    "  kubectl termline list    [--from DIR|URL] [-n NS | -A] [-o text|json]\n"
    "  kubectl termline show    NS/POD [--from DIR|URL] [-o text|json]\n"
    "  kubectl termline explain NS/POD [--from DIR|URL] [-o text|json]\n"
    "  kubectl termline render  NS/POD [--from DIR|URL] -o svg|trace [--out FILE]\n"
    "  kubectl termline check   NS/POD... [--from DIR|URL] [--max-failed-requests N]\n"
    "                           [--require-graceful] [--max-endpoint-lag SECONDS]\n"
    "  kubectl termline rollout deployment/NAME [-n NS] [--revision N] [-o text|json]\n"
    "\n"
    "  --from DIR          a termlined state dir (STATE/timelines/...)\n"
    "  --from URL          one agent, http://HOST:9440\n"
    "  (default)           the kubeconfig ($KUBECONFIG or ~/.kube/config; --kubeconfig FILE):\n"
    "                      the agent on the Pod's node, through the API server's pod proxy\n"
    "  POD without NS/     in -n NS, else the kubeconfig context's namespace, else default\n"
    "  --no-resolve        explain, rollout: do not ask the API server who the peers were\n"
    "                      (with --from, peers are resolved only when --kubeconfig is given)\n"
    "Exit status: 0 found, 1 not found, 2 bad usage or unreachable source;\n"
    "check: 0 all passed, 1 an assertion failed, 2 a timeline missing or incomplete.\n";

static const struct {
	const char *name;
	int (*fn)(struct cli *);
} VERBS[] = {
    {"list", cmd_list},	    {"show", cmd_show},	  {"explain", cmd_explain},
    {"render", cmd_render}, {"check", cmd_check}, {"rollout", cmd_rollout},
};

static int parse_long(const char *s, long min, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min)
		return -EINVAL;
	*ret = v;
	return 0;
}

int main(int argc, char **argv)
{
	enum {
		O_FROM = 256,
		O_KUBECONFIG,
		O_OUT,
		O_MAXFAIL,
		O_GRACEFUL,
		O_LAG,
		O_REVISION,
		O_NO_RESOLVE,
		O_VERSION
	};
	static const struct option opts[] = {
	    {"from", required_argument, NULL, O_FROM},
	    {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
	    {"namespace", required_argument, NULL, 'n'},
	    {"all-namespaces", no_argument, NULL, 'A'},
	    {"output", required_argument, NULL, 'o'},
	    {"out", required_argument, NULL, O_OUT},
	    {"max-failed-requests", required_argument, NULL, O_MAXFAIL},
	    {"require-graceful", no_argument, NULL, O_GRACEFUL},
	    {"max-endpoint-lag", required_argument, NULL, O_LAG},
	    {"revision", required_argument, NULL, O_REVISION},
	    {"no-resolve", no_argument, NULL, O_NO_RESOLVE},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, O_VERSION},
	    {},
	};
	struct cli cli = {
	    .prog = "kubectl-termline",
	    .max_failed = -1,
	    .max_endpoint_lag = -1,
	};
	const char *verb;
	int c, r;
	size_t v;

	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(USAGE, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("kubectl-termline %s\n", TERMLINE_VERSION);
		return 0;
	}
	verb = argv[1];
	for (v = 0; v < sizeof(VERBS) / sizeof(VERBS[0]); v++)
		if (strcmp(VERBS[v].name, verb) == 0)
			break;
	if (v == sizeof(VERBS) / sizeof(VERBS[0])) {
		cli_err(&cli,
			"unknown verb '%s' (list, show, explain, render, check, rollout; --help)",
			verb);
		return EXIT_USAGE;
	}
	argv[1] = argv[0];
	argc--;
	argv++;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "n:o:Ah", opts, NULL)) != -1) {
		double d;
		char *end;

		switch (c) {
		case O_FROM:
			cli.from = optarg;
			break;
		case O_KUBECONFIG:
			cli.kubeconfig = optarg;
			break;
		case O_NO_RESOLVE:
			cli.no_resolve = true;
			break;
		case 'n':
			cli.ns = optarg;
			break;
		case 'A':
			cli.all_namespaces = true;
			break;
		case 'o':
			cli.output = optarg;
			break;
		case O_OUT:
			cli.out_file = optarg;
			break;
		case O_MAXFAIL:
			if (parse_long(optarg, 0, &cli.max_failed) < 0) {
				cli_err(&cli, "--max-failed-requests %s: not a count", optarg);
				return EXIT_USAGE;
			}
			break;
		case O_GRACEFUL:
			cli.require_graceful = true;
			break;
		case O_LAG:
			errno = 0;
			d = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(d >= 0) || d > 1e6) {
				cli_err(&cli, "--max-endpoint-lag %s: not a number of seconds",
					optarg);
				return EXIT_USAGE;
			}
			cli.max_endpoint_lag = d;
			break;
		case O_REVISION:
			if (parse_long(optarg, 1, &cli.revision) < 0) {
				cli_err(&cli, "--revision %s: not a revision number", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			fputs(USAGE, stdout);
			return 0;
		case O_VERSION:
			printf("kubectl-termline %s\n", TERMLINE_VERSION);
			return 0;
		default:
			cli_err(&cli, "%s: unknown option or missing value (--help)",
				argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	cli.args = argv + optind;
	cli.nargs = argc - optind;
	/* colours on a terminal only, and never with NO_COLOR (no-color.org) */
	cli.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && !cli.out_file;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		cli_err(&cli, "libcurl did not initialise");
		return EXIT_USAGE;
	}
	r = VERBS[v].fn(&cli);
	curl_global_cleanup();
	return r;
}
