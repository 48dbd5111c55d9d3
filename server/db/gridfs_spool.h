/*
 * gridfs_spool: a local copy of GridFS files (--gridfs-cache-dir, at most
 * --gridfs-cache-size bytes), so that a file read from the database once is
 * later sent from disk with sendfile like any file. A copy is written under a
 * temporary name by a lookup thread (the whole file, span by span), fsynced,
 * checked against its length and renamed to "<fs.files _id>-<length hex>":
 * a name is a complete copy, and GridFS files never change under their _id.
 * Concurrent first requests for one file wait for the same fill. The least
 * recently used copies are removed to stay within the size (a response still
 * sending one keeps its open file). Copies found at start-up are kept.
 *
 * Shared by every worker and the lookup threads; internally locked.
 */
#ifndef MUSICD_GRIDFS_SPOOL_H
#define MUSICD_GRIDFS_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "db/gridfs_entry.h"
#include "db/db_pool.h"

struct gridfs_spool;

/*
 * What gridfs_spool_open checks of dir before it reads it, for -t: dir exists,
 * is a directory, and the real user may create files in it. user names that
 * user in the message (NULL: none named). 0, or -1 with a message.
 */
int gridfs_spool_check(const char *dir, const char *user, char *error, size_t error_size);

/*
 * Opens (creates nothing) the directory, as gridfs_spool_check checks it,
 * takes in the copies there and removes unfinished ones; fills run on pool's
 * threads. NULL with a message.
 */
struct gridfs_spool *gridfs_spool_open(const char *dir, uint64_t max_bytes,
				       struct db_pool *pool, unsigned max_fills, char *error,
				       size_t error_size);

/* After every fill finished (the pool quiesced). */
void gridfs_spool_free(struct gridfs_spool *spool);

/* An open descriptor of file's complete copy (marked recently used), or -1. */
int gridfs_spool_open_copy(struct gridfs_spool *spool, const struct gridfs_entry *file);

/*
 * Hands waiter (its delivery made by the caller, exchange_wait) to the fill
 * of file's copy, starting one if none runs; only its delivery, status and
 * detail are used. The waiter is delivered exactly once, soon if no
 * copy can be made: status LOOKUP_FOUND when the copy is complete, anything
 * else (detail says why) when there is none (too large for the spool, too
 * many fills, a database or disk error).
 */
void gridfs_spool_wait(struct gridfs_spool *spool, const struct gridfs_entry *file,
		       struct db_job *waiter);

#endif
