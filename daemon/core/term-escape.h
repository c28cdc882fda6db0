/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Text for a terminal from bytes someone else chose. Pod and container
 * names, request IDs and paths (any HTTP client of a Pod picks them), an
 * agent's error bodies: printed raw, an ESC sequence in them retitles the
 * window, clears the screen or plants an OSC 8 link in the reader's
 * terminal. Every byte that a terminal may act on, or that is not text,
 * becomes a visible escape:
 *   - C0 controls and DEL: \t \n \r, else \xNN (ESC is \x1b);
 *   - C1 controls (U+0080..U+009F; a terminal may read 0x9b as CSI): \u00NN;
 *   - characters that reorder or hide text (bidi overrides and isolates,
 *     LRM/RLM, zero-width space/joiners, line/paragraph separators, BOM):
 *     \uNNNN;
 *   - bytes that are not UTF-8 (a stray continuation, a bad or overlong
 *     lead, a surrogate, past U+10FFFF, a sequence cut short): \xNN each.
 * Everything else, backslashes included, is copied. Library code: no
 * allocation but where named, no global state. */
#include <stdbool.h>
#include <stddef.h>

/* Writes the escaped form of s (n bytes; NULs included) into dst as
 * snprintf does: at most dstlen - 1 bytes and a NUL, never a partial
 * escape. Returns the length the whole escaped text needs. */
size_t tl_term_escape(char *dst, size_t dstlen, const char *s, size_t n);
/* true when s (n bytes) would change under tl_term_escape(). */
bool tl_term_needs_escape(const char *s, size_t n);
/* A malloc'ed, NUL-terminated escaped copy, or NULL without memory. */
char *tl_term_escape_dup(const char *s, size_t n);
