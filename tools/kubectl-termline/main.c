// SPDX-License-Identifier: Apache-2.0
/* kubectl-termline: investigate Pod terminations recorded by termlined.
 * Installed on PATH as kubectl-termline, so `kubectl termline VERB` runs it.
 * Verbs, flags, sources and exit statuses: docs/cli.md. The flags are
 * kubectl's where kubectl has them (-n, -A, -o, --context, --cluster,
 * --user, --kubeconfig, --request-timeout, -v); a flag the verb does not
 * use is bad usage, never silently ignored. */
#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli.h"
#include "clock.h"
#include "termline-config.h"

#define DEFAULT_TIMEOUT_MS 30000L

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

/* Go's time.ParseDuration as kubectl reads --request-timeout ("1h2m3.5s",
 * "500ms", "0"), a bare number being seconds; signed for --since. Into
 * nanoseconds; -EINVAL. */
static int parse_duration(const char *s, bool signed_ok, int64_t *ret)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1},	 {"us", 1e3}, {"\u00b5s", 1e3}, {"ms", 1e6},
		     {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
	double total = 0;
	bool neg = false;
	const char *p = s;

	if (*p == '-' || *p == '+') {
		if (!signed_ok && *p == '-')
			return -EINVAL;
		neg = *p == '-';
		p++;
	}
	if (!*p)
		return -EINVAL;
	while (*p) {
		char *end;
		double v;
		size_t u;

		if (!(*p >= '0' && *p <= '9') && *p != '.')
			return -EINVAL;
		errno = 0;
		v = strtod(p, &end);
		if (errno || end == p || !(v >= 0) || v > 1e9)
			return -EINVAL;
		p = end;
		if (!*p && total == 0) {
			total = v * 1e9; /* a bare number: seconds */
			break;
		}
		for (u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
			size_t n = strlen(units[u].unit);

			/* "ms" is tried before "m" */
			if (strncmp(p, units[u].unit, n) == 0)
				break;
		}
		if (u == sizeof(units) / sizeof(units[0]))
			return -EINVAL;
		total += v * units[u].ns;
		p += strlen(units[u].unit);
	}
	if (total > 1e18)
		return -EINVAL;
	*ret = (int64_t)llround(neg ? -total : total);
	return 0;
}

static int terminal_width(void)
{
	struct winsize ws;
	const char *c = getenv("COLUMNS");
	long v;

	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if (c && parse_long(c, 20, &v) == 0 && v < 10000)
		return (int)v;
	return 80;
}

/* A reader that went away (| head): the rest is not wanted, and that is
 * not an error (no 141 from SIGPIPE, no message). */
static bool stdout_gone(void)
{
	struct pollfd p = {.fd = STDOUT_FILENO, .events = 0};

	if (fflush(stdout) == EOF && errno == EPIPE)
		return true;
	return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

enum {
	O_FROM = 256,
	O_KUBECONFIG,
	O_CONTEXT,
	O_CLUSTER,
	O_USER,
	O_TIMEOUT,
	O_OUT,
	O_MAXFAIL,
	O_GRACEFUL,
	O_LAG,
	O_REVISION,
	O_COLOR,
	O_ALL,
	O_FAILED,
	O_SINCE,
	O_NO_RESOLVE,
	O_MAXRATIO,
	O_VERSION,
};

static const struct option OPTS[] = {
    {"from", required_argument, NULL, O_FROM},
    {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
    {"context", required_argument, NULL, O_CONTEXT},
    {"cluster", required_argument, NULL, O_CLUSTER},
    {"user", required_argument, NULL, O_USER},
    {"request-timeout", required_argument, NULL, O_TIMEOUT},
    {"namespace", required_argument, NULL, 'n'},
    {"all-namespaces", no_argument, NULL, 'A'},
    {"output", required_argument, NULL, 'o'},
    {"out", required_argument, NULL, O_OUT},
    {"v", required_argument, NULL, 'v'},
    {"color", required_argument, NULL, O_COLOR},
    {"max-failed-requests", required_argument, NULL, O_MAXFAIL},
    {"require-graceful", no_argument, NULL, O_GRACEFUL},
    {"max-endpoint-lag", required_argument, NULL, O_LAG},
    {"revision", required_argument, NULL, O_REVISION},
    {"all", no_argument, NULL, O_ALL},
    {"failed", no_argument, NULL, O_FAILED},
    {"since", required_argument, NULL, O_SINCE},
    {"no-resolve", no_argument, NULL, O_NO_RESOLVE},
    {"max-failed-ratio", required_argument, NULL, O_MAXRATIO},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, O_VERSION},
    {0},
};

static unsigned bit_of(int c)
{
	switch (c) {
	case O_FROM:
		return F_FROM;
	case O_KUBECONFIG:
		return F_KUBECONFIG;
	case O_CONTEXT:
		return F_CONTEXT;
	case O_CLUSTER:
		return F_CLUSTER;
	case O_USER:
		return F_USER;
	case O_TIMEOUT:
		return F_TIMEOUT;
	case 'n':
		return F_NS;
	case 'A':
		return F_ALLNS;
	case 'o':
		return F_OUTPUT;
	case O_OUT:
		return F_OUT;
	case 'v':
		return F_VERBOSE;
	case O_COLOR:
		return F_COLOR;
	case O_MAXFAIL:
		return F_MAXFAIL;
	case O_GRACEFUL:
		return F_GRACEFUL;
	case O_LAG:
		return F_LAG;
	case O_REVISION:
		return F_REVISION;
	case O_ALL:
		return F_ALL;
	case O_FAILED:
		return F_FAILED;
	case O_SINCE:
		return F_SINCE;
	case O_NO_RESOLVE:
		return F_NO_RESOLVE;
	case O_MAXRATIO:
		return F_MAXRATIO;
	}
	return 0;
}

static bool in_list(const char *list, const char *what)
{
	size_t n = strlen(what);

	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, "|");

		if (k == n && strncmp(p, what, n) == 0)
			return true;
		p += k + (p[k] == '|');
	}
	return false;
}

/* -v alone (kubectl wants -v N) means -v 1; kubectl's -v=N, -n=NS and
 * -o=FMT are taken as well. */
static void normalise(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--") == 0)
			break;
		if ((strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--v") == 0) &&
		    (!next || !*next || strspn(next, "0123456789") != strlen(next)))
			argv[i] = (char *)"--v=1";
		else if (argv[i][0] == '-' && strchr("nov", argv[i][1]) && argv[i][1] &&
			 argv[i][2] == '=')
			memmove(argv[i] + 2, argv[i] + 3, strlen(argv[i] + 3) + 1);
	}
}

struct seen {
	const char *spelling[32]; /* how the user wrote each F_ bit, first time */
};

static int check_flags(struct cli *cli, const struct seen *seen)
{
	const struct verb *v = cli->verb;

	for (unsigned b = 0; b < 32; b++) {
		if (!(cli->given & (1u << b)) || (v->flags & (1u << b)))
			continue;
		cli_err(cli, "%s is not a flag of %s (kubectl termline %s --help)",
			seen->spelling[b], v->name, v->name);
		return -EINVAL;
	}
	/* explain and rollout ask the API server who the peers were: there the
	 * kubeconfig may name the cluster while --from names the agent */
	if (cli->from && (cli->given & (F_KUBECONFIG | F_CONTEXT | F_CLUSTER | F_USER)) &&
	    !(v->flags & F_NO_RESOLVE)) {
		cli_err(cli,
			"--from reads %s, not the kubeconfig: drop --kubeconfig, --context, "
			"--cluster and --user, or --from",
			tx(cli->from));
		return -EINVAL;
	}
	/* there, without --kubeconfig, no API server is asked at all */
	if (cli->from && (cli->given & (F_CONTEXT | F_CLUSTER | F_USER)) &&
	    !(cli->given & F_KUBECONFIG)) {
		cli_err(cli,
			"--from reads %s, not the kubeconfig: --context, --cluster and --user name "
			"who the peers were only with --kubeconfig FILE",
			tx(cli->from));
		return -EINVAL;
	}
	if (cli->from && strncmp(cli->from, "http://", 7) && strncmp(cli->from, "https://", 8) &&
	    (cli->given & F_TIMEOUT)) {
		cli_err(cli, "--request-timeout: --from %s is a directory, nothing is requested",
			tx(cli->from));
		return -EINVAL;
	}
	if (cli->from && (cli->given & F_REVISION)) {
		cli_err(cli, "--revision needs the API server (the workload's revisions); --from "
			     "has none");
		return -EINVAL;
	}
	if ((cli->given & F_ALL) && (cli->given & F_FAILED)) {
		cli_err(cli, "--all and --failed: one of them");
		return -EINVAL;
	}
	if (cli->nargs < v->min_args || (v->max_args >= 0 && cli->nargs > v->max_args)) {
		if (v->max_args == 0)
			cli_err(cli, "takes no arguments, got '%s' (kubectl termline %s --help)",
				cli->args[0], v->name);
		else
			cli_err(cli, "usage: kubectl termline %s %s", v->name, v->synopsis);
		return -EINVAL;
	}
	return 0;
}

/* --since: show's an offset from the deletion ("-2s", "0", "500ms");
 * check's a time (RFC 3339) or a duration back from now ("10m"). */
static int parse_since(struct cli *cli)
{
	const char *a = cli->since_arg;
	int64_t d;

	if (!a)
		return 0;
	if (cli->verb->fn != cmd_check) {
		if (parse_duration(a, true, &cli->since_ns) < 0) {
			cli_err(cli, "--since %s: not an offset (\"-2s\", \"0\", \"500ms\")", a);
			return -EINVAL;
		}
		return 0;
	}
	if (tl_time_parse(a, &cli->since_ns) == 0 && cli->since_ns > 0)
		return 0;
	if (a[0] != '-' && parse_duration(a, false, &d) == 0 && d > 0) {
		/* "15m" ago, to the second */
		cli->since_ns = (tl_now_real_ns() - d) / 1000000000 * 1000000000;
		return 0;
	}
	cli_err(cli,
		"--since %s: a time (2026-12-04T17:00:00Z) or how long ago (\"10m\", \"2h\")",
		a);
	return -EINVAL;
}

/* render's format: -o, else --out's extension; the two must agree. */
static int resolve_output(struct cli *cli)
{
	const struct verb *v = cli->verb;

	if (v->fn == cmd_render) {
		const char *ext = cli->out_file ? strrchr(cli->out_file, '.') : NULL;
		const char *by_ext = !ext			 ? NULL
				     : strcmp(ext, ".svg") == 0	 ? "svg"
				     : strcmp(ext, ".json") == 0 ? "trace"
								 : NULL;

		if (cli->output && by_ext && strcmp(cli->output, by_ext) != 0) {
			cli_err(cli, "-o %s but --out %s is a .%s file", tx(cli->output),
				tx(cli->out_file), ext + 1);
			return -EINVAL;
		}
		if (!cli->output)
			cli->output = by_ext;
		if (!cli->output) {
			cli_err(cli, "-o svg or -o trace (or --out FILE.svg / FILE.json)");
			return -EINVAL;
		}
		/* a picture or a trace on a terminal is noise: --out - forces it */
		if (!cli->out_file && isatty(STDOUT_FILENO)) {
			cli_err(cli,
				"not writing %s to a terminal: --out FILE (or --out - to insist)",
				strcmp(cli->output, "svg") == 0 ? "SVG" : "trace JSON");
			return -EINVAL;
		}
	}
	if (!cli->output && v->outputs)
		cli->output = "text";
	if (cli->output && v->outputs && !in_list(v->outputs, cli->output)) {
		char fmts[64];

		snprintf(fmts, sizeof(fmts), "%s", v->outputs);
		for (char *p = fmts; *p; p++)
			if (*p == '|')
				*p = ',';
		cli_err(cli, "-o %s: %s prints %s", tx(cli->output), v->name, fmts);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cli cli = {
	    .prog = "kubectl-termline",
	    .max_failed = -1,
	    .max_endpoint_lag = -1,
	    .max_ratio = -1,
	    .timeout_ms = DEFAULT_TIMEOUT_MS,
	};
	struct seen seen = {{0}};
	const char *color = "auto", *term = getenv("TERM"), *nc = getenv("NO_COLOR");
	bool help = false;
	int c, r;

	/* SIGPIPE ignored: a closed stdout is seen as EPIPE and ends quietly
	 * (stdout_gone); a socket's is an error of that request */
	signal(SIGPIPE, SIG_IGN);
	setlocale(LC_CTYPE, "");
	cli.utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	if (argc >= 2 && strcmp(argv[1], "__complete") == 0)
		return cli_complete(argc - 2, argv + 2);
	normalise(argc, argv);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:o:Ahv:", OPTS, NULL)) != -1) {
		unsigned bit = bit_of(c);
		/* the flag as written: before its value when that was a word of its own */
		const char *as = optarg && optind >= 2 && optarg == argv[optind - 1] &&
					 argv[optind - 2][0] == '-'
				     ? argv[optind - 2]
				     : argv[optind - 1];
		double d;
		char *end;
		int64_t ns;

		if (bit) {
			unsigned b = (unsigned)__builtin_ctz(bit);

			if (!seen.spelling[b]) {
				/* "--out=x" -> "--out", "-ojson" -> "-o" */
				static char buf[32][64];

				snprintf(buf[b], sizeof(buf[b]), "%.*s",
					 (int)(as[1] == '-' ? strcspn(as, "=") : 2), as);
				seen.spelling[b] = buf[b];
			}
			cli.given |= bit;
		}
		switch (c) {
		case O_FROM:
			cli.from = optarg;
			break;
		case O_KUBECONFIG:
			cli.kubeconfig = optarg;
			break;
		case O_CONTEXT:
			cli.context = optarg;
			break;
		case O_CLUSTER:
			cli.cluster = optarg;
			break;
		case O_USER:
			cli.user = optarg;
			break;
		case O_TIMEOUT:
			if (parse_duration(optarg, false, &ns) < 0) {
				cli_err(&cli,
					"--request-timeout %s: not a duration (\"30s\", \"1m\", 0 "
					"for none)",
					optarg);
				return EXIT_USAGE;
			}
			cli.timeout_ms = (long)(ns / 1000000);
			if (ns > 0 && cli.timeout_ms == 0)
				cli.timeout_ms = 1;
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
			if (cli.output && strcmp(cli.output, optarg) != 0) {
				cli_err(&cli, "-o given twice (%s, then %s): one output format",
					cli.output, optarg);
				return EXIT_USAGE;
			}
			cli.output = optarg;
			break;
		case O_OUT:
			if (cli.out_file && strcmp(cli.out_file, optarg) != 0) {
				cli_err(&cli, "--out given twice (%s, then %s)", cli.out_file,
					optarg);
				return EXIT_USAGE;
			}
			cli.out_file = optarg;
			break;
		case 'v': {
			long v;

			if (parse_long(optarg, 0, &v) < 0 || v > 10) {
				cli_err(&cli, "-v %s: a level, 0 to 10", optarg);
				return EXIT_USAGE;
			}
			cli.verbose = (int)v;
			break;
		}
		case O_COLOR:
			color = optarg;
			if (strcmp(color, "auto") && strcmp(color, "always") &&
			    strcmp(color, "never")) {
				cli_err(&cli, "--color %s: auto, always or never", optarg);
				return EXIT_USAGE;
			}
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
		case O_ALL:
			cli.show_all = true;
			break;
		case O_FAILED:
			cli.show_failed = true;
			break;
		case O_SINCE:
			/* an offset for show, a time or duration for check:
			 * read once the verb is known */
			cli.since_arg = optarg;
			cli.has_since = true;
			break;
		case O_MAXRATIO: {
			size_t l = strlen(optarg);

			errno = 0;
			d = strtod(optarg, &end);
			/* 0.05, or 5% */
			if (!errno && end != optarg && l && optarg[l - 1] == '%' &&
			    end == optarg + l - 1)
				d /= 100, end++;
			if (errno || end == optarg || *end || !(d >= 0) || d > 1) {
				cli_err(&cli,
					"--max-failed-ratio %s: a ratio from 0 to 1 (0.01) or a "
					"percentage (1%%)",
					optarg);
				return EXIT_USAGE;
			}
			cli.max_ratio = d;
			break;
		}
		case 'h':
			help = true;
			break;
		case O_VERSION:
			printf("kubectl-termline %s\n", TERMLINE_VERSION);
			return 0;
		case ':':
			cli_err(&cli, "%s needs a value (kubectl termline --help)", as);
			return EXIT_USAGE;
		default:
			cli_err(&cli, "%s: unknown flag (kubectl termline --help)", as);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		if (help) {
			cli_help(&cli, NULL, stdout);
			return 0;
		}
		cli_help(&cli, NULL, stderr);
		return EXIT_USAGE;
	}
	cli.verb = verb_find(argv[optind]);
	if (!cli.verb) {
		cli_err(&cli,
			"unknown verb '%s' (explain, show, list, render, check, rollout, "
			"completion; kubectl termline --help)",
			argv[optind]);
		return EXIT_USAGE;
	}
	if (help) {
		cli_help(&cli, cli.verb, stdout);
		return 0;
	}
	cli.args = argv + optind + 1;
	cli.nargs = argc - optind - 1;
	if (check_flags(&cli, &seen) < 0 || resolve_output(&cli) < 0 || parse_since(&cli) < 0)
		return EXIT_USAGE;
	/* colours: --color always/never, else a terminal without NO_COLOR
	 * (no-color.org) and with a TERM that has them */
	if (strcmp(color, "always") == 0)
		cli.color = true;
	else if (strcmp(color, "auto") == 0)
		cli.color = isatty(STDOUT_FILENO) && !(nc && *nc) && term && *term &&
			    strcmp(term, "dumb") != 0;
	cli.width = terminal_width();
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		cli_err(&cli, "libcurl did not initialise");
		return EXIT_USAGE;
	}
	r = cli.verb->fn(&cli);
	curl_global_cleanup();
	if (stdout_gone())
		return 0;
	if (fflush(stdout) == EOF || ferror(stdout)) {
		cli_err(&cli, "stdout: write failed");
		return EXIT_USAGE;
	}
	return r;
}
