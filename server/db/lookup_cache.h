/*
 * lookup_cache: mid -> what the track's document yields (track_document.h:
 * its file's path or GridFS entry, and the fields an answer takes from it),
 * or "no such document", shared by every worker, so that a warm request makes
 * no database round trip. Bounded in entries (a full cache evicts the least
 * recently used entry of the new entry's shard, or of another shard when that
 * one is empty), entries live for a TTL, and "no such document" is remembered
 * too, for a shorter TTL. Database errors are never cached (GridFS files
 * never change under their _id, so their entries are as good as a path's).
 * Split into independently locked shards so workers do not contend on one
 * lock.
 *
 * Together with file_cache (path -> size, mtime, ETag, type and the open
 * file) it answers mid -> everything a response needs.
 */
#ifndef MUSICD_LOOKUP_CACHE_H
#define MUSICD_LOOKUP_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/lru.h"
#include "db/lookup_status.h"
#include "db/track_document.h"

struct lookup_cache;

/* max_entries 0 or ttl_seconds 0 disables the cache (every call misses). */
struct lookup_cache *lookup_cache_new(size_t max_entries, unsigned ttl_seconds,
				      unsigned negative_ttl_seconds);
void lookup_cache_free(struct lookup_cache *cache);

/*
 * Remembers what a lookup of mid found, until its TTL passes: a document
 * (found LOOKUP_FOUND or LOOKUP_GRIDFS, copied: packed, its texts by their
 * length), or no such document (LOOKUP_NOT_FOUND: document is not read). Any
 * other status is an error, never kept; so is a document whose texts are
 * not terminated within their arrays.
 */
void lookup_cache_put(struct lookup_cache *cache, const char *mid, enum lookup_status found,
		      const struct track_document *document);

/*
 * True when mid is remembered: *found is what was found, and the document is
 * copied into document for LOOKUP_FOUND and LOOKUP_GRIDFS.
 */
bool lookup_cache_get(struct lookup_cache *cache, const char *mid, enum lookup_status *found,
		      struct track_document *document);

/*
 * New TTLs (a reload), from any thread: they count from each entry's put, so
 * they apply to the entries already kept too. ttl_seconds 0 disables the cache.
 */
void lookup_cache_set_ttl(struct lookup_cache *cache, unsigned ttl_seconds,
			  unsigned negative_ttl_seconds);

/* Sums over the shards. */
struct cache_stats lookup_cache_stats(struct lookup_cache *cache);

#endif
