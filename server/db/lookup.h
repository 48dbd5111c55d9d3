/*
 * lookup: the pool of threads that run findById against MongoDB, so that no
 * worker's event loop ever waits on the database. A worker submits a job;
 * a lookup thread runs it on a client from the shared mongoc_client_pool_t
 * and hands the job back by activating the job's delivery event, which the
 * submitter made on its own loop beforehand: handing back allocates nothing
 * and cannot fail. Lookup threads never touch the HTTP request.
 */
#ifndef MUSICD_LOOKUP_H
#define MUSICD_LOOKUP_H

#include <event2/event.h>
#include <time.h>

#include "config/config.h"
#include "base/metrics.h"
#include "db/gridfs_file.h"
#include "http/objectid.h"
#include "http/etag.h"

enum lookup_kind {
	LOOKUP_FIND_TRACK, /* find {_id: ObjectId(mid)}, projected to the path (and ETag) field */
	LOOKUP_PROBE,	   /* the same round trip for an id that never exists: a health check */
	LOOKUP_CALL,	   /* job->call, with a client of the pool (a GridFS read) */
};

enum lookup_status {
	LOOKUP_FOUND,	    /* path is set */
	LOOKUP_NOT_FOUND,   /* no such document */
	LOOKUP_NO_PATH,	    /* the document has no string path: a data problem */
	LOOKUP_UNAVAILABLE, /* database unreachable or past the deadline: 503 */
	LOOKUP_FAILED,	    /* any other database error: 500 */
	LOOKUP_GRIDFS,	    /* no path, the file is in GridFS: gridfs is set */
	LOOKUP_BAD_DATA,    /* GridFS data that contradicts itself (entry or chunks): detail */
};

struct lookup_job;
struct _mongoc_client_t;

/* What a LOOKUP_CALL runs with, on a lookup thread. */
struct lookup_call_context {
	struct _mongoc_client_t *client; /* the thread's, for this call only */
	const char *database;
	const char *gridfs_bucket;
};

/* Runs on a lookup thread; sets job->status (and detail). Never touches the HTTP request. */
typedef void (*lookup_call_fn)(struct lookup_job *job, const struct lookup_call_context *context);

/*
 * One lookup. The submitter owns the job; between lookup_submit and the
 * delivery event's callback the pool holds it and the submitter must not
 * free it. The callback runs on the delivery event's loop and takes back
 * ownership, including of path.
 */
struct lookup_job {
	enum lookup_kind kind;
	char mid[OBJECTID_HEX_LENGTH + 1];
	struct timespec deadline; /* CLOCK_MONOTONIC; a job still queued past it is not run */
	struct event *delivery; /* made by the submitter (no fd); activated once, when done */
	void (*done)(struct lookup_job *job); /* instead, when delivery is NULL: called once,
						 on a lookup thread or the stopping one */

	enum lookup_status status;
	lookup_call_fn call; /* LOOKUP_CALL: what to run, with call_arg (the submitter's) */
	void *call_arg;

	char *path;	    /* malloc'd when status is LOOKUP_FOUND */
	char etag[ETAG_MAX]; /* with --etag-field and a valid value: the document's ETag; else "" */
	struct gridfs_file *gridfs; /* malloc'd when status is LOOKUP_GRIDFS */
	char detail[256];   /* why, for the log, when not found or failed */
	struct lookup_job *next_queued; /* pool-private */
};

struct lookup_pool;

/*
 * Lookups read with the URI's read preference (readPreference,
 * maxStalenessSeconds, readPreferenceTags), probes too. When that is not
 * primary, "no such document" is asked of the primary once more before it is
 * believed: a track inserted a moment ago may not have reached the member read.
 */

/*
 * Connects nothing yet (libmongoc connects lazily); NULL with a message on a
 * bad URI. Each lookup thread counts its round trips in its own shard of
 * metrics (which may be NULL) and reports whether the database answered.
 */
struct lookup_pool *lookup_pool_start(const struct config *config, unsigned max_queued,
				      struct metrics *metrics, char *error, size_t error_size);

/* Whether the pool could be built from config's URI (parsed as lookup_pool_start would, nothing connected); -1 with a message. */
int lookup_check_uri(const struct config *config, char *error, size_t error_size);

/* Queues a job; -1 when the queue is full or the pool is stopping (answer 503 at once). */
int lookup_submit(struct lookup_pool *pool, struct lookup_job *job);

/*
 * Finishes queued jobs as UNAVAILABLE and joins the threads; later submits
 * fail (-1), so a callback run while the workers flush cannot queue more.
 */
void lookup_pool_quiesce(struct lookup_pool *pool);

/* Quiesces the pool if that was not done, then frees it. */
void lookup_pool_stop(struct lookup_pool *pool);

const char *lookup_status_describe(enum lookup_status status);

/* A GridFS read's outcome as a lookup's: OK is LOOKUP_FOUND. */
enum lookup_status lookup_status_of_store(enum gridfs_store_status status);

#endif
