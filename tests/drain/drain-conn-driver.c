/* SPDX-License-Identifier: Apache-2.0 */
/* Loads the connection counter (bpf/conn.bpf.c) and, for every line read
 * on stdin, polls it and prints one JSON line: {"cgroupId": new count, ...}
 * with the latest connection's time, for tests/drain/test-drain-conn.py. */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "drain-conn.h"

static void seen(void *ud, uint64_t cgroup_id, uint64_t count, int64_t last_ns)
{
	int *first = ud;

	printf("%s\"%llu\":[%llu,%lld]", *first ? "" : ",", (unsigned long long)cgroup_id,
	       (unsigned long long)count, (long long)last_ns);
	*first = 0;
}

int main(int argc, char **argv)
{
	enum tl_drain_conn_variant v = TL_DRAIN_CONN_AUTO;
	struct tl_drain_conn *c = NULL;
	char err[256] = "", line[64];
	int r;

	if (tl_clock_sample(&tl_clock_global) < 0)
		return 1;
	if (argc > 1 && strcmp(argv[1], "--tracepoint") == 0)
		v = TL_DRAIN_CONN_TRACEPOINT;
	else if (argc > 1 && strcmp(argv[1], "--tp-btf") == 0)
		v = TL_DRAIN_CONN_TP_BTF;
	r = tl_drain_conn_open(v, &c, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	printf("ready %s\n", tl_drain_conn_probe(c));
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		int first = 1;

		printf("{");
		r = tl_drain_conn_poll(c, seen, &first);
		printf("}\n");
		fflush(stdout);
		if (r < 0) {
			fprintf(stderr, "poll: %s\n", strerror(-r));
			break;
		}
	}
	tl_drain_conn_free(c);
	return r < 0;
}
