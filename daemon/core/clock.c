/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

static int64_t read_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t tl_now_real_ns(void)
{
	return read_ns(CLOCK_REALTIME);
}

int64_t tl_now_boot_ns(void)
{
	return read_ns(CLOCK_BOOTTIME);
}

int tl_clock_sample(struct tl_clock *c)
{
	int64_t best_width = INT64_MAX, best_offset = 0;

	/* Bracket a REALTIME read between two BOOTTIME reads and keep the
	 * narrowest bracket: preemption between the reads only widens it. */
	for (int i = 0; i < 7; i++) {
		int64_t b1 = read_ns(CLOCK_BOOTTIME);
		int64_t r = read_ns(CLOCK_REALTIME);
		int64_t b2 = read_ns(CLOCK_BOOTTIME);

		if (b1 < 0 || r < 0 || b2 < 0)
			return -errno;
		if (b2 - b1 < best_width) {
			best_width = b2 - b1;
			best_offset = r - (b1 + (b2 - b1) / 2);
		}
	}
	c->offset_ns = best_offset;
	c->uncertainty_ns = best_width;
	c->samples++;
	return 0;
}

char *tl_time_format(int64_t real_ns, char *buf)
{
	struct tm tm;
	time_t secs;
	int64_t frac;

	secs = (time_t)(real_ns / 1000000000LL);
	frac = real_ns % 1000000000LL;
	if (frac < 0) {
		frac += 1000000000LL;
		secs -= 1;
	}
	if (!gmtime_r(&secs, &tm)) {
		snprintf(buf, TL_TIME_STRLEN, "1970-01-01T00:00:00.000000000Z");
		return buf;
	}
	/* Through a wide buffer: years past 9999 would not fit the usual width. */
	char wide[128];

	snprintf(wide, sizeof(wide), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long long)frac);
	wide[TL_TIME_STRLEN - 1] = '\0';
	memcpy(buf, wide, TL_TIME_STRLEN);
	return buf;
}

static int parse_digits(const char **p, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return -EINVAL;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*ret = v;
	return 0;
}

int tl_time_parse(const char *s, int64_t *ret_ns)
{
	int year, mon, day, hour, min, sec;
	int64_t frac = 0;
	int64_t offset_s = 0;
	const char *p = s;
	struct tm tm = { 0 };
	time_t t;

	if (!s)
		return -EINVAL;
	if (parse_digits(&p, 4, &year) < 0 || *p++ != '-' || parse_digits(&p, 2, &mon) < 0 ||
	    *p++ != '-' || parse_digits(&p, 2, &day) < 0 || (*p != 'T' && *p != 't' && *p != ' '))
		return -EINVAL;
	p++;
	if (parse_digits(&p, 2, &hour) < 0 || *p++ != ':' || parse_digits(&p, 2, &min) < 0 ||
	    *p++ != ':' || parse_digits(&p, 2, &sec) < 0)
		return -EINVAL;
	if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
		return -EINVAL;
	if (*p == '.') {
		int digits = 0;

		p++;
		while (*p >= '0' && *p <= '9') {
			if (digits < 9) {
				frac = frac * 10 + (*p - '0');
				digits++;
			}
			p++;
		}
		if (digits == 0)
			return -EINVAL;
		while (digits++ < 9)
			frac *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1, oh, om;

		p++;
		if (parse_digits(&p, 2, &oh) < 0 || *p++ != ':' || parse_digits(&p, 2, &om) < 0 ||
		    oh > 23 || om > 59)
			return -EINVAL;
		offset_s = sign * (oh * 3600 + om * 60);
	} else {
		return -EINVAL;
	}
	if (*p != '\0')
		return -EINVAL;
	tm.tm_year = year - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	t = timegm(&tm);
	if (t == (time_t)-1 && !(year == 1969 && mon == 12 && day == 31))
		return -EINVAL;
	/* int64 nanoseconds end in April 2262; past that a timestamp cannot
	 * be represented and is rejected rather than wrapped. */
	if ((int64_t)t - offset_s > INT64_MAX / 1000000000LL - 1 ||
	    (int64_t)t - offset_s < INT64_MIN / 1000000000LL + 1)
		return -EINVAL;
	*ret_ns = ((int64_t)t - offset_s) * 1000000000LL + frac;
	return 0;
}
