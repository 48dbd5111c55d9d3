/*
 * gridfs_read: a span of a GridFS file read as a db_pool job reads it (a
 * response's windows in body_gridfs, the spool's fills): with the URI's read
 * preference, once more after a retryable error while half the deadline is
 * left (read_retry.h), and from the primary when the member read lacks chunks
 * or holds ones that contradict the entry (a secondary that has not caught up
 * with the file yet). Only what the primary says is a data error.
 */
#ifndef MUSICD_GRIDFS_READ_H
#define MUSICD_GRIDFS_READ_H

#include <event2/buffer.h>

#include "db/db_pool.h"
#include "db/gridfs_entry.h"

/*
 * Appends the bytes of span to out (gridfs_store_read) for job, run on
 * thread: job->status and job->detail say how it went; out is left as it
 * was unless the status is LOOKUP_FOUND.
 */
void gridfs_read_span(struct db_job *job, const struct db_thread *thread,
		      const struct gridfs_entry *file, const struct gridfs_span *span,
		      struct evbuffer *out);

#endif
