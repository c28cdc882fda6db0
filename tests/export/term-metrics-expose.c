/* SPDX-License-Identifier: Apache-2.0 */
/* Counts terminations read from stdin into the per-workload metrics
 * (daemon/export/termination-metrics.h) and writes the registry's
 * exposition on stdout, for test-term-metrics-exposition.py to parse with
 * the tests' strict Prometheus text parser.
 *
 * usage: term-metrics-expose MAX_WORKLOADS < LINES
 *
 * One termination per line, tab-separated:
 *   NS OWNER_KIND OWNER_NAME FLAGS FAILED[,RULE=N...] LAG_MS
 * "-" for NULL; FLAGS of t (terminated), k (SIGKILL), c (complete), d (a
 * deletion recorded), s (no summary); FAILED the unexplained failed
 * requests, RULE=N those a rule explains; LAG_MS the removal lag ("-":
 * none). A line "wait MS" is a preStop gate's wait. Escapes \n \t \\ in
 * names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "findings.h"
#include "findings-summary.h"
#include "metrics.h"
#include "termination-metrics.h"

static char *unescape(char *s)
{
	char *o = s;

	if (strcmp(s, "-") == 0)
		return NULL;
	for (char *p = s; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			*o++ = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return s;
}

static int rule_index(const char *r)
{
	for (int k = 0; TL_FINDING_RULES[k]; k++)
		if (strcmp(TL_FINDING_RULES[k], r) == 0)
			return k;
	return -1;
}

int main(int argc, char **argv)
{
	struct tl_term_metrics *tm;
	char line[8192];
	long max = argc == 2 ? strtol(argv[1], NULL, 10) : 0;

	if (max <= 0 || tl_term_metrics_new((uint32_t)max, &tm) < 0) {
		fprintf(stderr, "usage: term-metrics-expose MAX_WORKLOADS < LINES\n");
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		char *f[6], *save = NULL, *tok;
		struct tl_findings_summary s = {.flags = TL_FS_EXPLAINED};
		struct tl_termination t = {0};
		int n = 0;

		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "wait ", 5) == 0) {
			tl_term_metrics_drain_wait(tm, strtoll(line + 5, NULL, 10));
			continue;
		}
		for (tok = strtok_r(line, "\t", &save); tok && n < 6; tok = strtok_r(NULL, "\t", &save))
			f[n++] = tok;
		if (n != 6) {
			fprintf(stderr, "term-metrics-expose: not 6 fields: %s\n", line);
			return 2;
		}
		while (TL_FINDING_RULES[s.n_rules])
			s.n_rules++;
		t.ns = unescape(f[0]);
		t.owner_kind = unescape(f[1]);
		t.owner_name = unescape(f[2]);
		s.flags |= strchr(f[3], 't') ? TL_FS_TERMINATED : 0;
		s.flags |= strchr(f[3], 'k') ? TL_FS_SIGKILL : 0;
		t.complete = strchr(f[3], 'c') != NULL;
		t.deletion_ns = strchr(f[3], 'd') ? 1700000000000000000 : 0;
		for (tok = strtok_r(f[4], ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			char *eq = strchr(tok, '=');
			int k;

			if (!eq) {
				s.unexplained += strtoull(tok, NULL, 10);
				s.failed_requests += strtoull(tok, NULL, 10);
				continue;
			}
			*eq = '\0';
			k = rule_index(tok);
			if (k < 0) {
				fprintf(stderr, "term-metrics-expose: no rule %s\n", tok);
				return 2;
			}
			s.rule[k].findings++;
			s.rule[k].explained += strtoull(eq + 1, NULL, 10);
			s.rule[k].failed_requests += strtoull(eq + 1, NULL, 10);
			s.failed_requests += strtoull(eq + 1, NULL, 10);
		}
		if (strcmp(f[5], "-") != 0) {
			s.flags |= TL_FS_LAG;
			s.removal_lag_ns = strtoll(f[5], NULL, 10) * 1000000;
		}
		t.summary = strchr(f[3], 's') ? NULL : &s;
		tl_term_metrics_closed(tm, &t);
	}
	if (tl_metrics_render(stdout) < 0)
		return 1;
	tl_term_metrics_free(tm);
	tl_metrics_reset();
	return 0;
}
