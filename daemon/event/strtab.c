/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "strtab.h"

/* Strings are stored NUL-terminated, back to back, in one arena; off[id] is
 * where string id starts (off[count] is the arena's length). The hash table
 * holds id + 1 (0 = empty), open addressing, at most half full. */
struct tl_strtab {
	char *arena;
	size_t arena_len, arena_cap;
	uint32_t *off;
	uint32_t count, off_cap;
	uint32_t *slots;
	uint32_t n_slots; /* power of two */
};

/* Every string an event carries is hashed on its way into the store: eight
 * bytes per step (FNV-1a's byte per step costs a tenth of the store's
 * instructions per event in bench-timeline's profile). Seeded once per
 * process, so which strings collide is not known to whoever chooses them
 * (comm, paths of HTTP requests). */
static uint64_t hash_seed;

static uint32_t hash_bytes(const char *s, size_t n)
{
	const uint64_t m = 0xff51afd7ed558ccdull;
	uint64_t h = hash_seed ^ (n * 0x9e3779b97f4a7c15ull), w;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * m;
		h ^= h >> 32;
	}
	if (n) {
		w = 0;
		for (size_t i = 0; i < n; i++)
			w |= (uint64_t)(uint8_t)s[i] << (8 * i);
		h = (h ^ w) * m;
		h ^= h >> 32;
	}
	h ^= h >> 29;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

static void hash_seed_init(void)
{
	uint64_t v = 0;

	if (hash_seed)
		return;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&v;
	}
	hash_seed = v | 1;
}

int tl_strtab_new(struct tl_strtab **ret)
{
	struct tl_strtab *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	hash_seed_init();
	t->off = malloc(sizeof(*t->off) * 16);
	t->slots = calloc(32, sizeof(*t->slots));
	if (!t->off || !t->slots) {
		tl_strtab_free(t);
		return -ENOMEM;
	}
	t->off_cap = 16;
	t->n_slots = 32;
	t->off[0] = 0;
	*ret = t;
	return 0;
}

void tl_strtab_free(struct tl_strtab *t)
{
	if (!t)
		return;
	free(t->arena);
	free(t->off);
	free(t->slots);
	free(t);
}

int tl_strtab_clone(const struct tl_strtab *t, struct tl_strtab **ret)
{
	struct tl_strtab *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	*c = *t;
	c->arena = t->arena_len ? malloc(t->arena_len) : NULL;
	c->off = malloc(sizeof(*c->off) * (t->count + 1));
	c->slots = malloc(sizeof(*c->slots) * t->n_slots);
	if ((t->arena_len && !c->arena) || !c->off || !c->slots) {
		tl_strtab_free(c);
		return -ENOMEM;
	}
	if (t->arena_len)
		memcpy(c->arena, t->arena, t->arena_len);
	memcpy(c->off, t->off, sizeof(*c->off) * (t->count + 1));
	memcpy(c->slots, t->slots, sizeof(*c->slots) * t->n_slots);
	c->arena_cap = t->arena_len;
	c->off_cap = t->count + 1;
	*ret = c;
	return 0;
}

const char *tl_strtab_get(const struct tl_strtab *t, uint32_t id, size_t *len)
{
	if (!t || id >= t->count)
		return NULL;
	if (len)
		*len = t->off[id + 1] - t->off[id] - 1;
	return t->arena + t->off[id];
}

uint32_t tl_strtab_count(const struct tl_strtab *t)
{
	return t ? t->count : 0;
}

size_t tl_strtab_memory(const struct tl_strtab *t)
{
	if (!t)
		return 0;
	return sizeof(*t) + t->arena_cap + t->off_cap * sizeof(*t->off) +
	       t->n_slots * sizeof(*t->slots);
}

static int grow_slots(struct tl_strtab *t)
{
	uint32_t n = t->n_slots * 2;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (uint32_t id = 0; id < t->count; id++) {
		size_t len = t->off[id + 1] - t->off[id] - 1;
		uint32_t h = hash_bytes(t->arena + t->off[id], len) & (n - 1);

		while (s[h])
			h = (h + 1) & (n - 1);
		s[h] = id + 1;
	}
	free(t->slots);
	t->slots = s;
	t->n_slots = n;
	return 0;
}

int64_t tl_strtab_intern(struct tl_strtab *t, const char *s, size_t len)
{
	uint32_t h, id;

	if (len > TL_STRTAB_STR_MAX || memchr(s, '\0', len))
		return -E2BIG;
	h = hash_bytes(s, len) & (t->n_slots - 1);
	while ((id = t->slots[h])) {
		id--;
		if (t->off[id + 1] - t->off[id] - 1 == len && memcmp(t->arena + t->off[id], s, len) == 0)
			return id;
		h = (h + 1) & (t->n_slots - 1);
	}
	if (t->count >= TL_STRTAB_MAX_STRINGS || t->arena_len + len + 1 > TL_STRTAB_MAX_BYTES)
		return -E2BIG;
	if (t->arena_len + len + 1 > t->arena_cap) {
		size_t ncap = t->arena_cap ? t->arena_cap : 256;
		char *n;

		while (ncap < t->arena_len + len + 1)
			ncap *= 2;
		n = realloc(t->arena, ncap);
		if (!n)
			return -ENOMEM;
		t->arena = n;
		t->arena_cap = ncap;
	}
	if (t->count + 2 > t->off_cap) {
		uint32_t *n = realloc(t->off, sizeof(*n) * t->off_cap * 2);

		if (!n)
			return -ENOMEM;
		t->off = n;
		t->off_cap *= 2;
	}
	memcpy(t->arena + t->arena_len, s, len);
	t->arena[t->arena_len + len] = '\0';
	t->arena_len += len + 1;
	id = t->count++;
	t->off[t->count] = (uint32_t)t->arena_len;
	t->slots[h] = id + 1;
	if (t->count * 2 > t->n_slots && grow_slots(t) < 0) {
		/* Still findable: the table is at most full, never over. Roll
		 * back so the invariant (half full) holds. */
		t->slots[h] = 0;
		t->count--;
		t->arena_len -= len + 1;
		return -ENOMEM;
	}
	return id;
}
