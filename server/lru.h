/*
 * lru: an intrusive hash table that also keeps its entries in least-recently
 * used order; the building block of both caches' shards. Not locked: each
 * cache shard wraps one table in its own mutex. Entries embed a struct
 * lru_node and are owned by the cache that embeds them.
 */
#ifndef MUSICD_LRU_H
#define MUSICD_LRU_H

#include <stddef.h>
#include <stdint.h>

struct lru_node {
	struct lru_node *hash_next;
	struct lru_node *older, *newer;
	uint64_t hash;
	const char *key; /* owned by the entry */
};

struct lru_table {
	struct lru_node **buckets;
	size_t bucket_count;
	struct lru_node *newest, *oldest;
	size_t count;
};

/* The hash every user of a table must compute keys with. */
uint64_t lru_hash(const char *key);

/* Allocates bucket_count buckets (at least 1); -1 if out of memory. */
int lru_init(struct lru_table *table, size_t bucket_count);
/* Frees the buckets only; entries are the caller's to free first. */
void lru_destroy(struct lru_table *table);

/* The entry with key, or NULL. Does not change the order. */
struct lru_node *lru_find(struct lru_table *table, const char *key, uint64_t hash);
/* Adds node (its key and hash set) as the newest entry. */
void lru_insert(struct lru_table *table, struct lru_node *node);
/* Makes node the newest entry. */
void lru_touch(struct lru_table *table, struct lru_node *node);
/* Unlinks node. */
void lru_remove(struct lru_table *table, struct lru_node *node);
/* The least recently used entry, or NULL. */
struct lru_node *lru_oldest(const struct lru_table *table);

#define lru_entry(node_pointer, type, member)                                                     \
	((type *)((char *)(node_pointer) - offsetof(type, member)))

#endif
