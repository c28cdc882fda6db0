/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Start-up: the journals of the open timelines read back into their
 * states (docs/journal-format.md), both the binary frames and the previous
 * JSON-lines format. A frame is decoded (frames.c) and applied to the
 * state through the calls the live path uses; nothing is journaled here. */
#include <stdbool.h>
#include <stdint.h>

#include "state.h"

/* Replays DIR/UID.tlj (legacy: DIR/UID.jsonl) into s (state_init'ed for
 * uid). *ret_bad: records that could not be read back (a bad CRC, a torn
 * tail, a frame that does not fit the state). 0, or -errno when the file
 * could not be read at all (or out of memory). */
int replay_journal(const char *dir, const char *uid, bool legacy, struct tl_state *s,
		   uint64_t *ret_bad);

/* Counts a replay's unreadable records in s's loss once: those still in
 * the file (torn tails are cut off when the journal is opened again, the
 * others stay and are met again at the next replay) are remembered in
 * loss.unreadable. Returns how many are new. */
uint64_t replay_count_bad(struct tl_state *s, uint64_t bad, bool torn, bool legacy);

/* Every journal of dir: cb(ud, uid, legacy, mtime_ns) for each file with a
 * usable UID, the previous format's first (a UID with both, an upgrade
 * interrupted after its rewrite, then ends with the newer records). A
 * negative return of cb is counted, not fatal. 0 or -errno (dir). */
int replay_scan(const char *dir, int (*cb)(void *ud, const char *uid, bool legacy, int64_t mtime_ns),
		void *ud);
