/*
 * lru: chained hashing (FNV-1a) plus a doubly linked recency list. All
 * operations are O(1) but lru_find, which walks one bucket. The shards'
 * bound is one atomic count taken by compare-and-swap before an entry goes
 * in (lru_shard_take_slot) and given back by lru_remove; the insert that
 * keeps it, evicting here or elsewhere, is written once, for both caches
 * (lru_shard_insert_bounded).
 */
#include "base/lru.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

uint64_t lru_hash(const char *key)
{
	uint64_t hash = 14695981039346656037ULL;
	for (const unsigned char *c = (const unsigned char *)key; *c; c++) {
		hash ^= *c;
		hash *= 1099511628211ULL;
	}
	return hash;
}

int lru_init(struct lru_table *table, size_t bucket_count)
{
	memset(table, 0, sizeof(*table));
	/* A power of two: a bucket is then a mask away, not a division (on every find). */
	table->bucket_count = 1;
	while (table->bucket_count < bucket_count)
		table->bucket_count *= 2;
	table->buckets = calloc(table->bucket_count, sizeof(*table->buckets));
	return table->buckets ? 0 : -1;
}

void lru_destroy(struct lru_table *table)
{
	free(table->buckets);
	memset(table, 0, sizeof(*table));
}

static struct lru_node **bucket_of(struct lru_table *table, uint64_t hash)
{
	/* The top bits: shards are chosen by the low ones. */
	return &table->buckets[(hash >> 32) & (table->bucket_count - 1)];
}

struct lru_node *lru_find(struct lru_table *table, const char *key, uint64_t hash)
{
	for (struct lru_node *node = *bucket_of(table, hash); node; node = node->hash_next) {
		if (node->hash == hash && strcmp(node->key, key) == 0)
			return node;
	}
	return NULL;
}

static void link_newest(struct lru_table *table, struct lru_node *node)
{
	node->newer = NULL;
	node->older = table->newest;
	if (table->newest)
		table->newest->newer = node;
	table->newest = node;
	if (table->oldest == NULL)
		table->oldest = node;
}

static void unlink_order(struct lru_table *table, struct lru_node *node)
{
	if (node->newer)
		node->newer->older = node->older;
	else
		table->newest = node->older;
	if (node->older)
		node->older->newer = node->newer;
	else
		table->oldest = node->newer;
	node->older = node->newer = NULL;
}

void lru_insert(struct lru_table *table, struct lru_node *node)
{
	struct lru_node **bucket = bucket_of(table, node->hash);
	node->hash_next = *bucket;
	*bucket = node;
	link_newest(table, node);
	table->count++;
}

void lru_touch(struct lru_table *table, struct lru_node *node)
{
	if (table->newest == node)
		return;
	unlink_order(table, node);
	link_newest(table, node);
}

void lru_remove(struct lru_table *table, struct lru_node *node)
{
	struct lru_node **link = bucket_of(table, node->hash);
	while (*link && *link != node)
		link = &(*link)->hash_next;
	if (*link)
		*link = node->hash_next;
	node->hash_next = NULL;
	unlink_order(table, node);
	table->count--;
	if (table->shared_count != NULL)
		(*table->shared_count)--;
}

struct lru_node *lru_oldest(const struct lru_table *table)
{
	return table->oldest;
}

int lru_shards_init(struct lru_shard *shards, size_t count, size_t max_entries,
		    _Atomic size_t *entries)
{
	/* Buckets for twice a fair share: a shard may hold more than that, in longer chains. */
	size_t buckets = 2 * ((max_entries + count - 1) / count);
	*entries = 0;
	for (size_t i = 0; i < count; i++) {
		pthread_mutex_init(&shards[i].lock, NULL);
		shards[i].max_entries = max_entries;
		memset(&shards[i].stats, 0, sizeof(shards[i].stats));
		if (lru_init(&shards[i].table, buckets) < 0)
			return -1;
		shards[i].table.shared_count = entries;
	}
	return 0;
}

int lru_shard_take_slot(struct lru_shard *shard)
{
	_Atomic size_t *taken = shard->table.shared_count;
	size_t seen = *taken;
	while (seen < shard->max_entries) {
		if (atomic_compare_exchange_weak(taken, &seen, seen + 1))
			return 1;
	}
	return 0;
}

void lru_shards_destroy(struct lru_shard *shards, size_t count,
			void (*release)(struct lru_shard *shard, struct lru_node *node))
{
	for (size_t i = 0; i < count; i++) {
		struct lru_shard *shard = &shards[i];
		struct lru_node *node;
		while (shard->table.buckets && (node = lru_oldest(&shard->table)) != NULL)
			release(shard, node);
		lru_destroy(&shard->table);
		pthread_mutex_destroy(&shard->lock);
	}
}

struct lru_shard *lru_shard_for(struct lru_shard *shards, size_t count, uint64_t hash)
{
	return &shards[hash & (count - 1)];
}

struct cache_stats lru_shards_stats(struct lru_shard *shards, size_t count)
{
	struct cache_stats total = {0};
	for (size_t i = 0; i < count; i++) {
		pthread_mutex_lock(&shards[i].lock);
		total.hits += shards[i].stats.hits;
		total.misses += shards[i].stats.misses;
		total.evictions += shards[i].stats.evictions;
		total.entries += shards[i].table.count;
		pthread_mutex_unlock(&shards[i].lock);
	}
	return total;
}

int lru_shards_evict_elsewhere(struct lru_shard *shards, size_t count, struct lru_shard *self,
			       void (*release)(struct lru_shard *shard, struct lru_node *node))
{
	for (size_t i = 0; i < count; i++) {
		struct lru_shard *other = &shards[i];
		if (other == self || pthread_mutex_trylock(&other->lock) != 0)
			continue;
		struct lru_node *oldest = lru_oldest(&other->table);
		if (oldest != NULL) {
			release(other, oldest);
			other->stats.evictions++;
		}
		pthread_mutex_unlock(&other->lock);
		if (oldest != NULL)
			return 1;
	}
	return 0;
}

int lru_shard_insert_bounded(struct lru_shard *shards, size_t count, struct lru_shard *shard,
			     struct lru_node *node,
			     void (*release)(struct lru_shard *shard, struct lru_node *node))
{
	struct lru_node *old = lru_find(&shard->table, node->key, node->hash);
	if (old != NULL)
		release(shard, old);
	/*
	 * A slot is taken before the entry goes in, so shards inserting at once
	 * never pass the bound together; a shard that finds the cache full frees
	 * a slot and tries again, and another shard may take that slot first.
	 */
	while (!lru_shard_take_slot(shard)) {
		if (shard->table.count > 0) {
			release(shard, lru_oldest(&shard->table));
			shard->stats.evictions++;
		} else if (!lru_shards_evict_elsewhere(shards, count, shard, release)) {
			shard->stats.evictions++;
			return 0;
		}
	}
	lru_insert(&shard->table, node);
	return 1;
}
