/*
 * db_pool: "run this with a database client". A fixed set of threads, each
 * holding one client popped from a shared mongoc_client_pool_t, drains one
 * bounded FIFO of jobs, so that no worker's loop ever waits on MongoDB.
 * Every database call musicd makes runs here: findById (find_track.h),
 * health probes (the same find), GridFS chunk reads and spool fills.
 *
 * A job is handed back by activating the event its owner made on its own
 * loop before submitting it (the wire's exchange_wait gives one): handing
 * back allocates nothing and cannot fail. A job no loop waits for (a spool
 * fill) has a done function instead. Pool threads never touch an HTTP
 * request.
 */
#ifndef MUSICD_DB_POOL_H
#define MUSICD_DB_POOL_H

#include <event2/event.h>
#include <stdbool.h>
#include <time.h>

#include "base/metrics.h"
#include "config/config.h"
#include "db/lookup_status.h"

#define DB_DETAIL_MAX 256

struct db_job;
struct _mongoc_client_t;
struct _mongoc_collection_t;
struct _mongoc_uri_t;

/* What a job runs with, on a pool thread: that thread's own objects (libmongoc's are not shared). */
struct db_thread {
	struct _mongoc_client_t *client;
	struct _mongoc_collection_t *tracks; /* --database.--collection */
	const char *database;
	const char *gridfs_bucket;
	struct metrics_lookup_thread *metrics; /* this thread's shard; NULL: none */
	struct metrics *all_metrics;	       /* for the database-up gauge; NULL: none */
	unsigned timeout_ms; /* --lookup-timeout: what a retry measures the time left against */
};

/* Runs on a pool thread; sets job->status (and detail). Never touches the HTTP request. */
typedef void (*db_job_fn)(struct db_job *job, const struct db_thread *thread);

/*
 * One job. Its owner fills run, deadline and delivery (or done), and keeps
 * the job alive from db_pool_submit until delivery's callback (or done) runs;
 * meanwhile only the pool touches it. A job still queued when its deadline
 * passes, or when the pool stops, is not run: status LOOKUP_UNAVAILABLE with
 * why in detail.
 */
struct db_job {
	db_job_fn run;
	struct timespec deadline; /* CLOCK_MONOTONIC (clock.h) */
	struct event *delivery;	  /* made by the owner (no fd); activated once, when done */
	void (*done)(struct db_job *job); /* instead, when delivery is NULL: called once, on a
					     pool thread or the stopping one */
	enum lookup_status status;
	char detail[DB_DETAIL_MAX]; /* why, for the log, when it did not find */
	struct db_job *next_queued; /* pool-private */
};

struct db_pool;

/*
 * Connects nothing yet (libmongoc connects lazily); NULL with a message on a
 * bad URI. The URI's timeouts default to --lookup-timeout; each thread counts
 * its round trips in its own shard of metrics (which may be NULL). At most
 * max_queued jobs are queued or running at once.
 */
struct db_pool *db_pool_start(const struct config *config, unsigned max_queued,
			      struct metrics *metrics, char *error, size_t error_size);

/*
 * config's URI with musicd's defaults (the timeouts from --lookup-timeout,
 * maxPoolSize client_count, retryReads off, appname musicd) where it sets none;
 * NULL with "mongodb-uri: <reason>". The caller destroys it.
 */
struct _mongoc_uri_t *db_pool_make_uri(const struct config *config, unsigned client_count,
				       char *error, size_t error_size);

/* Whether the pool could be built from config's URI (parsed, nothing connected); -1 with a message. */
int db_pool_check_uri(const struct config *config, char *error, size_t error_size);

/* Queues a job; -1 when the queue is full or the pool is stopping (answer 503 at once). */
int db_pool_submit(struct db_pool *pool, struct db_job *job);

/*
 * Finishes queued jobs as UNAVAILABLE and joins the threads; later submits
 * fail (-1), so a callback run while the workers flush cannot queue more.
 */
void db_pool_quiesce(struct db_pool *pool);

/* Quiesces the pool if that was not done, then frees it. */
void db_pool_stop(struct db_pool *pool);

/* Whether the pool was asked to stop (db_pool_quiesce): what a job finishing late needs to know. */
bool db_pool_stopping(struct db_pool *pool);

/* Milliseconds the URI gives each lookup (--lookup-timeout). */
unsigned db_pool_timeout_ms(const struct db_pool *pool);

#endif
