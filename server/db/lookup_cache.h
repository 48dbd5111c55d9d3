/*
 * lookup_cache: mid -> path (and the document's ETag, with --etag-field), or
 * mid -> the GridFS file (its fs.files entry's fields: GridFS files never
 * change under their _id), shared by every worker, so that a warm request
 * makes no database round trip. Bounded in entries (a full cache evicts the
 * least recently used entry of the new entry's shard, or of another shard
 * when that one is empty), entries live for a TTL, and "no such document" is
 * remembered too, for a shorter TTL. Database errors are never cached. Split
 * into independently locked shards so workers do not contend on one lock.
 *
 * Together with file_cache (path -> size, mtime, ETag, type and the open
 * file) it answers mid -> everything a response needs.
 */
#ifndef MUSICD_LOOKUP_CACHE_H
#define MUSICD_LOOKUP_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "db/gridfs_entry.h"
#include "base/lru.h"
#include "http/etag.h"

struct lookup_cache;

enum lookup_cache_result {
	LOOKUP_CACHE_MISS,
	LOOKUP_CACHE_HIT,      /* a path on disk */
	LOOKUP_CACHE_NEGATIVE, /* no such document */
	LOOKUP_CACHE_GRIDFS,   /* a GridFS file: lookup_cache_get_track only */
};

/* max_entries 0 or ttl_seconds 0 disables the cache (every call misses). */
struct lookup_cache *lookup_cache_new(size_t max_entries, unsigned ttl_seconds,
				      unsigned negative_ttl_seconds);
void lookup_cache_free(struct lookup_cache *cache);

/*
 * Remembers mid -> path (path NULL: no such document) until its TTL passes. A
 * path of PATH_MAX bytes or more names no file that can be opened and is not
 * kept: what an entry holds is bounded (find_track.c refuses such a path
 * first; this is the cache's own promise).
 */
void lookup_cache_put(struct lookup_cache *cache, const char *mid, const char *path);

/* As lookup_cache_put, with the document's ETag (quoted; NULL or "": none) kept beside the path. */
void lookup_cache_put_tagged(struct lookup_cache *cache, const char *mid, const char *path,
			     const char *etag);

/*
 * Remembers mid -> file (a GridFS track) until the TTL of found paths passes;
 * a file whose texts do not fit struct gridfs_entry is not kept.
 */
void lookup_cache_put_gridfs(struct lookup_cache *cache, const char *mid,
			     const struct gridfs_entry *file);

/*
 * HIT copies the path into path_out (a path that does not fit counts as a
 * miss) and, when etag_out is not NULL, the document's ETag ("" for none).
 * A GridFS entry answers LOOKUP_CACHE_GRIDFS with its file copied into
 * gridfs_out (path_out and etag_out untouched), or MISS when gridfs_out is
 * NULL. NEGATIVE: no such document.
 */
enum lookup_cache_result lookup_cache_get_track(struct lookup_cache *cache, const char *mid,
						char *path_out, size_t path_size,
						char etag_out[ETAG_MAX],
						struct gridfs_entry *gridfs_out);

/*
 * New TTLs (a reload), from any thread: they count from each entry's put, so
 * they apply to the entries already kept too. ttl_seconds 0 disables the cache.
 */
void lookup_cache_set_ttl(struct lookup_cache *cache, unsigned ttl_seconds,
			  unsigned negative_ttl_seconds);

/* Sums over the shards. */
struct cache_stats lookup_cache_stats(struct lookup_cache *cache);

#endif
