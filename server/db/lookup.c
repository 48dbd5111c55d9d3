/*
 * lookup: a fixed set of threads, each holding one client popped from a
 * shared mongoc_client_pool_t, draining one bounded FIFO of jobs.
 *
 * The URI's timeouts default to the lookup deadline (libmongoc's own defaults
 * are 30 s server selection, 5 min socket), and retryReads defaults to off
 * because a retry doubles the wait; a quick connection error (a restarted
 * server's stale socket) is retried once here instead, if time remains.
 *
 * Reads go where the URI's read preference sends them (the collection
 * inherits it from the client, the client from the URI: find_with_opts is
 * given no read preference of its own), with one exception: a track not
 * found on a member other than the primary is looked for on the primary.
 */
#include "db/lookup.h"

#include <bson/bson.h>
#include <mongoc/mongoc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "db/gridfs_store.h"
#include "base/log.h"
#include "db/lookup_monitor.h"

/* An id no document has: probes make the same round trip as real lookups. */
#define PROBE_OBJECTID "000000000000000000000000"

struct lookup_pool {
	mongoc_client_pool_t *clients;
	char *database;
	char *collection;
	char *path_field;
	char *etag_field; /* NULL: no ETag from the document */
	char *gridfs_field;  /* "_id": the document is itself the fs.files entry */
	char *gridfs_bucket;
	unsigned timeout_ms;

	pthread_mutex_t lock;
	pthread_cond_t wakeup;
	struct lookup_job *queue_head, *queue_tail; /* guarded by lock */
	unsigned queued, running, max_queued;	   /* guarded by lock */
	int stopping;				   /* guarded by lock */
	int joined;

	pthread_t *threads;
	unsigned thread_count;
	struct metrics *metrics;   /* NULL: nothing counted */
	atomic_uint next_shard;	   /* each lookup thread takes the next shard */
};

const char *lookup_status_describe(enum lookup_status status)
{
	switch (status) {
	case LOOKUP_FOUND:
		return "found";
	case LOOKUP_NOT_FOUND:
		return "no such document";
	case LOOKUP_NO_PATH:
		return "document has no string path";
	case LOOKUP_UNAVAILABLE:
		return "database unavailable";
	case LOOKUP_FAILED:
		return "database error";
	case LOOKUP_GRIDFS:
		return "file in GridFS";
	case LOOKUP_BAD_DATA:
		return "inconsistent GridFS data";
	}
	return "unknown";
}

enum lookup_status lookup_status_of_store(enum gridfs_store_status status)
{
	switch (status) {
	case GRIDFS_STORE_OK:
		return LOOKUP_FOUND;
	case GRIDFS_STORE_BAD_DATA:
		return LOOKUP_BAD_DATA;
	case GRIDFS_STORE_UNAVAILABLE:
		return LOOKUP_UNAVAILABLE;
	case GRIDFS_STORE_FAILED:
		break;
	}
	return LOOKUP_FAILED;
}

static void default_int_option(mongoc_uri_t *uri, const char *name, int32_t value)
{
	if (!mongoc_uri_has_option(uri, name))
		mongoc_uri_set_option_as_int32(uri, name, value);
}

static mongoc_uri_t *make_uri(const struct config *config, unsigned client_count, char *error,
			      size_t error_size)
{
	bson_error_t bson_error;
	mongoc_uri_t *uri = mongoc_uri_new_with_error(config->mongodb_uri, &bson_error);
	if (uri == NULL) {
		snprintf(error, error_size, "mongodb-uri: %s", bson_error.message);
		return NULL;
	}
	int32_t timeout = (int32_t)config->lookup_timeout_ms;
	default_int_option(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, timeout);
	default_int_option(uri, MONGOC_URI_CONNECTTIMEOUTMS, timeout);
	default_int_option(uri, MONGOC_URI_SOCKETTIMEOUTMS, timeout);
	default_int_option(uri, MONGOC_URI_MAXPOOLSIZE, (int32_t)client_count);
	if (!mongoc_uri_has_option(uri, MONGOC_URI_RETRYREADS))
		mongoc_uri_set_option_as_bool(uri, MONGOC_URI_RETRYREADS, false);
	if (mongoc_uri_get_appname(uri) == NULL)
		mongoc_uri_set_appname(uri, "musicd");
	return uri;
}

int lookup_check_uri(const struct config *config, char *error, size_t error_size)
{
	mongoc_uri_t *uri = make_uri(config, config->lookup_threads, error, error_size);
	if (uri == NULL)
		return -1;
	mongoc_uri_destroy(uri);
	return 0;
}

static int is_unavailable(const bson_error_t *error)
{
	return error->domain == MONGOC_ERROR_SERVER_SELECTION ||
	       error->domain == MONGOC_ERROR_STREAM;
}

/* The document's --etag-field value as a quoted ETag in job->etag, or "" (the file's ETag is used). */
static void read_etag(const struct lookup_pool *pool, const bson_t *document,
		      struct lookup_job *job)
{
	bson_iter_t iter;
	uint32_t length = 0;
	const char *value = NULL;
	job->etag[0] = '\0';
	if (pool->etag_field == NULL)
		return;
	if (bson_iter_init(&iter, document) &&
	    bson_iter_find_descendant(&iter, pool->etag_field, &iter) && BSON_ITER_HOLDS_UTF8(&iter))
		value = bson_iter_utf8(&iter, &length);
	if (value == NULL)
		log_debug("lookup %s: no string field '%s': the file's ETag is used", job->mid,
			  pool->etag_field);
	else if (etag_from_field(job->etag, value, length) < 0)
		log_warn("lookup %s: field '%s' is not an ETag (1 to %d letters, digits or "
			 "+-./:=_~): the file's ETag is used",
			 job->mid, pool->etag_field, ETAG_FIELD_VALUE_MAX);
}

static int documents_are_files(const struct lookup_pool *pool)
{
	return strcmp(pool->gridfs_field, "_id") == 0;
}

/* The document has no path: its file is in GridFS if the GridFS field holds an ObjectId. */
static void find_gridfs_file(struct lookup_pool *pool, mongoc_client_t *client,
			     const bson_t *document, struct lookup_job *job)
{
	bson_iter_t iter;
	job->status = LOOKUP_NO_PATH;
	if (!bson_iter_init(&iter, document) ||
	    !bson_iter_find_descendant(&iter, pool->gridfs_field, &iter) ||
	    !BSON_ITER_HOLDS_OID(&iter)) {
		snprintf(job->detail, sizeof(job->detail),
			 "field '%s' is missing and '%s' holds no ObjectId", pool->path_field,
			 pool->gridfs_field);
		return;
	}
	job->gridfs = malloc(sizeof(*job->gridfs));
	if (job->gridfs == NULL) {
		job->status = LOOKUP_FAILED;
		snprintf(job->detail, sizeof(job->detail), "out of memory");
		return;
	}
	enum gridfs_store_status status;
	if (documents_are_files(pool))
		status = gridfs_store_parse_file(document, job->gridfs, job->detail,
						 sizeof(job->detail));
	else
		status = gridfs_store_find_file(client, pool->database, pool->gridfs_bucket,
						bson_iter_oid(&iter), job->gridfs, job->detail,
						sizeof(job->detail));
	job->status = status == GRIDFS_STORE_OK ? LOOKUP_GRIDFS : lookup_status_of_store(status);
	if (job->status != LOOKUP_GRIDFS) {
		free(job->gridfs);
		job->gridfs = NULL;
	}
}

/* Fills job->status, path (or gridfs), etag and detail from a found document. */
static void read_document(struct lookup_pool *pool, mongoc_client_t *client,
			  const bson_t *document, struct lookup_job *job)
{
	bson_iter_t iter;
	uint32_t length;
	const char *path;
	int has_path = bson_iter_init(&iter, document) &&
		       bson_iter_find_descendant(&iter, pool->path_field, &iter);
	if (has_path && BSON_ITER_HOLDS_UTF8(&iter) && (path = bson_iter_utf8(&iter, &length)) &&
	    length > 0 && strlen(path) == length) {
		job->status = LOOKUP_FOUND;
		job->path = strdup(path);
		if (job->path == NULL) {
			job->status = LOOKUP_FAILED;
			snprintf(job->detail, sizeof(job->detail), "out of memory");
		}
		read_etag(pool, document, job);
	} else if (!has_path) {
		find_gridfs_file(pool, client, document, job);
	} else {
		job->status = LOOKUP_NO_PATH;
		snprintf(job->detail, sizeof(job->detail),
			 "field '%s' is empty, not a string or holds a NUL", pool->path_field);
	}
}

/*
 * One find round trip with read_prefs (NULL: the collection's, i.e. the URI's),
 * two for a file in GridFS; fills job->status, path (or gridfs), etag and
 * detail. Returns the bson error domain.
 */
static uint32_t find_once(struct lookup_pool *pool, mongoc_client_t *client,
			  mongoc_collection_t *collection, const mongoc_read_prefs_t *read_prefs,
			  struct lookup_job *job, struct metrics_lookup_thread *metrics)
{
	const char *mid = job->kind == LOOKUP_PROBE ? PROBE_OBJECTID : job->mid;
	bson_oid_t oid;
	bson_t filter = BSON_INITIALIZER, options = BSON_INITIALIZER, projection;
	bson_error_t error = {0};
	const bson_t *document;

	bson_oid_init_from_string(&oid, mid);
	BSON_APPEND_OID(&filter, "_id", &oid);
	BSON_APPEND_DOCUMENT_BEGIN(&options, "projection", &projection);
	BSON_APPEND_INT32(&projection, pool->path_field, 1);
	if (pool->etag_field != NULL)
		BSON_APPEND_INT32(&projection, pool->etag_field, 1);
	if (documents_are_files(pool))
		gridfs_store_project(&projection);
	else
		BSON_APPEND_INT32(&projection, pool->gridfs_field, 1);
	bson_append_document_end(&options, &projection);
	BSON_APPEND_INT64(&options, "limit", 1);
	BSON_APPEND_BOOL(&options, "singleBatch", true);

	lookup_monitor_reading(read_prefs != NULL ? read_prefs
						  : mongoc_collection_get_read_prefs(collection));
	mongoc_cursor_t *cursor =
		mongoc_collection_find_with_opts(collection, &filter, &options, read_prefs);
	/* The find command goes out (server selection first) and its one batch comes back here. */
	struct timespec sent = clock_now();
	int found = mongoc_cursor_next(cursor, &document);
	double seconds = clock_seconds_since(&sent);
	if (found) {
		read_document(pool, client, document, job);
	} else if (mongoc_cursor_error(cursor, &error)) {
		job->status = is_unavailable(&error) ? LOOKUP_UNAVAILABLE : LOOKUP_FAILED;
		snprintf(job->detail, sizeof(job->detail), "%.250s", error.message);
	} else {
		job->status = LOOKUP_NOT_FOUND;
	}
	mongoc_cursor_destroy(cursor);
	bson_destroy(&filter);
	bson_destroy(&options);
	/* No server was selected: no command went out, so no round trip to time. */
	if (error.domain != MONGOC_ERROR_SERVER_SELECTION)
		metrics_observe_lookup(metrics, seconds);
	if (job->status == LOOKUP_UNAVAILABLE)
		metrics_set_database_up(pool->metrics, 0);
	else if (job->status != LOOKUP_FAILED)
		metrics_set_database_up(pool->metrics, 1);
	return error.domain;
}

static bool reads_primary(const mongoc_collection_t *collection)
{
	return mongoc_read_prefs_get_mode(mongoc_collection_get_read_prefs(collection)) ==
	       MONGOC_READ_PRIMARY;
}

/* primary: the read preference "no such document" read elsewhere is asked again with. */
static void run_job(struct lookup_pool *pool, mongoc_client_t *client,
		    mongoc_collection_t *collection, const mongoc_read_prefs_t *primary,
		    struct lookup_job *job, struct metrics_lookup_thread *metrics)
{
	if (clock_ms_until(&job->deadline) <= 0) {
		job->status = LOOKUP_UNAVAILABLE;
		snprintf(job->detail, sizeof(job->detail), "deadline passed while queued");
		return;
	}
	if (job->kind == LOOKUP_CALL) {
		struct lookup_call_context context = {client, pool->database, pool->gridfs_bucket};
		job->call(job, &context);
		return;
	}
	uint32_t domain = find_once(pool, client, collection, NULL, job, metrics);
	/* A stale pooled socket fails fast; one more try if most of the time is left. */
	if (domain == MONGOC_ERROR_STREAM &&
	    clock_ms_until(&job->deadline) > (long)pool->timeout_ms / 2) {
		log_debug("lookup %s: retrying after: %s", job->mid, job->detail);
		job->detail[0] = '\0';
		free(job->gridfs);
		job->gridfs = NULL;
		find_once(pool, client, collection, NULL, job, metrics);
	}
	/*
	 * Not found on a member that may lag: the primary decides, before a 404 is
	 * answered or remembered. Probes are not asked again: /healthz answers for
	 * the members lookups read from, whether or not the primary is up.
	 */
	if (job->status == LOOKUP_NOT_FOUND && job->kind == LOOKUP_FIND_TRACK &&
	    !reads_primary(collection)) {
		if (clock_ms_until(&job->deadline) <= 0) {
			job->status = LOOKUP_UNAVAILABLE;
			snprintf(job->detail, sizeof(job->detail),
				 "deadline passed before the primary was asked");
			return;
		}
		log_debug("lookup %s: not found reading %s: asking the primary", job->mid,
			  lookup_read_mode_name(mongoc_read_prefs_get_mode(
				  mongoc_collection_get_read_prefs(collection))));
		find_once(pool, client, collection, primary, job, metrics);
	}
}

/* Thread-safe (evthread_use_pthreads) and allocation-free: a job is never dropped here. */
static void deliver(struct lookup_job *job)
{
	if (job->delivery == NULL)
		job->done(job); /* a job no loop waits for (a spool fill): it finishes itself */
	else
		event_active(job->delivery, EV_TIMEOUT, 1);
}

static struct lookup_job *take_job(struct lookup_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	while (pool->queue_head == NULL && !pool->stopping)
		pthread_cond_wait(&pool->wakeup, &pool->lock);
	struct lookup_job *job = pool->queue_head;
	if (job != NULL) {
		pool->queue_head = job->next_queued;
		if (pool->queue_head == NULL)
			pool->queue_tail = NULL;
		pool->queued--;
		pool->running++;
	}
	pthread_mutex_unlock(&pool->lock);
	return job;
}

static void *lookup_thread(void *arg)
{
	struct lookup_pool *pool = arg;
	mongoc_client_t *client = mongoc_client_pool_pop(pool->clients);
	mongoc_collection_t *collection =
		mongoc_client_get_collection(client, pool->database, pool->collection);
	/* The thread's own, like its client and collection (libmongoc's objects are not shared). */
	mongoc_read_prefs_t *primary = mongoc_read_prefs_new(MONGOC_READ_PRIMARY);
	struct lookup_job *job;
	struct metrics_lookup_thread *metrics =
		metrics_lookup_thread(pool->metrics, atomic_fetch_add(&pool->next_shard, 1));

	while ((job = take_job(pool)) != NULL) {
		run_job(pool, client, collection, primary, job, metrics);
		deliver(job);
		pthread_mutex_lock(&pool->lock);
		pool->running--;
		pthread_mutex_unlock(&pool->lock);
	}
	mongoc_read_prefs_destroy(primary);
	mongoc_collection_destroy(collection);
	mongoc_client_pool_push(pool->clients, client);
	return NULL;
}

struct lookup_pool *lookup_pool_start(const struct config *config, unsigned max_queued,
				      struct metrics *metrics, char *error, size_t error_size)
{
	struct lookup_pool *pool = calloc(1, sizeof(*pool));
	mongoc_uri_t *uri = NULL;
	if (pool == NULL) {
		snprintf(error, error_size, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->wakeup, NULL);
	pool->thread_count = config->lookup_threads;
	pool->timeout_ms = config->lookup_timeout_ms;
	pool->max_queued = max_queued;
	pool->metrics = metrics;
	pool->database = strdup(config->database);
	pool->collection = strdup(config->collection);
	pool->path_field = strdup(config->path_field);
	pool->etag_field = config->etag_field ? strdup(config->etag_field) : NULL;
	pool->gridfs_field = strdup(config->gridfs_field);
	pool->gridfs_bucket = strdup(config->gridfs_bucket);
	pool->threads = calloc(pool->thread_count, sizeof(*pool->threads));
	if (!pool->database || !pool->collection || !pool->path_field || !pool->gridfs_field ||
	    !pool->gridfs_bucket || !pool->threads || (config->etag_field && !pool->etag_field))
		goto out_of_memory;

	uri = make_uri(config, pool->thread_count, error, error_size);
	if (uri == NULL)
		goto fail;
	bson_error_t bson_error;
	pool->clients = mongoc_client_pool_new_with_error(uri, &bson_error);
	mongoc_uri_destroy(uri);
	if (pool->clients == NULL) {
		snprintf(error, error_size, "mongodb-uri: %s", bson_error.message);
		goto fail;
	}
	mongoc_client_pool_set_error_api(pool->clients, MONGOC_ERROR_API_VERSION_2);
	/* Command monitoring costs a callback per command: only when its lines are written. */
	if (log_enabled(LOG_LEVEL_DEBUG) && lookup_monitor_attach(pool->clients) < 0)
		log_warn("mongodb: command monitoring refused; no per-command debug lines");

	gridfs_store_tune_allocator(); /* before the threads that read GridFS spans */
	for (unsigned i = 0; i < pool->thread_count; i++) {
		if (pthread_create(&pool->threads[i], NULL, lookup_thread, pool) != 0) {
			snprintf(error, error_size, "cannot start lookup thread %u", i);
			pool->thread_count = i;
			lookup_pool_stop(pool);
			return NULL;
		}
	}
	return pool;

out_of_memory:
	snprintf(error, error_size, "out of memory");
fail:
	pool->thread_count = 0;
	lookup_pool_stop(pool);
	return NULL;
}

int lookup_submit(struct lookup_pool *pool, struct lookup_job *job)
{
	int accepted = 0;
	job->next_queued = NULL;
	job->path = NULL;
	job->etag[0] = '\0';
	job->gridfs = NULL;
	job->detail[0] = '\0';
	pthread_mutex_lock(&pool->lock);
	if (!pool->stopping && pool->queued + pool->running < pool->max_queued) {
		if (pool->queue_tail != NULL)
			pool->queue_tail->next_queued = job;
		else
			pool->queue_head = job;
		pool->queue_tail = job;
		pool->queued++;
		accepted = 1;
		pthread_cond_signal(&pool->wakeup);
	}
	pthread_mutex_unlock(&pool->lock);
	return accepted ? 0 : -1;
}

/* Answers every queued job as UNAVAILABLE, so its owner can release it. */
static void answer_queued_jobs(struct lookup_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	pool->stopping = 1;
	struct lookup_job *job = pool->queue_head;
	pool->queue_head = pool->queue_tail = NULL;
	pool->queued = 0;
	pthread_cond_broadcast(&pool->wakeup);
	pthread_mutex_unlock(&pool->lock);
	while (job != NULL) {
		struct lookup_job *next = job->next_queued;
		job->status = LOOKUP_UNAVAILABLE;
		snprintf(job->detail, sizeof(job->detail), "shutting down");
		deliver(job);
		job = next;
	}
}

void lookup_pool_quiesce(struct lookup_pool *pool)
{
	if (pool == NULL || pool->joined)
		return;
	answer_queued_jobs(pool);
	for (unsigned i = 0; i < pool->thread_count; i++)
		pthread_join(pool->threads[i], NULL);
	pool->joined = 1;
}

void lookup_pool_stop(struct lookup_pool *pool)
{
	if (pool == NULL)
		return;
	lookup_pool_quiesce(pool);
	if (pool->clients != NULL)
		mongoc_client_pool_destroy(pool->clients);
	pthread_mutex_destroy(&pool->lock);
	pthread_cond_destroy(&pool->wakeup);
	free(pool->threads);
	free(pool->database);
	free(pool->collection);
	free(pool->path_field);
	free(pool->etag_field);
	free(pool->gridfs_field);
	free(pool->gridfs_bucket);
	free(pool);
}
