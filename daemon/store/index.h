/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The open timelines of a store by Pod UID: a chained hash table of nodes
 * embedded in what they index. Events come in bursts from one Pod (a ring
 * drain): the node found last is tried first. */
#include <stddef.h>

#define INDEX_BUCKETS 1024

struct index_node {
	struct index_node *next;
	const char *uid; /* the indexed object's, valid while it is indexed */
};

struct store_index {
	struct index_node *buckets[INDEX_BUCKETS];
	struct index_node *last; /* found last */
	size_t n;
};

struct index_node *index_find(struct store_index *x, const char *uid);
/* n->uid set; not indexed yet. */
void index_add(struct store_index *x, struct index_node *n);
void index_remove(struct store_index *x, struct index_node *n);
/* Iteration in bucket order: index_next(x, NULL) is the first node.
 * Removing the current node is allowed once its successor was taken. */
struct index_node *index_next(const struct store_index *x, const struct index_node *n);
/* The bucket of n, and the first node of bucket b or after (resuming a
 * walk where it stopped). */
size_t index_bucket(const struct index_node *n);
struct index_node *index_from(const struct store_index *x, size_t b);
