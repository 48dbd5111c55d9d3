/*
 * lru: an intrusive hash table that also keeps its entries in least-recently
 * used order, and the locked shards both caches are made of. A table is not
 * locked itself: each shard wraps one in its own mutex, so workers looking up
 * different keys rarely meet. Entries embed a struct lru_node and are owned by
 * the cache that embeds them.
 */
#ifndef MUSICD_LRU_H
#define MUSICD_LRU_H

#include <pthread.h>
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

/* What a cache counts; summed over its shards. */
struct cache_stats {
	uint64_t hits, misses, evictions, entries;
};

/* One independently locked part of a cache: a table, its bound and its counters. */
struct lru_shard {
	pthread_mutex_t lock;
	struct lru_table table; /* guarded by lock, as are the rest */
	size_t max_entries;
	struct cache_stats stats;
};

/* Splits max_entries (rounded up) over count shards; -1 if out of memory. */
int lru_shards_init(struct lru_shard *shards, size_t count, size_t max_entries);
/* Removes every entry, passing each to release, then frees the shards' tables. */
void lru_shards_destroy(struct lru_shard *shards, size_t count,
			void (*release)(struct lru_shard *shard, struct lru_node *node));
/* The shard a hash belongs to. */
struct lru_shard *lru_shard_for(struct lru_shard *shards, size_t count, uint64_t hash);
/* The counters summed over the shards, with the current entry count. */
struct cache_stats lru_shards_stats(struct lru_shard *shards, size_t count);

#define lru_entry(node_pointer, type, member)                                                     \
	((type *)((char *)(node_pointer) - offsetof(type, member)))

#endif
