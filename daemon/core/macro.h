/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stddef.h>
#include <string.h>

/* A parameter a callback signature imposes but this callback does not use. */
#define _unused_ __attribute__((unused))

/* A macro's value as a string literal: TL_XSTR(4096) is "4096". */
#define TL_STR_(x) #x
#define TL_XSTR(x) TL_STR_(x)

/* snprintf(dst, size, "%s", src) without the format machinery: copies at
 * most size - 1 bytes of src and terminates (size > 0). For the fixed
 * string fields events carry, on the per-event path. */
static inline void tl_copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}
