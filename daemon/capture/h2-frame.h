/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The HTTP/2 frame layer (RFC 9113 sections 3.4, 4, 6) of one direction of
 * a connection, read as a stream of bytes split anywhere. The reader keeps
 * nothing of a frame but its header and the few fixed fields the agent
 * uses (RST_STREAM's and GOAWAY's codes, a bounded prefix of GOAWAY's debug
 * data, SETTINGS one at a time); header-block fragments are handed over as
 * they come, DATA and every other payload are skipped. Bytes that were not
 * delivered (tl_h2_reader_skip) keep frame sync when they fall inside the
 * current frame's payload; anything else loses it, and the reader looks for
 * a frame start again only where the caller says a read or write began
 * (tl_h2_reader_resync), with every header it can see there plausible. */

#define TL_H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define TL_H2_PREFACE_LEN 24
#define TL_H2_FRAME_HEADER_LEN 9
#define TL_H2_DEBUG_KEEP 64 /* bytes of GOAWAY debug data kept */
#define TL_H2_MAX_STREAM_ID 0x7fffffffu

enum tl_h2_frame_type {
	TL_H2_DATA = 0x0,
	TL_H2_HEADERS = 0x1,
	TL_H2_PRIORITY = 0x2,
	TL_H2_RST_STREAM = 0x3,
	TL_H2_SETTINGS = 0x4,
	TL_H2_PUSH_PROMISE = 0x5,
	TL_H2_PING = 0x6,
	TL_H2_GOAWAY = 0x7,
	TL_H2_WINDOW_UPDATE = 0x8,
	TL_H2_CONTINUATION = 0x9,
};

enum {
	TL_H2_FLAG_END_STREAM = 0x1, /* DATA, HEADERS */
	TL_H2_FLAG_ACK = 0x1,        /* SETTINGS, PING */
	TL_H2_FLAG_END_HEADERS = 0x4,
	TL_H2_FLAG_PADDED = 0x8,
	TL_H2_FLAG_PRIORITY = 0x20,
};

#define TL_H2_SETTINGS_HEADER_TABLE_SIZE 0x1

struct tl_h2_frame {
	uint32_t length;    /* payload bytes */
	uint8_t type, flags;
	uint32_t stream_id; /* reserved bit cleared */
};

void tl_h2_frame_parse_header(const uint8_t b[TL_H2_FRAME_HEADER_LEN], struct tl_h2_frame *f);
/* A header a peer following RFC 9113 could send with default settings:
 * a known type, its flags, its stream-id rule, its fixed length, at most
 * 16384 bytes (any length for DATA). Used only to find frames again. */
bool tl_h2_frame_plausible(const struct tl_h2_frame *f);
const char *tl_h2_frame_type_name(uint8_t type);
/* "NO_ERROR", ... (RFC 9113 section 7); NULL for a code it does not define. */
const char *tl_h2_error_name(uint32_t code);

enum tl_h2_read_kind {
	TL_H2R_NONE = 0,  /* all input used; more is needed */
	TL_H2R_PREFACE,   /* the client connection preface, complete */
	TL_H2R_FRAME,     /* a frame header (r->f); its payload follows */
	TL_H2R_FRAGMENT,  /* bytes of a header-block fragment (p, n) */
	TL_H2R_SETTING,   /* one SETTINGS parameter (id, value) */
	TL_H2R_END,       /* the frame's payload is complete (fields below) */
	TL_H2R_DESYNC,    /* the bytes are not frames: sync lost */
};

struct tl_h2_read {
	enum tl_h2_read_kind kind;
	struct tl_h2_frame f;
	const uint8_t *p;
	size_t n;
	uint16_t setting_id;
	uint32_t setting_value;
	/* at TL_H2R_END */
	bool malformed;       /* the payload broke its frame type's rules */
	bool lost;            /* payload bytes that mattered were not delivered */
	uint32_t error_code;  /* RST_STREAM, GOAWAY */
	uint32_t last_stream_id; /* GOAWAY */
	uint32_t promised_id; /* PUSH_PROMISE */
	const uint8_t *debug; /* GOAWAY: the first debug_len bytes of debug_total */
	size_t debug_len;
	uint32_t debug_total;
};

enum tl_h2_reader_state {
	TL_H2R_ST_START = 0, /* nothing read yet */
	TL_H2R_ST_PREFACE,
	TL_H2R_ST_HEADER,
	TL_H2R_ST_PAYLOAD,
	TL_H2R_ST_UNSYNCED,
};

struct tl_h2_reader {
	uint8_t state, phase, hn, fn, pad;
	bool malformed, lost;
	bool check_first;    /* the next header must be plausible */
	uint8_t hbuf[TL_H2_FRAME_HEADER_LEN];
	uint8_t fixed[8];
	struct tl_h2_frame f;
	uint32_t left;       /* payload bytes not yet read */
	uint32_t frag_left;  /* of them, header-block fragment */
	uint32_t debug_total;
	uint8_t debug[TL_H2_DEBUG_KEEP];
	uint8_t debug_len;
	uint64_t frames;     /* frame headers read */
};

/* A reader at the start of a direction: it takes the client preface or
 * a frame. */
void tl_h2_reader_init(struct tl_h2_reader *r);
/* Reads from buf: returns the bytes used and sets out->kind. Call again
 * with the rest (and with len 0 after a skip) until kind is NONE. After
 * DESYNC the reader is unsynced and uses every byte until resynced. */
size_t tl_h2_reader_step(struct tl_h2_reader *r, const uint8_t *buf, size_t len,
			 struct tl_h2_read *out);
/* n bytes here were not delivered. 0: they fell inside the current frame's
 * payload, sync kept (the frame's END says lost when they mattered);
 * -EPIPE: sync lost (the reader is unsynced). */
int tl_h2_reader_skip(struct tl_h2_reader *r, uint64_t n);
/* Sync lost for a reason of the caller's (records lost). */
void tl_h2_reader_desync(struct tl_h2_reader *r);
/* An unsynced reader at the start of a read or write: takes buf as a frame
 * start when every frame header that lies inside buf is plausible (at
 * least one). true when synced. */
bool tl_h2_reader_resync(struct tl_h2_reader *r, const uint8_t *buf, size_t len);
/* The caller knows a frame header starts at the next byte (it followed
 * the frames itself): a reader at its start or unsynced takes it as one,
 * without checks. false when the reader is inside a frame (the caller's
 * view and the reader's differ: it is left as it is). */
bool tl_h2_reader_at_frame(struct tl_h2_reader *r);
static inline bool tl_h2_reader_synced(const struct tl_h2_reader *r)
{
	return r->state != TL_H2R_ST_UNSYNCED;
}
