/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Small helpers shared by the benchmarks: clocks, memory, option parsing,
 * removal of what a run created. */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);
/* CPU time (user + system) of the calling process, in nanoseconds. */
uint64_t bench_cpu_ns(void);
/* Resident set size of the calling process (/proc/self/statm). 0 or -errno. */
int bench_rss_bytes(uint64_t *ret);
/* Mounts tracefs at /sys/kernel/tracing unless it (or debugfs' tracing) is
 * there: classic tracepoints need it. 0 or -errno. */
int bench_ensure_tracefs(void);
/* Parses a decimal number within [min, max]. 0 or -EINVAL (*ret untouched). */
int bench_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
/* Sum of the sizes of the regular files below dir (0 when it is missing). */
uint64_t bench_dir_bytes(const char *dir);
/* Removes dir and everything below it. rmdir is retried on EBUSY (a
 * cgroup whose last tasks are still being released). 0 or the first -errno. */
int bench_remove_tree(const char *dir);
/* snprintf into buf; -ENAMETOOLONG when it does not fit. */
int bench_pathf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
