/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static enum tl_log_level current_level = TL_LOG_INFO;
static const char *prog_name = "termlined";

static const char *const level_names[] = {
	[TL_LOG_DEBUG] = "debug",
	[TL_LOG_INFO] = "info",
	[TL_LOG_WARN] = "warn",
	[TL_LOG_ERROR] = "error",
};

void tl_log_set_level(enum tl_log_level level)
{
	current_level = level;
}

enum tl_log_level tl_log_get_level(void)
{
	return current_level;
}

void tl_log_set_prog(const char *prog)
{
	if (prog)
		prog_name = prog;
}

int tl_log_level_parse(const char *s, enum tl_log_level *ret)
{
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*ret = (enum tl_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void tl_log(enum tl_log_level level, const char *fmt, ...)
{
	va_list ap;
	char buf[2048];

	if (level < current_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* One write per line so lines from a crash-looping agent stay whole. */
	fprintf(stderr, "%s: %s: %s\n", prog_name, level_names[level], buf);
}
