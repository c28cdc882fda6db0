/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: a journal file as a crash, a full disk or a hostile
 * hand left it, replayed by a starting store (docs/journal-format.md). The
 * first byte picks the format (even: binary frames, UID.tlj; odd: the
 * previous JSON-lines format, UID.jsonl); the rest is the file. The frame
 * decoder (frames.c) reads the rest as one frame body, the replay
 * (replay.c) reads the file into a bare state, and a store replays it
 * (journal.c: frames, CRCs, torn tails; state.c: records, string and
 * container tables, loss; the legacy reader), lists it and serves every
 * document it lists (document.c).
 *
 *   ninja -C BUILD tests/timeline/fuzz-journal
 *   BUILD/tests/timeline/fuzz-journal -max_total_time=60 tests/timeline/corpus-journal */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "document.h"
#include "frames.h"
#include "http-api.h"
#include "journal.h"
#include "log.h"
#include "loop.h"
#include "replay.h"
#include "state.h"
#include "timeline.h"

#define UID "f0f0f0f0-0000-4000-8000-00000000f022"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char state[PATH_MAX];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level > 0) /* keep the state dir itself */
		remove(path);
	return 0;
}

static void write_file(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		abort();
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			abort();
		p += w;
		n -= (size_t)w;
	}
	close(fd);
}

static void read_doc(struct tl_timelines *t, const char *ns, const char *name)
{
	struct tl_doc_reader *r = NULL;
	char buf[65536];
	size_t total = 0;
	ssize_t n;

	if (tl_timelines_open_doc(t, ns, name, NULL, &r) < 0)
		return;
	while ((n = tl_doc_read(r, buf, sizeof(buf))) > 0)
		total += (size_t)n;
	tl_doc_reader_free(r);
	(void)total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tl_timelines_config cfg = {
		.state_dir = state,
		.linger_s = 3600, /* replay only: nothing closes meanwhile */
		.max_events = 64,
		.findings_helper = "", /* the helper is a program of its own */
		.close_wait_ms = 100,
	};
	struct tl_loop *loop = NULL;
	struct tl_timelines *t = NULL;
	struct json_object *list = NULL, *arr;
	char dir[PATH_MAX + 16], path[PATH_MAX + 64];

	if (!state[0]) {
		snprintf(state, sizeof(state), "%s/termline-fuzz-journal-XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(state))
			abort();
		tl_log_set_level(TL_LOG_ERROR);
	}
	if (size < 1)
		return 0;
	snprintf(dir, sizeof(dir), "%s/journal", state);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		abort();
	snprintf(path, sizeof(path), "%s/" UID "%s", dir,
		 data[0] & 1 ? TL_JOURNAL_LEGACY_EXT : TL_JOURNAL_EXT);
	write_file(path, data + 1, size - 1);

	/* the decoder alone, the replay into a bare state, its document */
	{
		struct frame_rec rec;
		struct tl_state st;
		struct doc_recorder dr = { "v", "n", "k", "c", NULL, 0 };
		struct doc_cursor cur = { 0 };
		struct tl_buf b;
		uint64_t bad;

		if (frame_decode(data + 1, size - 1, UID, &rec) == 0)
			frame_rec_clear(&rec);
		if (state_init(&st, UID, 64, 0, 0) == 0) {
			replay_journal(dir, UID, data[0] & 1, &st, &bad);
			tl_buf_init(&b, 0);
			doc_write(&st, &dr, &cur, &b, 0);
			tl_buf_free(&b);
			state_release(&st);
		}
	}

	if (tl_loop_new(&loop) < 0)
		abort();
	if (tl_timelines_new(&cfg, loop, &t) == 0) {
		if (tl_http_list_json(t, NULL, true, &list) == 0 && json_object_object_get_ex(list, "timelines", &arr)) {
			for (size_t i = 0; i < json_object_array_length(arr); i++) {
				struct json_object *e = json_object_array_get_idx(arr, i), *ns, *name;
				const char *n = NULL, *m = NULL;

				if (json_object_object_get_ex(e, "namespace", &ns) && ns)
					n = json_object_get_string(ns);
				if (json_object_object_get_ex(e, "name", &name) && name)
					m = json_object_get_string(name);
				read_doc(t, n && m ? n : "_unknown", n && m ? m : UID);
			}
		}
		json_object_put(list);
		tl_timelines_free(t);
	}
	tl_loop_free(loop);
	nftw(state, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
