/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>

#include "errmsg.h"

int tl_verr(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err && errlen > 0)
		vsnprintf(err, errlen, fmt, ap);
	return -EINVAL;
}

int tl_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tl_verr(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}
