/*
 * lookup_cache: LOOKUP_CACHE_SHARDS independent LRU tables, chosen by the
 * key's hash. Entries are stored by value (mid, what was found, and the
 * document packed in the entry's own allocation), so a hit copies it out
 * under the shard's lock and holds nothing after.
 */
#include "db/lookup_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/lru.h"
#include "http/route.h"

#define LOOKUP_CACHE_SHARDS 64
_Static_assert((LOOKUP_CACHE_SHARDS & (LOOKUP_CACHE_SHARDS - 1)) == 0, "lru_shard_for takes a power of two");

struct lookup_entry {
	struct lru_node node;
	char mid[OBJECTID_HEX_LENGTH + 1];
	enum lookup_status found; /* LOOKUP_FOUND, LOOKUP_GRIDFS, or LOOKUP_NOT_FOUND: no document */
	int64_t stored_at;	  /* clock_coarse_seconds() of the put; counts for the TTL in force now */
	unsigned char document[]; /* packed (track_document_pack): one block read by a hit */
};

struct lookup_cache {
	/* Read at each get and put, so a reload's new TTLs apply to entries already kept. */
	atomic_uint ttl, negative_ttl;
	int enabled;
	_Atomic size_t entries; /* in every shard */
	struct lru_shard shards[LOOKUP_CACHE_SHARDS];
};

struct lookup_cache *lookup_cache_new(size_t max_entries, unsigned ttl_seconds,
				      unsigned negative_ttl_seconds)
{
	struct lookup_cache *cache = calloc(1, sizeof(*cache));
	if (cache == NULL)
		return NULL;
	atomic_init(&cache->ttl, ttl_seconds);
	atomic_init(&cache->negative_ttl, negative_ttl_seconds);
	cache->enabled = max_entries > 0;
	if (lru_shards_init(cache->shards, LOOKUP_CACHE_SHARDS, max_entries, &cache->entries) < 0) {
		lookup_cache_free(cache);
		return NULL;
	}
	return cache;
}

/* Removes an entry from its shard and frees it. Shard lock held (or the cache unshared). */
static void remove_entry(struct lru_shard *shard, struct lru_node *node)
{
	lru_remove(&shard->table, node);
	free(lru_entry(node, struct lookup_entry, node));
}

void lookup_cache_free(struct lookup_cache *cache)
{
	if (cache == NULL)
		return;
	lru_shards_destroy(cache->shards, LOOKUP_CACHE_SHARDS, remove_entry);
	free(cache);
}

static struct lru_shard *shard_for(struct lookup_cache *cache, uint64_t hash)
{
	return lru_shard_for(cache->shards, LOOKUP_CACHE_SHARDS, hash);
}

bool lookup_cache_get(struct lookup_cache *cache, const char *mid, enum lookup_status *found,
		      struct track_document *document)
{
	unsigned ttl = atomic_load_explicit(&cache->ttl, memory_order_relaxed);
	unsigned negative_ttl = atomic_load_explicit(&cache->negative_ttl, memory_order_relaxed);
	if (!cache->enabled || ttl == 0)
		return false;
	uint64_t hash = lru_hash(mid);
	struct lru_shard *shard = shard_for(cache, hash);
	bool hit = false;

	pthread_mutex_lock(&shard->lock);
	struct lru_node *node = lru_find(&shard->table, mid, hash);
	if (node != NULL) {
		struct lookup_entry *entry = lru_entry(node, struct lookup_entry, node);
		int64_t lifetime = entry->found != LOOKUP_NOT_FOUND ? ttl : negative_ttl;
		if (entry->stored_at + lifetime <= clock_coarse_seconds()) {
			remove_entry(shard, node);
		} else {
			hit = true;
			*found = entry->found;
			if (entry->found != LOOKUP_NOT_FOUND) {
				track_document_unpack(entry->document, document);
				lru_touch(&shard->table, node);
			}
		}
	}
	if (hit)
		shard->stats.hits++;
	else
		shard->stats.misses++;
	pthread_mutex_unlock(&shard->lock);
	return hit;
}

/* Whether an entry of this kind (negative or not) would be kept at all now. */
static int keeps(struct lookup_cache *cache, int negative)
{
	return cache->enabled && atomic_load_explicit(&cache->ttl, memory_order_relaxed) > 0 &&
	       (!negative || atomic_load_explicit(&cache->negative_ttl, memory_order_relaxed) > 0);
}

/* Adds entry (its values set) under mid, replacing mid's entry; the cache owns it after. */
static void insert(struct lookup_cache *cache, const char *mid, struct lookup_entry *entry)
{
	snprintf(entry->mid, sizeof(entry->mid), "%s", mid);
	entry->node.key = entry->mid;
	entry->node.hash = lru_hash(entry->mid);
	entry->stored_at = clock_coarse_seconds();

	struct lru_shard *shard = shard_for(cache, entry->node.hash);
	pthread_mutex_lock(&shard->lock);
	int kept = lru_shard_insert_bounded(cache->shards, LOOKUP_CACHE_SHARDS, shard, &entry->node,
					    remove_entry);
	pthread_mutex_unlock(&shard->lock);
	if (!kept)
		free(entry); /* every other shard busy this instant: this answer is not kept */
}

void lookup_cache_put(struct lookup_cache *cache, const char *mid, enum lookup_status found,
		      const struct track_document *document)
{
	size_t size = 0;
	if (found == LOOKUP_FOUND || found == LOOKUP_GRIDFS) {
		size = track_document_packed_size(document);
		if (size == 0)
			return; /* not a document track_document_read made: not kept */
	} else if (found != LOOKUP_NOT_FOUND) {
		return; /* an error: asked again next time */
	}
	if (!keeps(cache, found == LOOKUP_NOT_FOUND))
		return;
	struct lookup_entry *entry = calloc(1, sizeof(*entry) + size);
	if (entry == NULL)
		return;
	entry->found = found;
	if (size > 0)
		track_document_pack(document, entry->document);
	insert(cache, mid, entry);
}

struct cache_stats lookup_cache_stats(struct lookup_cache *cache)
{
	return lru_shards_stats(cache->shards, LOOKUP_CACHE_SHARDS);
}

void lookup_cache_set_ttl(struct lookup_cache *cache, unsigned ttl_seconds,
			  unsigned negative_ttl_seconds)
{
	atomic_store_explicit(&cache->ttl, ttl_seconds, memory_order_relaxed);
	atomic_store_explicit(&cache->negative_ttl, negative_ttl_seconds, memory_order_relaxed);
}
