/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One line per message on stderr: "termlined: LEVEL: message". Modules that
 * are libraries return errors; the daemon's top level logs them once. */
enum tl_log_level { TL_LOG_DEBUG, TL_LOG_INFO, TL_LOG_WARN, TL_LOG_ERROR };

void tl_log_set_level(enum tl_log_level level);
enum tl_log_level tl_log_get_level(void);
/* Returns 0 and fills *ret for "debug", "info", "warn", "error"; -EINVAL else. */
int tl_log_level_parse(const char *s, enum tl_log_level *ret);
void tl_log_set_prog(const char *prog);
void tl_log(enum tl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define tl_debug(...) tl_log(TL_LOG_DEBUG, __VA_ARGS__)
#define tl_info(...) tl_log(TL_LOG_INFO, __VA_ARGS__)
#define tl_warn(...) tl_log(TL_LOG_WARN, __VA_ARGS__)
#define tl_error(...) tl_log(TL_LOG_ERROR, __VA_ARGS__)
