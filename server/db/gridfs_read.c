/*
 * gridfs_read: the retries around one GridFS span read (gridfs_read.h says
 * which and why).
 */
#include "db/gridfs_read.h"

#include <mongoc/mongoc.h>
#include <stdbool.h>

#include "base/clock.h"
#include "base/log.h"
#include "db/gridfs_store.h"
#include "db/read_retry.h"

static void read_with(struct db_job *job, const struct db_thread *thread,
		      const struct gridfs_entry *file, const struct gridfs_span *span,
		      const mongoc_read_prefs_t *read_prefs, struct evbuffer *out)
{
	job->detail[0] = '\0';
	job->status = gridfs_store_read(thread->client, thread->database, thread->gridfs_bucket,
					file, span, read_prefs, out, job->detail,
					sizeof(job->detail));
}

static bool reads_primary(const struct db_thread *thread)
{
	return mongoc_read_prefs_get_mode(mongoc_collection_get_read_prefs(thread->tracks)) ==
	       MONGOC_READ_PRIMARY;
}

void gridfs_read_span(struct db_job *job, const struct db_thread *thread,
		      const struct gridfs_entry *file, const struct gridfs_span *span,
		      struct evbuffer *out)
{
	read_with(job, thread, file, span, NULL, out);
	/* Unavailable includes every retryable error (gridfs_store's cursor_status). */
	if (job->status == LOOKUP_UNAVAILABLE &&
	    read_retry_fits(clock_ms_until(&job->deadline), thread->timeout_ms)) {
		log_debug("GridFS file %s: read retried after: %s", file->id, job->detail);
		read_with(job, thread, file, span, NULL, out);
	}
	if (job->status != LOOKUP_BAD_DATA || reads_primary(thread) ||
	    clock_ms_until(&job->deadline) <= 0)
		return;
	log_debug("GridFS file %s: %s: reading the primary", file->id, job->detail);
	mongoc_read_prefs_t *primary = mongoc_read_prefs_new(MONGOC_READ_PRIMARY);
	read_with(job, thread, file, span, primary, out);
	mongoc_read_prefs_destroy(primary);
}
