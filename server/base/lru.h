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
	_Atomic size_t *shared_count; /* when set: slots taken in the whole cache (see below) */
};

/* The hash every user of a table must compute keys with. */
uint64_t lru_hash(const char *key);

/* Allocates bucket_count buckets (at least 1, rounded up to a power of two); -1 if out of memory. */
int lru_init(struct lru_table *table, size_t bucket_count);
/* Frees the buckets only; entries are the caller's to free first. */
void lru_destroy(struct lru_table *table);

/* The entry with key, or NULL. Does not change the order. */
struct lru_node *lru_find(struct lru_table *table, const char *key, uint64_t hash);
/* Adds node (its key and hash set) as the newest entry; in a shard, lru_shard_insert_bounded. */
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

/*
 * One independently locked part of a cache: a table and its counters. The
 * bound is on the whole cache (entries counts every shard's), so keys that
 * hash unevenly do not shrink it; a shard evicts its own oldest entries
 * when the cache is full.
 */
struct lru_shard {
	pthread_mutex_t lock;
	struct lru_table table; /* guarded by lock, as are stats */
	size_t max_entries;	/* of the whole cache */
	struct cache_stats stats;
};

/* count shards bounded together by max_entries, counted in *entries; -1 if out of memory. */
int lru_shards_init(struct lru_shard *shards, size_t count, size_t max_entries,
		    _Atomic size_t *entries);
/*
 * Takes a slot for one new entry in the whole cache (lock held): 1 when
 * taken, 0 when the cache is full; lru_remove gives a slot back. The bound is
 * never passed, even by shards taking slots at the same moment. The step of
 * lru_shard_insert_bounded that keeps the bound.
 */
int lru_shard_take_slot(struct lru_shard *shard);

/*
 * For a full cache whose shard `self` (lock held) is empty: passes the oldest
 * entry of another shard to release (which must lru_remove it), counting an
 * eviction there. Other shards are only try-locked, so two shards doing this
 * at once cannot deadlock. Returns 0 if no entry could be evicted.
 */
int lru_shards_evict_elsewhere(struct lru_shard *shards, size_t count, struct lru_shard *self,
			       void (*release)(struct lru_shard *shard, struct lru_node *node));
/*
 * The one bounded insert both caches use. Adds node (key and hash set) as the
 * newest entry of shard (lock held), after passing any entry with the same key
 * to release, and making room in a full cache: this shard's oldest entries
 * first, then, once it is empty, another shard's (lru_shards_evict_elsewhere);
 * each entry that makes room counts as an eviction where it was. release must
 * lru_remove the node it is given. Returns 1 when inserted; 0 when the cache
 * was full, this shard empty and every other shard busy that instant: node is
 * not inserted (it stays the caller's) and counts as this shard's eviction.
 */
int lru_shard_insert_bounded(struct lru_shard *shards, size_t count, struct lru_shard *shard,
			     struct lru_node *node,
			     void (*release)(struct lru_shard *shard, struct lru_node *node));
/* Removes every entry, passing each to release, then frees the shards' tables. */
void lru_shards_destroy(struct lru_shard *shards, size_t count,
			void (*release)(struct lru_shard *shard, struct lru_node *node));
/* The shard a hash belongs to; count is a power of two (both caches' shard counts are). */
struct lru_shard *lru_shard_for(struct lru_shard *shards, size_t count, uint64_t hash);
/* The counters summed over the shards, with the current entry count. */
struct cache_stats lru_shards_stats(struct lru_shard *shards, size_t count);

#define lru_entry(node_pointer, type, member)                                                     \
	((type *)((char *)(node_pointer) - offsetof(type, member)))

#endif
