/* SPDX-License-Identifier: Apache-2.0 */
/* The store's large growable buffers: each timeline's record arena and
 * event index (docs/journal-format.md, "In memory").
 *
 * Up to MEM_BIG_MIN bytes a buffer is malloc'd; past it, it is an anonymous
 * mapping of its own, grown with mremap. Doubling with realloc leaves up
 * to half of every buffer as resident slack, and glibc's dynamic mmap
 * threshold moves such buffers into the heap after the first large free,
 * where the freed smaller copies fragment it (bench-timeline, 110
 * timelines x 10,000 events, bench/README.md). A mapping costs resident
 * memory only for the pages written, so growing it by doubling leaves no
 * resident slack, and mremap moves pages instead of copying bytes. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mem.h"

static size_t page_up(size_t n)
{
	static size_t page;

	if (!page) {
		long p = sysconf(_SC_PAGESIZE);

		page = p > 0 ? (size_t)p : 4096;
	}
	return (n + page - 1) & ~(page - 1);
}

void *mem_grow(void *p, size_t *cap, size_t used, size_t need)
{
	size_t ncap = *cap ? *cap : 256;
	void *n;

	if (need <= *cap)
		return p;
	if (need > SIZE_MAX / 4)
		return NULL;
	while (ncap < need)
		ncap *= 2;
	if (ncap <= MEM_BIG_MIN) {
		n = realloc(p, ncap);
		if (!n)
			return NULL;
		*cap = ncap;
		return n;
	}
	/* Mapped sizes are pages above MEM_BIG_MIN: *cap > MEM_BIG_MIN tells a
	 * mapping from a malloc'd block, even rounded down by the caller to
	 * a whole number of its elements. */
	ncap = page_up(ncap);
	if (*cap > MEM_BIG_MIN) {
		n = mremap(p, page_up(*cap), ncap, MREMAP_MAYMOVE);
		if (n == MAP_FAILED)
			return NULL;
	} else {
		n = mmap(NULL, ncap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (n == MAP_FAILED)
			return NULL;
		if (used)
			memcpy(n, p, used);
		free(p);
	}
	*cap = ncap;
	return n;
}

void mem_free(void *p, size_t cap)
{
	if (!p)
		return;
	if (cap > MEM_BIG_MIN)
		munmap(p, page_up(cap));
	else
		free(p);
}

void *mem_dup(const void *p, size_t n, size_t *cap)
{
	void *c;

	*cap = 0;
	c = mem_grow(NULL, cap, 0, n ? n : 1);
	if (c && n)
		memcpy(c, p, n);
	return c;
}
