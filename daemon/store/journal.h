/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

/* Append-only journal of one open timeline, DIR/UID.tlj: binary frames
 * (docs/journal-format.md)
 *
 *   frame := u32 length (LE, of body) | u32 crc32 (LE, zlib, of body) | body
 *
 * collected and written with one write(2) per batch (tl_journal_flush,
 * which the store calls at the end of the loop iteration that appended, or
 * once TL_JOURNAL_PENDING_MAX bytes wait): one syscall per ring drain, not
 * per event. A killed agent loses what the iteration it was in had not
 * written yet; fsync is batched by the caller (tl_journal_sync).
 * What a body holds is the store's business (timeline.c).
 *
 * No descriptor per timeline: journals share a pool of at most max_open
 * open files; the least recently written one is synced and closed when
 * another needs its slot. */
#define TL_JOURNAL_EXT ".tlj"
#define TL_JOURNAL_FRAME_MAX (1024 * 1024)
#define TL_JOURNAL_PENDING_MAX (64 * 1024)
/* The previous format (one JSON record per line, DIR/UID.jsonl): replayed
 * once after an upgrade, then rewritten in the binary form. */
#define TL_JOURNAL_LEGACY_EXT ".jsonl"
#define TL_JOURNAL_RECORD_MAX (1024 * 1024)

struct tl_jpool;
struct tl_journal;

int tl_jpool_new(unsigned max_open, struct tl_jpool **ret);
/* Journals must be closed first. Accepts NULL. */
void tl_jpool_free(struct tl_jpool *p);
unsigned tl_jpool_open_fds(const struct tl_jpool *p);

/* DIR/NAME.tlj, created if missing. A torn last frame (the agent died
 * inside a write) is cut off first so new frames follow whole ones. */
int tl_journal_open(struct tl_jpool *pool, const char *dir, const char *name,
		    struct tl_journal **ret);
/* Queues one frame around body; written by the next flush (or now, past
 * TL_JOURNAL_PENDING_MAX). -errno (ENOSPC, EIO, ... from that write); a
 * short write is rolled back so the file stays frame-aligned where
 * possible. */
int tl_journal_append(struct tl_journal *j, const void *body, size_t len);
/* Writes what is queued. 0 or -errno (the queued frames are dropped then). */
int tl_journal_flush(struct tl_journal *j);
bool tl_journal_pending(const struct tl_journal *j);
/* Appends frame headers + bodies already built with tl_journal_frame(). */
int tl_journal_append_raw(struct tl_journal *j, const void *frames, size_t len);
/* Replaces the whole file with frames (already framed), atomically
 * (temp file, fsync, rename): compaction. */
int tl_journal_rewrite(struct tl_journal *j, const void *frames, size_t len);
/* Flush, then fsync if anything was written since the last sync. */
int tl_journal_sync(struct tl_journal *j);
/* Bytes in the file plus those queued. */
uint64_t tl_journal_bytes(const struct tl_journal *j);
const char *tl_journal_path(const struct tl_journal *j);
/* A journal that lacks frames its timeline holds (a write failed, and no
 * rewrite has made it whole yet) says so in its mode, which costs no disk
 * space to change: TL_JOURNAL_MODE_BEHIND instead of TL_JOURNAL_MODE. A
 * rewrite makes a file of the usual mode. A replay that finds the mark
 * counts the timeline's loss (docs/journal-format.md). */
#define TL_JOURNAL_MODE 0600
#define TL_JOURNAL_MODE_BEHIND 0640
/* Sets (behind) or clears the mark. 0 or -errno. */
int tl_journal_mark(struct tl_journal *j, bool behind);
/* Closes; accepts NULL. */
void tl_journal_close(struct tl_journal *j);
/* Closes and deletes the file (the timeline was written out). */
int tl_journal_remove(struct tl_journal *j);
/* Closes without writing what is queued; the file stays (for the caller
 * to delete elsewhere). Accepts NULL. */
void tl_journal_discard(struct tl_journal *j);

/* The frame's CRC: zlib's crc32 of len bytes, computed here faster. */
uint32_t tl_journal_crc(const void *buf, size_t len);
/* Frames a body into out (a struct tl_buf). */
struct tl_buf;
void tl_journal_frame(struct tl_buf *out, const void *body, size_t len);

/* Calls cb for every frame of DIR/NAME.tlj whose CRC matches, in order.
 * Frames with a bad CRC are skipped and counted in *ret_bad; a length that
 * runs past the end (torn tail) ends the replay (counted too). A negative
 * return of cb stops the replay and is returned. */
typedef int (*tl_journal_frame_cb)(void *userdata, const uint8_t *body, size_t len);
int tl_journal_replay(const char *dir, const char *name, tl_journal_frame_cb cb, void *userdata,
		      uint64_t *ret_bad);
/* The same for any file of frames, of at most max bytes (-EFBIG past it). */
int tl_journal_read(const char *path, uint64_t max, tl_journal_frame_cb cb, void *userdata,
		    uint64_t *ret_bad);

/* The previous format: every well-formed JSON line of DIR/NAME.jsonl;
 * lines that do not parse are skipped and counted. */
typedef int (*tl_journal_record_cb)(void *userdata, struct json_object *rec);
int tl_journal_replay_jsonl(const char *dir, const char *name, tl_journal_record_cb cb,
			    void *userdata, uint64_t *ret_bad);
