/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stddef.h>

/* Text from peers (Pod and container names, request IDs and paths, an
 * agent's answer) made safe to print on a terminal: nothing in it can move
 * the cursor, retitle the window, clear the screen, plant a link or start a
 * new line, and what was escaped stays visible.
 *
 *   \       -> \\                     (so that every escape below is unambiguous)
 *   TAB LF CR -> \t \n \r
 *   other C0 bytes, DEL -> \xNN       (ESC is \x1b)
 *   a byte that is not part of valid UTF-8 (RFC 3629: no overlong forms,
 *   no surrogates, nothing past U+10FFFF) -> \xNN, byte by byte
 *   C1 controls U+0080-U+009F, the bidirectional overrides and isolates
 *   U+202A-U+202E and U+2066-U+2069, U+2028 and U+2029 -> \uNNNN
 *   everything else, valid UTF-8 included, as it is.
 *
 * No dependency beyond the C library: the static termline-wait links it. */

/* Writes the escaped form of s (len bytes; NUL bytes are text like any
 * other) into out, cap bytes, always NUL-terminated when cap > 0. When it
 * does not fit it is cut before an escape or a UTF-8 sequence, never
 * inside one. Returns the length of the whole escaped form, without the
 * NUL, like snprintf: the result is complete when it is below cap. */
size_t tl_term_escape(char *out, size_t cap, const char *s, size_t len);

/* The escaped form of the NUL-terminated s in a new string (free()), or
 * NULL when out of memory; s NULL gives "". */
char *tl_term_escape_dup(const char *s);
