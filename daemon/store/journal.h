/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

/* Append-only journal of one open timeline: one JSON record per line in
 * DIR/UID.jsonl. Records are written with write(2) as they happen, so a
 * killed agent loses nothing already appended; fsync is batched by the
 * caller (tl_journal_sync) for power loss. */
#define TL_JOURNAL_RECORD_MAX (1024 * 1024)

struct tl_journal;

/* Opens (creating) DIR/NAME.jsonl for appending. A torn last line (the
 * agent died inside a write) is cut off first so new records start on a
 * line of their own. */
int tl_journal_open(const char *dir, const char *name, struct tl_journal **ret);
/* Appends rec as one line. -errno (ENOSPC, EIO, ...) on failure; a short
 * write is rolled back so the file stays line-aligned where possible. */
int tl_journal_append(struct tl_journal *j, struct json_object *rec);
/* fsync if anything was appended since the last sync. */
int tl_journal_sync(struct tl_journal *j);
uint64_t tl_journal_bytes(const struct tl_journal *j);
/* Closes the fd; accepts NULL. */
void tl_journal_close(struct tl_journal *j);
/* Closes and deletes the file (the timeline was written out). */
int tl_journal_remove(struct tl_journal *j);

/* Calls cb for every well-formed record of DIR/NAME.jsonl in order; lines
 * that do not parse (torn, corrupt, longer than TL_JOURNAL_RECORD_MAX) are
 * skipped and counted in *ret_bad. A negative return of cb stops the replay
 * and is returned. */
typedef int (*tl_journal_record_cb)(void *userdata, struct json_object *rec);
int tl_journal_replay(const char *dir, const char *name, tl_journal_record_cb cb, void *userdata,
		      uint64_t *ret_bad);
