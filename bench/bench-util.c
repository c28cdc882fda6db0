/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "macro.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t bench_cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

int bench_rss_bytes(uint64_t *ret)
{
	unsigned long long size, resident;
	FILE *f = fopen("/proc/self/statm", "re");
	long page = sysconf(_SC_PAGESIZE);
	int n;

	if (!f)
		return -errno;
	n = fscanf(f, "%llu %llu", &size, &resident);
	fclose(f);
	if (n != 2 || page <= 0)
		return -EIO;
	*ret = (uint64_t)resident * (uint64_t)page;
	return 0;
}

int bench_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}

static uint64_t dir_bytes_sum;

static int add_size(const char *path _unused_, const struct stat *st, int type,
		    struct FTW *ftw _unused_)
{
	if (type == FTW_F)
		dir_bytes_sum += (uint64_t)st->st_size;
	return 0;
}

uint64_t bench_dir_bytes(const char *dir)
{
	dir_bytes_sum = 0;
	if (nftw(dir, add_size, 16, FTW_PHYS) != 0)
		return 0;
	return dir_bytes_sum;
}

static int remove_err;

static int remove_one(const char *path, const struct stat *st _unused_, int type,
		      struct FTW *ftw _unused_)
{
	int i;

	if (type != FTW_DP) {
		/* cgroupfs files go with their directory. */
		if (unlink(path) < 0 && errno != ENOENT && errno != EPERM &&
		    errno != EACCES && !remove_err)
			remove_err = -errno;
		return 0;
	}
	for (i = 0; i < 500; i++) {
		if (rmdir(path) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			break;
		usleep(10000);
	}
	if (!remove_err)
		remove_err = -errno;
	return 0;
}

int bench_remove_tree(const char *dir)
{
	remove_err = 0;
	if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
		return -errno;
	return remove_err;
}

int bench_pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int bench_ensure_tracefs(void)
{
	if (access("/sys/kernel/tracing/events", F_OK) == 0 ||
	    access("/sys/kernel/debug/tracing/events", F_OK) == 0)
		return 0;
	return mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) < 0 ? -errno : 0;
}
