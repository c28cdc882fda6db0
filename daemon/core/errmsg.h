/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* One error line into a caller's buffer: the "char *err, size_t errlen"
 * that constructors and parsers take so that main() can print why start-up
 * failed. The one helper for every module. */
#include <stdarg.h>
#include <stddef.h>

/* Formats into err (nothing when err is NULL or errlen 0; cut to errlen).
 * Returns -EINVAL, so that a parser can "return tl_err(...)". */
int tl_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int tl_verr(char *err, size_t errlen, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
