/* SPDX-License-Identifier: Apache-2.0 */
/* Loads the agent's kernel programs (daemon/kernel/bpf-loader.c), tracks
 * the cgroups given as arguments and, for every line read on stdin, polls
 * the connection counter (the "accepted" map of bpf/net.bpf.c, read by
 * daemon/drain/drain-conn.c) and prints one JSON line:
 * {"cgroupId": [new count, latest connection's time], ...}, for
 * tests/drain/test-drain-conn.py.
 *
 *   drain-conn-driver [--tracepoint] CGROUP_ID...
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf-loader.h"
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
	static struct tl_clock clock;
	struct tl_bpf_config cfg = { .clock = &clock };
	struct tl_drain_conn *c = NULL;
	struct tl_bpf *b = NULL;
	char err[512] = "", line[64];
	const char *probe;
	int r, i = 1;

	if (tl_clock_sample(&clock) < 0)
		return 1;
	if (argc > 1 && strcmp(argv[1], "--tracepoint") == 0) {
		cfg.force_classic = true;
		i++;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: drain-conn-driver [--tracepoint] CGROUP_ID...\n");
		return 2;
	}
	r = tl_bpf_new(&cfg, &b, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	for (; i < argc; i++) {
		char *end;
		unsigned long long id = strtoull(argv[i], &end, 10);

		if (!id || *end || tl_bpf_track_cgroup(b, id) < 0) {
			fprintf(stderr, "drain-conn-driver: bad cgroup id %s\n", argv[i]);
			tl_bpf_free(b);
			return 2;
		}
	}
	r = tl_drain_conn_new(tl_bpf_accepted_map_fd(b), &clock, &c);
	if (r < 0) {
		fprintf(stderr, "drain-conn-driver: %s\n", strerror(-r));
		tl_bpf_free(b);
		return 1;
	}
	probe = tl_bpf_probe_of(b, "inet_sock_set_state");
	printf("ready %s\n", probe ? probe : "?");
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
	tl_bpf_free(b);
	return r < 0;
}
