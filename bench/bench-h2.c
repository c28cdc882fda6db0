/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/2 decoder's CPU per request: a captured h2load connection
 * (tests/capture/h2/h2load.cap: 200 requests, 10 streams at a time)
 * replayed through a new decoder ROUNDS times, as the kernel side will feed
 * it (DATA payloads delivered here: the worst case).
 *
 *     bench-h2 [CAPTURE] [ROUNDS]
 *
 * Prints ns per request (CPU time of this process). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "h2-conn.h"
#include "../tests/capture/h2-replay.h"

static unsigned long streams;

static void on_event(void *ud, const struct tl_h2_event *ev)
{
	(void)ud;
	if (ev->kind == TL_H2_EV_STREAM && ev->stream->request_known)
		streams++;
}

int main(int argc, char **argv)
{
	const char *root = getenv("TERMLINE_SOURCE_ROOT");
	char path[4096];
	const struct tl_h2_config cfg = {.want = {.names = {"x-request-id"}, .n = 1}};
	struct h2_capture cap;
	struct timespec t0, t1;
	long rounds = argc > 2 ? atol(argv[2]) : 2000;
	double ns;

	if (argc > 1)
		snprintf(path, sizeof(path), "%s", argv[1]);
	else
		snprintf(path, sizeof(path), "%s/tests/capture/h2/h2load.cap", root ? root : ".");
	if (h2_capture_load(path, &cap) < 0 || rounds <= 0) {
		fprintf(stderr, "bench-h2: cannot load %s\n", path);
		return 1;
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	for (long r = 0; r < rounds; r++) {
		struct tl_h2_conn *c;

		if (tl_h2_conn_new(&cfg, on_event, NULL, &c) < 0)
			return 1;
		for (size_t i = 0; i < cap.n; i++)
			if (cap.c[i].dir < 2)
				tl_h2_conn_data(c, (unsigned)cap.c[i].dir, cap.c[i].data, cap.c[i].len,
						cap.c[i].ts, TL_H2_CHUNK_START);
		tl_h2_conn_close(c, 0, false);
		tl_h2_conn_free(c);
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("bench-h2: %s: %lu requests decoded in %ld rounds, %zu bytes a round\n", path,
	       streams, rounds, cap.bytes);
	printf("bench-h2: %.0f ns CPU per request (%.1f ns per byte)\n", ns / (double)streams,
	       ns / ((double)cap.bytes * (double)rounds));
	h2_capture_free(&cap);
	return streams ? 0 : 1;
}
