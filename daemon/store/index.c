/* SPDX-License-Identifier: Apache-2.0 */
/* Open timelines by UID (index.h). */
#include <stdint.h>
#include <string.h>

#include "index.h"

/* Eight bytes per step: every event's uid is hashed (a byte per step
 * costs 5 % of the store's instructions per event). */
static size_t hash_uid(const char *s)
{
	const uint64_t m = 0xff51afd7ed558ccdull;
	size_t n = strlen(s);
	uint64_t h = n, w;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * m;
		h ^= h >> 32;
	}
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * m;
	h ^= h >> 29;
	return (size_t)(h % INDEX_BUCKETS);
}

struct index_node *index_find(struct store_index *x, const char *uid)
{
	if (x->last && strcmp(x->last->uid, uid) == 0)
		return x->last;
	for (struct index_node *n = x->buckets[hash_uid(uid)]; n; n = n->next) {
		if (strcmp(n->uid, uid) == 0) {
			x->last = n;
			return n;
		}
	}
	return NULL;
}

void index_add(struct store_index *x, struct index_node *n)
{
	size_t b = hash_uid(n->uid);

	n->next = x->buckets[b];
	x->buckets[b] = n;
	x->n++;
}

void index_remove(struct store_index *x, struct index_node *n)
{
	if (x->last == n)
		x->last = NULL;
	for (struct index_node **pp = &x->buckets[hash_uid(n->uid)]; *pp; pp = &(*pp)->next) {
		if (*pp == n) {
			*pp = n->next;
			x->n--;
			return;
		}
	}
}

size_t index_bucket(const struct index_node *n)
{
	return hash_uid(n->uid);
}

struct index_node *index_from(const struct store_index *x, size_t b)
{
	for (; b < INDEX_BUCKETS; b++)
		if (x->buckets[b])
			return x->buckets[b];
	return NULL;
}

struct index_node *index_next(const struct store_index *x, const struct index_node *n)
{
	if (!n)
		return index_from(x, 0);
	if (n->next)
		return n->next;
	return index_from(x, hash_uid(n->uid) + 1);
}
