/*
 * lookup_cache: LOOKUP_CACHE_SHARDS independent LRU tables, chosen by the
 * key's hash. Entries are stored by value (mid, a copy of the path and of
 * the document's ETag, or of the GridFS file's fields), so a hit copies them
 * out under the shard's lock and holds nothing after.
 */
#include "db/lookup_cache.h"

#include <limits.h>
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

/*
 * A GridFS entry's file in one allocation, its two texts packed after the
 * numbers (each shorter than GRIDFS_TEXT_MAX, so the size is bounded), not
 * struct gridfs_entry's two fixed GRIDFS_TEXT_MAX arrays.
 */
struct cached_gridfs {
	char id[OBJECTID_HEX_LENGTH + 1];
	uint32_t chunk_size;
	uint64_t length;
	int64_t upload_date_ms;
	size_t filename_at; /* text holds the content type, then at filename_at the filename */
	char text[];
};

/* Exactly one of path and gridfs is set, or neither: a negative entry. */
struct lookup_entry {
	struct lru_node node;
	char mid[OBJECTID_HEX_LENGTH + 1];
	char *path;		       /* NULL for a negative or a GridFS entry; else in text */
	size_t path_length;
	char *etag;		       /* the document's ETag, in text; NULL for none (most libraries: no byte spent) */
	struct cached_gridfs *gridfs; /* NULL unless the track is in GridFS */
	int64_t stored_at;	       /* clock_coarse_seconds() of the put; counts for the TTL in force now */
	char text[]; /* path and etag: in the entry's own allocation, so a hit reads one block */
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

static void free_entry(struct lookup_entry *entry)
{
	free(entry->gridfs);
	free(entry);
}

/* Removes an entry from its shard and frees it. Shard lock held (or the cache unshared). */
static void remove_entry(struct lru_shard *shard, struct lru_node *node)
{
	lru_remove(&shard->table, node);
	free_entry(lru_entry(node, struct lookup_entry, node));
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

static void copy_gridfs_out(const struct cached_gridfs *cached, struct gridfs_entry *out)
{
	strcpy(out->id, cached->id);
	out->length = cached->length;
	out->chunk_size = cached->chunk_size;
	out->upload_date_ms = cached->upload_date_ms;
	/* Each shorter than its array: lookup_cache_put_gridfs keeps no other. */
	strcpy(out->content_type, cached->text);
	strcpy(out->filename, cached->text + cached->filename_at);
}

/* What a live entry answers, copied out (MISS: the caller has no room for it). Shard lock held. */
static enum lookup_cache_result answer(const struct lookup_entry *entry, char *path_out,
				       size_t path_size, char etag_out[ETAG_MAX],
				       struct gridfs_entry *gridfs_out)
{
	if (entry->gridfs != NULL) {
		if (gridfs_out == NULL)
			return LOOKUP_CACHE_MISS;
		copy_gridfs_out(entry->gridfs, gridfs_out);
		return LOOKUP_CACHE_GRIDFS;
	}
	if (entry->path == NULL)
		return LOOKUP_CACHE_NEGATIVE;
	if (entry->path_length >= path_size)
		return LOOKUP_CACHE_MISS;
	memcpy(path_out, entry->path, entry->path_length + 1);
	if (etag_out != NULL)
		strcpy(etag_out, entry->etag ? entry->etag : "");
	return LOOKUP_CACHE_HIT;
}

enum lookup_cache_result lookup_cache_get_track(struct lookup_cache *cache, const char *mid,
						char *path_out, size_t path_size,
						char etag_out[ETAG_MAX],
						struct gridfs_entry *gridfs_out)
{
	unsigned ttl = atomic_load_explicit(&cache->ttl, memory_order_relaxed);
	unsigned negative_ttl = atomic_load_explicit(&cache->negative_ttl, memory_order_relaxed);
	if (!cache->enabled || ttl == 0)
		return LOOKUP_CACHE_MISS;
	uint64_t hash = lru_hash(mid);
	struct lru_shard *shard = shard_for(cache, hash);
	enum lookup_cache_result result = LOOKUP_CACHE_MISS;

	pthread_mutex_lock(&shard->lock);
	struct lru_node *node = lru_find(&shard->table, mid, hash);
	if (node != NULL) {
		struct lookup_entry *entry = lru_entry(node, struct lookup_entry, node);
		int64_t lifetime = entry->path || entry->gridfs ? ttl : negative_ttl;
		if (entry->stored_at + lifetime <= clock_coarse_seconds()) {
			remove_entry(shard, node);
		} else {
			result = answer(entry, path_out, path_size, etag_out, gridfs_out);
			if (result == LOOKUP_CACHE_HIT || result == LOOKUP_CACHE_GRIDFS)
				lru_touch(&shard->table, node);
		}
	}
	if (result == LOOKUP_CACHE_MISS)
		shard->stats.misses++;
	else
		shard->stats.hits++;
	pthread_mutex_unlock(&shard->lock);
	return result;
}

void lookup_cache_put(struct lookup_cache *cache, const char *mid, const char *path)
{
	lookup_cache_put_tagged(cache, mid, path, NULL);
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
		free_entry(entry); /* every other shard busy this instant: this answer is not kept */
}

void lookup_cache_put_tagged(struct lookup_cache *cache, const char *mid, const char *path,
			     const char *etag)
{
	if (etag != NULL && strlen(etag) >= ETAG_MAX)
		return; /* not an ETag etag_from_field or etag_format made: not kept */
	if (path != NULL && strnlen(path, PATH_MAX) >= PATH_MAX)
		return; /* no file has such a path: not kept, whatever a document says */
	if (!keeps(cache, path == NULL))
		return;
	size_t path_size = path != NULL ? strlen(path) + 1 : 0;
	size_t etag_size = path != NULL && etag != NULL && etag[0] != '\0' ? strlen(etag) + 1 : 0;
	struct lookup_entry *entry = calloc(1, sizeof(*entry) + path_size + etag_size);
	if (entry == NULL)
		return;
	if (path_size > 0) {
		entry->path = memcpy(entry->text, path, path_size);
		entry->path_length = path_size - 1;
	}
	if (etag_size > 0)
		entry->etag = memcpy(entry->text + path_size, etag, etag_size);
	insert(cache, mid, entry);
}

void lookup_cache_put_gridfs(struct lookup_cache *cache, const char *mid,
			     const struct gridfs_entry *file)
{
	size_t type_length = strnlen(file->content_type, sizeof(file->content_type));
	size_t name_length = strnlen(file->filename, sizeof(file->filename));
	size_t id_length = strnlen(file->id, sizeof(file->id));
	if (type_length == sizeof(file->content_type) || name_length == sizeof(file->filename) ||
	    id_length == sizeof(file->id) || !keeps(cache, 0))
		return; /* unterminated: not a file gridfs_store read */
	struct lookup_entry *entry = calloc(1, sizeof(*entry));
	if (entry == NULL)
		return;
	struct cached_gridfs *cached =
		malloc(sizeof(*cached) + type_length + 1 + name_length + 1);
	if (cached == NULL) {
		free_entry(entry);
		return;
	}
	memcpy(cached->id, file->id, id_length + 1);
	cached->chunk_size = file->chunk_size;
	cached->length = file->length;
	cached->upload_date_ms = file->upload_date_ms;
	cached->filename_at = type_length + 1;
	memcpy(cached->text, file->content_type, type_length + 1);
	memcpy(cached->text + cached->filename_at, file->filename, name_length + 1);
	entry->gridfs = cached;
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
