/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the kernel's HTTP/2 records of one connection
 * (bpf/include/termline-http.h, TL_HTTP_REC_H2) into the pairing
 * (daemon/capture/h2-pair.c): segments never read past a record.
 *
 *     byte 0: what the caller knows of the roles, how the connection ends
 *     then records: 2 bytes of record flags, a 2-byte length, the data
 *     (segments: struct tl_h2_seg and its copied bytes), clamped to what
 *     is left; flags 0xffff: both directions lost
 *
 * The copy of each record is exactly its length (ASan sees any read
 * past it). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h2-pair.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_stream(void *ud, const struct tl_h2_pair_stream *st)
{
	(void)ud;
	if (!st->s || !st->s->request_known)
		__builtin_trap();
}

static void on_event(void *ud, const struct tl_h2_pair_event *ev)
{
	(void)ud;
	if (ev->kind == TL_H2_PAIR_END &&
	    (ev->streams_unknown > ev->streams || ev->streams_open > ev->streams))
		__builtin_trap();
	if (ev->kind == TL_H2_PAIR_GOAWAY && ev->debug_len > 64)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct tl_http_want want = {.names = {"x-request-id"}, .n = 1};
	static const struct tl_h2_pair_ops ops = {on_stream, on_event};
	static const char *const ends[] = {"closed", "reset", "expired", "evicted"};
	struct tl_h2_pair *p;
	size_t off = 1;
	int64_t ts = 1;
	uint8_t ctl;

	if (size < 1)
		return 0;
	ctl = data[0];
	if (tl_h2_pair_new(&want, &ops, NULL, &p) < 0)
		return 0;
	if (ctl & 0x4)
		tl_h2_pair_set_server(p, ctl & 0x8);
	while (size - off >= 4) {
		uint16_t flags = (uint16_t)(data[off] << 8 | data[off + 1]);
		size_t n = (size_t)data[off + 2] << 8 | data[off + 3];
		uint8_t *rec;

		off += 4;
		ts += 10;
		if (flags == 0xffff) {
			tl_h2_pair_lost(p, ts);
			continue;
		}
		if (n > size - off)
			n = size - off;
		rec = malloc(n ? n : 1);
		if (!rec)
			break;
		memcpy(rec, data + off, n);
		tl_h2_pair_record(p, flags, ts, rec, n);
		free(rec);
		off += n;
	}
	tl_h2_pair_end(p, ts + 1, ends[ctl & 3]);
	tl_h2_pair_free(p);
	return 0;
}
