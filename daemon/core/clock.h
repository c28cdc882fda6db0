/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdint.h>

/* Kernel events carry CLOCK_BOOTTIME (bpf_ktime_get_boot_ns). The offset to
 * CLOCK_REALTIME is sampled with the tightest bracket of a few reads and
 * re-sampled periodically (NTP steps and slews move REALTIME, not BOOTTIME). */
struct tl_clock {
	int64_t offset_ns;     /* realtime - boottime */
	int64_t uncertainty_ns; /* width of the best bracket */
	uint64_t samples;
};

/* Re-sample; returns 0 or -errno. */
int tl_clock_sample(struct tl_clock *c);
static inline int64_t tl_clock_boot_to_real(const struct tl_clock *c, uint64_t boot_ns)
{
	return (int64_t)boot_ns + c->offset_ns;
}

int64_t tl_now_real_ns(void);
int64_t tl_now_boot_ns(void);

/* RFC 3339 UTC with nanoseconds: "2026-11-29T21:14:14.123456789Z".
 * buf must hold TL_TIME_STRLEN bytes. Returns buf. */
#define TL_TIME_STRLEN 40
char *tl_time_format(int64_t real_ns, char *buf);
/* Parses RFC 3339 (any fraction length, Z or +hh:mm offset). 0 or -EINVAL. */
int tl_time_parse(const char *s, int64_t *ret_ns);
