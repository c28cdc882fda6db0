/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Container logs as the kubelet's runtime writes them (CRI logging format):
 * one physical line per piece, "<RFC3339Nano> <stdout|stderr> <P|F> <text>",
 * where a line of the container's output longer than the runtime's buffer
 * (16 KiB in containerd and CRI-O) is split into P pieces ended by an F
 * piece. A reader is fed raw file bytes in any chunking and hands out whole
 * records. docs/http-capture.md, "Access logs". */

/* A physical line longer than this is garbage (pieces are at most 16 KiB). */
#define TL_CRI_LINE_MAX (20 * 1024)
/* A joined record is cut here (cut = true); Envoy access lines are short. */
#define TL_CRI_RECORD_MAX (64 * 1024)

struct tl_cri_piece {
	int64_t time_ns;
	bool is_stderr;
	bool partial;        /* P */
	const char *text;    /* not NUL terminated */
	size_t len;
};

/* One physical line without its '\n'. 0 or -EINVAL. */
int tl_cri_parse_line(const char *line, size_t len, struct tl_cri_piece *ret);

/* A record: the pieces of one output line joined; time of its first piece.
 * text is NUL terminated and valid during the callback only. */
typedef void (*tl_cri_record_cb)(void *userdata, int64_t time_ns, bool is_stderr,
				 const char *text, size_t len, bool cut);

struct tl_cri_reader;

int tl_cri_reader_new(struct tl_cri_reader **ret);
void tl_cri_reader_free(struct tl_cri_reader *r);
/* Feeds bytes; calls cb for each complete record. Returns 0 or -ENOMEM. */
int tl_cri_reader_feed(struct tl_cri_reader *r, const char *buf, size_t len, tl_cri_record_cb cb,
		       void *userdata);
/* Forgets a partial line and unfinished P pieces (the file was truncated or
 * replaced: what they began will never end). */
void tl_cri_reader_reset(struct tl_cri_reader *r);
/* Physical lines that were not CRI lines, or too long. */
uint64_t tl_cri_reader_garbage(const struct tl_cri_reader *r);
