/*
 * find_track: one find round trip (two for a file in GridFS whose entry is a
 * separate fs.files document), one retry after a retryable error while half
 * the deadline is left (read_retry.h: a broken connection, a stepdown's "not
 * primary"), and the primary asked once more for a track (or its GridFS
 * entry) not found elsewhere.
 */
#include "db/find_track.h"

#include <bson/bson.h>
#include <mongoc/mongoc.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "db/gridfs_store.h"
#include "db/lookup_monitor.h"
#include "db/read_retry.h"

/* An id no document has: probes make the same round trip as real lookups. */
#define PROBE_OBJECTID "000000000000000000000000"

/* The document's file is in GridFS: its fs.files entry, the document itself or found by gridfs_id. */
static void find_gridfs_file(struct track_lookup *lookup, const struct db_thread *thread,
			     const mongoc_read_prefs_t *read_prefs, const bson_t *document,
			     const bson_oid_t *gridfs_id)
{
	const struct config *config = lookup->config;
	struct db_job *job = &lookup->job;
	struct gridfs_entry *file = &lookup->document.gridfs;
	enum lookup_status status;
	if (strcmp(config->gridfs_field, "_id") == 0)
		status = gridfs_store_parse_file(document, file, job->detail, sizeof(job->detail));
	else
		status = gridfs_store_find_file(thread->client, thread->database,
						thread->gridfs_bucket, gridfs_id, read_prefs, file,
						job->detail, sizeof(job->detail));
	/* An entry missing or malformed leaves the document without a file to serve: 404. */
	job->status = status == LOOKUP_FOUND	  ? LOOKUP_GRIDFS
		      : status == LOOKUP_BAD_DATA ? LOOKUP_NO_PATH
						  : status;
}

/* Fills the status, the document and detail from a found document. */
static void read_document(struct track_lookup *lookup, const struct db_thread *thread,
			  const mongoc_read_prefs_t *read_prefs, const bson_t *document)
{
	struct db_job *job = &lookup->job;
	bson_oid_t gridfs_id;
	job->status = track_document_read(document, lookup->config, lookup->mid, &lookup->document,
					  &gridfs_id, job->detail, sizeof(job->detail));
	if (job->status == LOOKUP_GRIDFS)
		find_gridfs_file(lookup, thread, read_prefs, document, &gridfs_id);
}

/* Forgets a result a retry replaces. */
static void forget_result(struct track_lookup *lookup)
{
	lookup->job.detail[0] = '\0';
}

/*
 * One find round trip with read_prefs (NULL: the collection's, i.e. the URI's),
 * two for a file in GridFS; fills the result. Returns whether it failed with
 * an error worth a retry (read_retry.h).
 */
static bool find_once(struct track_lookup *lookup, const struct db_thread *thread,
			  const mongoc_read_prefs_t *read_prefs)
{
	const struct config *config = lookup->config;
	struct db_job *job = &lookup->job;
	const char *mid = lookup->kind == FIND_PROBE ? PROBE_OBJECTID : lookup->mid;
	bson_oid_t oid;
	bson_t filter = BSON_INITIALIZER, options = BSON_INITIALIZER, projection;
	bson_error_t error = {0};
	const bson_t *document;

	bson_oid_init_from_string(&oid, mid);
	BSON_APPEND_OID(&filter, "_id", &oid);
	BSON_APPEND_DOCUMENT_BEGIN(&options, "projection", &projection);
	track_document_project(&projection, config);
	bson_append_document_end(&options, &projection);
	BSON_APPEND_INT64(&options, "limit", 1);
	BSON_APPEND_BOOL(&options, "singleBatch", true);

	mongoc_collection_t *collection = thread->tracks;
	lookup_monitor_reading(read_prefs != NULL ? read_prefs
						  : mongoc_collection_get_read_prefs(collection));
	mongoc_cursor_t *cursor =
		mongoc_collection_find_with_opts(collection, &filter, &options, read_prefs);
	/* The find command goes out (server selection first) and its one batch comes back here. */
	struct timespec sent = clock_now();
	int found = mongoc_cursor_next(cursor, &document);
	double seconds = clock_seconds_since(&sent);
	enum read_failure failure = READ_FAILED;
	if (found) {
		read_document(lookup, thread, read_prefs, document);
	} else if (mongoc_cursor_error(cursor, &error)) {
		failure = read_retry_classify(error.domain, error.code);
		job->status = failure == READ_FAILED ? LOOKUP_FAILED : LOOKUP_UNAVAILABLE;
		snprintf(job->detail, sizeof(job->detail), "%.250s", error.message);
	} else {
		job->status = LOOKUP_NOT_FOUND;
	}
	mongoc_cursor_destroy(cursor);
	bson_destroy(&filter);
	bson_destroy(&options);
	/* No server was selected: no command went out, so no round trip to time. */
	if (error.domain != MONGOC_ERROR_SERVER_SELECTION)
		metrics_observe_lookup(thread->metrics, seconds);
	if (job->status == LOOKUP_UNAVAILABLE)
		metrics_set_database_up(thread->all_metrics, 0);
	else if (job->status != LOOKUP_FAILED)
		metrics_set_database_up(thread->all_metrics, 1);
	/* A GridFS entry's find that failed is retried as the document's would be. */
	return failure == READ_RETRYABLE || (found && job->status == LOOKUP_UNAVAILABLE);
}

static bool reads_primary(const mongoc_collection_t *collection)
{
	return mongoc_read_prefs_get_mode(mongoc_collection_get_read_prefs(collection)) ==
	       MONGOC_READ_PRIMARY;
}

/* On a pool thread. */
static void run_lookup(struct db_job *job, const struct db_thread *thread)
{
	struct track_lookup *lookup = (struct track_lookup *)job;
	unsigned timeout_ms = lookup->config->lookup_timeout_ms;
	if (find_once(lookup, thread, NULL) &&
	    read_retry_fits(clock_ms_until(&job->deadline), timeout_ms)) {
		log_debug("lookup %s: retrying after: %s", lookup->mid, job->detail);
		forget_result(lookup);
		find_once(lookup, thread, NULL);
	}
	/* LOOKUP_NO_PATH: a GridFS entry missing on the member read is one too (find_gridfs_file). */
	if ((job->status != LOOKUP_NOT_FOUND && job->status != LOOKUP_NO_PATH) ||
	    lookup->kind != FIND_TRACK || reads_primary(thread->tracks))
		return;
	/* Not found on a member that may lag: the primary decides, before a 404 is answered or kept. */
	if (clock_ms_until(&job->deadline) <= 0) {
		job->status = LOOKUP_UNAVAILABLE;
		snprintf(job->detail, sizeof(job->detail),
			 "deadline passed before the primary was asked");
		return;
	}
	log_debug("lookup %s: %s reading %s: asking the primary", lookup->mid,
		  lookup_status_describe(job->status),
		  lookup_read_mode_name(
			  mongoc_read_prefs_get_mode(mongoc_collection_get_read_prefs(thread->tracks))));
	forget_result(lookup);
	mongoc_read_prefs_t *primary = mongoc_read_prefs_new(MONGOC_READ_PRIMARY);
	find_once(lookup, thread, primary);
	mongoc_read_prefs_destroy(primary);
}

void find_track_prepare(struct track_lookup *lookup, enum find_track_kind kind, const char *mid,
			const struct config *config, unsigned timeout_ms)
{
	memset(lookup, 0, sizeof(*lookup));
	lookup->kind = kind;
	snprintf(lookup->mid, sizeof(lookup->mid), "%s", kind == FIND_PROBE ? "" : mid);
	lookup->config = config;
	lookup->job.run = run_lookup;
	lookup->job.deadline = clock_deadline_after(timeout_ms);
}

int find_track_submit(struct db_pool *pool, struct track_lookup *lookup,
		      struct metrics_worker *metrics)
{
	if (db_pool_submit(pool, &lookup->job) < 0) {
		metrics_count_lookup_error(metrics, METRICS_LOOKUP_REJECTED);
		return -1;
	}
	metrics_lookup_started(metrics);
	return 0;
}

void find_track_timed_out(struct metrics_worker *metrics)
{
	metrics_count_lookup_error(metrics, METRICS_LOOKUP_TIMEOUT);
}

void find_track_delivered(const struct track_lookup *lookup, struct metrics_worker *metrics,
			  int timed_out)
{
	int kind = -1;
	if (!timed_out && lookup->job.status == LOOKUP_UNAVAILABLE)
		kind = METRICS_LOOKUP_UNAVAILABLE;
	else if (!timed_out && lookup->job.status == LOOKUP_FAILED)
		kind = METRICS_LOOKUP_ERROR;
	metrics_lookup_finished(metrics, kind);
}
