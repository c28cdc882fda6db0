/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/2 frame layer, read as a byte stream (RFC 9113 sections 4 and 6).
 * Padding and priority fields are stripped from HEADERS and PUSH_PROMISE so
 * that only header-block bytes reach HPACK. */
#include <errno.h>
#include <string.h>

#include "h2-frame.h"

/* Where the reader is inside a payload. */
enum phase {
	P_SKIP,     /* bytes nobody reads (DATA, PING, WINDOW_UPDATE, unknown types) */
	P_PADLEN,   /* the Pad Length byte */
	P_PRIO,     /* HEADERS' 5 priority bytes */
	P_PROMISED, /* PUSH_PROMISE's 4-byte promised stream id */
	P_FRAG,     /* header-block fragment */
	P_PAD,      /* padding, to the end */
	P_FIXED,    /* RST_STREAM's 4 bytes, GOAWAY's first 8 */
	P_DEBUG,    /* GOAWAY's debug data, to the end */
	P_SETTING,  /* a 6-byte SETTINGS parameter */
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void tl_h2_frame_parse_header(const uint8_t b[TL_H2_FRAME_HEADER_LEN], struct tl_h2_frame *f)
{
	f->length = (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
	f->type = b[3];
	f->flags = b[4];
	f->stream_id = be32(b + 5) & TL_H2_MAX_STREAM_ID;
}

bool tl_h2_frame_plausible(const struct tl_h2_frame *f)
{
	bool s0 = f->stream_id == 0;

	if (f->type != TL_H2_DATA && f->length > 16384)
		return false;
	switch (f->type) {
	case TL_H2_DATA:
		return !s0 && !(f->flags & ~0x09);
	case TL_H2_HEADERS:
		return !s0 && !(f->flags & ~0x2d);
	case TL_H2_PRIORITY:
		return !s0 && f->length == 5 && !f->flags;
	case TL_H2_RST_STREAM:
		return !s0 && f->length == 4 && !f->flags;
	case TL_H2_SETTINGS:
		return s0 && (f->flags == TL_H2_FLAG_ACK ? f->length == 0
							  : !f->flags && f->length % 6 == 0);
	case TL_H2_PUSH_PROMISE:
		return !s0 && !(f->flags & ~0x0c) && f->length >= 4;
	case TL_H2_PING:
		return s0 && f->length == 8 && !(f->flags & ~0x01);
	case TL_H2_GOAWAY:
		return s0 && f->length >= 8 && !f->flags;
	case TL_H2_WINDOW_UPDATE:
		return f->length == 4 && !f->flags;
	case TL_H2_CONTINUATION:
		return !s0 && !(f->flags & ~0x04);
	}
	return false;
}

const char *tl_h2_frame_type_name(uint8_t type)
{
	static const char *const names[] = {"DATA",	"HEADERS", "PRIORITY", "RST_STREAM",
					    "SETTINGS", "PUSH_PROMISE", "PING", "GOAWAY",
					    "WINDOW_UPDATE", "CONTINUATION"};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "UNKNOWN";
}

const char *tl_h2_error_name(uint32_t code)
{
	static const char *const names[] = {
		"NO_ERROR",	  "PROTOCOL_ERROR",	 "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
		"SETTINGS_TIMEOUT", "STREAM_CLOSED",	 "FRAME_SIZE_ERROR", "REFUSED_STREAM",
		"CANCEL",	  "COMPRESSION_ERROR", "CONNECT_ERROR",  "ENHANCE_YOUR_CALM",
		"INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED",
	};

	return code < sizeof(names) / sizeof(names[0]) ? names[code] : NULL;
}

void tl_h2_reader_init(struct tl_h2_reader *r)
{
	memset(r, 0, sizeof(*r));
	r->state = TL_H2R_ST_START;
}

void tl_h2_reader_desync(struct tl_h2_reader *r)
{
	r->state = TL_H2R_ST_UNSYNCED;
	r->hn = 0;
}

/* Payload bookkeeping once a header is complete. */
static void payload_begin(struct tl_h2_reader *r)
{
	const struct tl_h2_frame *f = &r->f;

	r->malformed = r->lost = false;
	r->fn = r->pad = 0;
	r->debug_len = 0;
	r->debug_total = 0;
	r->left = f->length;
	r->frag_left = 0;
	r->phase = P_SKIP;
	switch (f->type) {
	case TL_H2_HEADERS:
		if (f->flags & TL_H2_FLAG_PADDED)
			r->phase = P_PADLEN;
		else if (f->flags & TL_H2_FLAG_PRIORITY)
			r->phase = P_PRIO;
		else
			r->phase = P_FRAG;
		r->frag_left = r->left;
		break;
	case TL_H2_PUSH_PROMISE:
		r->phase = f->flags & TL_H2_FLAG_PADDED ? P_PADLEN : P_PROMISED;
		break;
	case TL_H2_CONTINUATION:
		r->phase = P_FRAG;
		r->frag_left = r->left;
		break;
	case TL_H2_SETTINGS:
		if (f->flags & TL_H2_FLAG_ACK ? r->left != 0 : r->left % 6 != 0)
			r->malformed = true;
		else if (!(f->flags & TL_H2_FLAG_ACK))
			r->phase = P_SETTING;
		break;
	case TL_H2_RST_STREAM:
		if (r->left == 4)
			r->phase = P_FIXED;
		else
			r->malformed = true;
		break;
	case TL_H2_GOAWAY:
		if (r->left >= 8)
			r->phase = P_FIXED;
		else
			r->malformed = true;
		break;
	default:
		break;
	}
}

/* The fixed bytes a phase reads. */
static uint8_t fixed_need(const struct tl_h2_reader *r)
{
	switch (r->phase) {
	case P_PRIO:
		return 5;
	case P_PROMISED:
		return 4;
	case P_FIXED:
		return r->f.type == TL_H2_GOAWAY ? 8 : 4;
	case P_SETTING:
		return 6;
	default:
		return 0;
	}
}

static void end_event(struct tl_h2_reader *r, struct tl_h2_read *out)
{
	/* A payload that ended inside a fixed field. */
	if (fixed_need(r) && (r->phase != P_SETTING || r->fn))
		r->malformed = true;
	if (r->phase == P_PADLEN || r->phase == P_FRAG)
		r->malformed |= r->frag_left > 0 || r->phase == P_PADLEN;
	out->kind = TL_H2R_END;
	out->f = r->f;
	out->malformed = r->malformed;
	out->lost = r->lost;
	if (r->f.type == TL_H2_RST_STREAM || r->f.type == TL_H2_GOAWAY) {
		out->error_code = r->f.type == TL_H2_GOAWAY ? be32(r->fixed + 4) : be32(r->fixed);
		out->last_stream_id = be32(r->fixed) & TL_H2_MAX_STREAM_ID;
	}
	if (r->f.type == TL_H2_PUSH_PROMISE)
		out->promised_id = be32(r->fixed) & TL_H2_MAX_STREAM_ID;
	out->debug = r->debug;
	out->debug_len = r->debug_len;
	out->debug_total = r->debug_total;
	r->state = TL_H2R_ST_HEADER;
	r->hn = 0;
}

/* The Pad Length byte read: what is left is priority or promised id,
 * fragment, padding. */
static void after_padlen(struct tl_h2_reader *r)
{
	uint32_t fixed = r->f.type == TL_H2_PUSH_PROMISE ? 4
			 : (r->f.flags & TL_H2_FLAG_PRIORITY) ? 5
							       : 0;

	if (r->left < fixed || r->left - fixed < r->pad) {
		r->malformed = true;
		r->phase = P_SKIP;
		return;
	}
	r->frag_left = r->left - fixed - r->pad;
	r->phase = r->f.type == TL_H2_PUSH_PROMISE ? P_PROMISED : fixed ? P_PRIO : P_FRAG;
}

/* A fixed field is complete. Returns true when it makes an event. */
static bool fixed_done(struct tl_h2_reader *r, struct tl_h2_read *out)
{
	switch (r->phase) {
	case P_PRIO:
	case P_PROMISED:
		if (!(r->f.flags & TL_H2_FLAG_PADDED))
			r->frag_left = r->left;
		r->phase = P_FRAG;
		return false;
	case P_FIXED:
		r->phase = r->f.type == TL_H2_GOAWAY ? P_DEBUG : P_SKIP;
		return false;
	case P_SETTING:
		r->fn = 0;
		out->kind = TL_H2R_SETTING;
		out->setting_id = (uint16_t)(r->fixed[0] << 8 | r->fixed[1]);
		out->setting_value = be32(r->fixed + 2);
		return true;
	default:
		return false;
	}
}

static size_t payload_step(struct tl_h2_reader *r, const uint8_t *buf, size_t len,
			   struct tl_h2_read *out)
{
	size_t used = 0;

	for (;;) {
		size_t avail = len - used < r->left ? len - used : r->left;
		const uint8_t *p = buf + used;
		uint8_t need;

		if (r->left == 0) {
			end_event(r, out);
			return used;
		}
		if (avail == 0)
			return used;
		switch (r->phase) {
		case P_SKIP:
		case P_PAD:
			r->left -= (uint32_t)avail;
			used += avail;
			break;
		case P_DEBUG: {
			size_t keep = TL_H2_DEBUG_KEEP - r->debug_len;

			if (keep > avail)
				keep = avail;
			memcpy(r->debug + r->debug_len, p, keep);
			r->debug_len = (uint8_t)(r->debug_len + keep);
			r->debug_total += (uint32_t)avail;
			r->left -= (uint32_t)avail;
			used += avail;
			break;
		}
		case P_PADLEN:
			r->pad = p[0];
			r->left--;
			used++;
			after_padlen(r);
			break;
		case P_FRAG: {
			size_t n = avail < r->frag_left ? avail : r->frag_left;

			if (n == 0) {
				r->phase = P_PAD;
				break;
			}
			r->frag_left -= (uint32_t)n;
			r->left -= (uint32_t)n;
			if (r->frag_left == 0)
				r->phase = P_PAD;
			out->kind = TL_H2R_FRAGMENT;
			out->f = r->f;
			out->p = p;
			out->n = n;
			return used + n;
		}
		default: {
			size_t n;

			need = fixed_need(r);
			n = need - r->fn;
			if (n > avail)
				n = avail;
			memcpy(r->fixed + r->fn, p, n);
			r->fn = (uint8_t)(r->fn + n);
			r->left -= (uint32_t)n;
			used += n;
			if (r->fn == need && fixed_done(r, out))
				return used;
			break;
		}
		}
	}
}

size_t tl_h2_reader_step(struct tl_h2_reader *r, const uint8_t *buf, size_t len,
			 struct tl_h2_read *out)
{
	size_t i = 0;

	out->kind = TL_H2R_NONE;
	if (r->state == TL_H2R_ST_START) {
		if (len == 0)
			return 0;
		/* 'P' cannot start a plausible frame header (a length of 5 MiB). */
		r->state = buf[0] == 'P' ? TL_H2R_ST_PREFACE : TL_H2R_ST_HEADER;
		r->check_first = r->state == TL_H2R_ST_HEADER;
		r->hn = 0;
	}
	switch (r->state) {
	case TL_H2R_ST_PREFACE:
		while (i < len && r->hn < TL_H2_PREFACE_LEN) {
			if (buf[i] != (uint8_t)TL_H2_PREFACE[r->hn]) {
				tl_h2_reader_desync(r);
				out->kind = TL_H2R_DESYNC;
				return i;
			}
			r->hn++;
			i++;
		}
		if (r->hn == TL_H2_PREFACE_LEN) {
			r->state = TL_H2R_ST_HEADER;
			r->hn = 0;
			out->kind = TL_H2R_PREFACE;
		}
		return i;
	case TL_H2R_ST_HEADER: {
		size_t n = TL_H2_FRAME_HEADER_LEN - r->hn;

		if (n > len)
			n = len;
		memcpy(r->hbuf + r->hn, buf, n);
		r->hn = (uint8_t)(r->hn + n);
		if (r->hn < TL_H2_FRAME_HEADER_LEN)
			return n;
		tl_h2_frame_parse_header(r->hbuf, &r->f);
		/* A direction that did not start with the preface is taken
		 * as frames only if its first header is plausible. */
		if (r->check_first && !tl_h2_frame_plausible(&r->f)) {
			tl_h2_reader_desync(r);
			out->kind = TL_H2R_DESYNC;
			return n;
		}
		r->check_first = false;
		r->frames++;
		r->state = TL_H2R_ST_PAYLOAD;
		payload_begin(r);
		out->kind = TL_H2R_FRAME;
		out->f = r->f;
		return n;
	}
	case TL_H2R_ST_PAYLOAD:
		return payload_step(r, buf, len, out);
	case TL_H2R_ST_UNSYNCED:
	default:
		return len;
	}
}

int tl_h2_reader_skip(struct tl_h2_reader *r, uint64_t n)
{
	if (n == 0)
		return 0;
	if (r->state != TL_H2R_ST_PAYLOAD || n > r->left) {
		tl_h2_reader_desync(r);
		return -EPIPE;
	}
	switch (r->phase) {
	case P_SKIP:
	case P_PAD:
		break;
	case P_DEBUG:
		r->debug_total += (uint32_t)n;
		break;
	case P_FRAG:
		r->lost = true;
		if (n < r->frag_left) {
			r->frag_left -= (uint32_t)n;
			break;
		}
		r->frag_left = 0;
		r->phase = P_PAD;
		break;
	default:
		r->lost = true;
		r->phase = P_SKIP;
		break;
	}
	r->left -= (uint32_t)n;
	return 0;
}

bool tl_h2_reader_resync(struct tl_h2_reader *r, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	if (len < TL_H2_FRAME_HEADER_LEN)
		return false;
	while (off + TL_H2_FRAME_HEADER_LEN <= len) {
		struct tl_h2_frame f;

		tl_h2_frame_parse_header(buf + off, &f);
		if (!tl_h2_frame_plausible(&f))
			return false;
		off += TL_H2_FRAME_HEADER_LEN + f.length;
	}
	r->state = TL_H2R_ST_HEADER;
	r->hn = 0;
	r->check_first = false;
	return true;
}

bool tl_h2_reader_at_frame(struct tl_h2_reader *r)
{
	switch (r->state) {
	case TL_H2R_ST_HEADER:
		if (r->hn != 0)
			return false;
		r->check_first = false;
		return true;
	case TL_H2R_ST_START:
	case TL_H2R_ST_UNSYNCED:
		r->state = TL_H2R_ST_HEADER;
		r->hn = 0;
		r->check_first = false;
		return true;
	default:
		return false;
	}
}
