/*
 * gridfs_store: the driver calls that read GridFS (libmongoc), made on the
 * lookup pool's threads only, never on a worker's loop. It reads a file's
 * fs.files entry into a gridfs_entry, and the chunks of a span into an
 * evbuffer, checking each chunk against the entry: a chunk that is missing,
 * out of order or not exactly the length the entry implies is a data error
 * (LOOKUP_BAD_DATA), never bytes passed on. Its calls run as db_pool jobs
 * (find_track, gridfs_stream's reads, the spool's fills).
 */
#ifndef MUSICD_GRIDFS_STORE_H
#define MUSICD_GRIDFS_STORE_H

#include <bson/bson.h>
#include <event2/buffer.h>
#include <mongoc/mongoc.h>

#include "db/gridfs_entry.h"
#include "db/lookup_status.h"


/*
 * Sets glibc's mmap threshold once, before the lookup threads start. A span's
 * reply (up to --gridfs-window bytes of chunks) passes through libmongoc on a
 * lookup thread as two transient buffers of its size (the wire message, then
 * the reply document the cursor holds) before take_chunk copies the bytes
 * into the response's evbuffer. With glibc's dynamic threshold the first such
 * free raises the threshold above them; from then on they are carved from the
 * thread's arena and their pages stay resident after the read, 2-3 windows
 * per lookup thread for good (scripts/benchmarks/bench g and docs/BENCHMARKS.md
 * "GridFS"). A fixed threshold between the evbuffer chains (pooled in the
 * arenas, reused) and a window's reply gives those buffers back after each
 * read, for an mmap/munmap pair and its page faults per buffer.
 */
void gridfs_store_tune_allocator(void);

/* Adds the fs.files fields musicd reads to a find's projection. */
void gridfs_store_project(bson_t *projection);

/*
 * Reads an fs.files entry (with its ObjectId _id) into file: LOOKUP_FOUND,
 * or LOOKUP_BAD_DATA with why in detail.
 */
enum lookup_status gridfs_store_parse_file(const bson_t *entry, struct gridfs_entry *file,
					   char *detail, size_t detail_size);

/*
 * Finds bucket's fs.files entry id, read with read_prefs (NULL: the URI's):
 * LOOKUP_FOUND with file filled, or another status with why in detail. A
 * failed read is LOOKUP_UNAVAILABLE (503) when read_retry.h would retry it.
 */
enum lookup_status gridfs_store_find_file(mongoc_client_t *client, const char *database,
					  const char *bucket, const bson_oid_t *id,
					  const mongoc_read_prefs_t *read_prefs,
					  struct gridfs_entry *file, char *detail, size_t detail_size);

/*
 * Appends the bytes [span->first, span->last] of file to out, read from
 * span's chunks with one find sorted by n, with read_prefs (NULL: the URI's):
 * LOOKUP_FOUND, or another status (detail says why) with out left as it was.
 * gridfs_read.h reads a span as a pool job does: with its retries.
 */
enum lookup_status gridfs_store_read(mongoc_client_t *client, const char *database,
				     const char *bucket, const struct gridfs_entry *file,
				     const struct gridfs_span *span,
				     const mongoc_read_prefs_t *read_prefs, struct evbuffer *out,
				     char *detail, size_t detail_size);

#endif
