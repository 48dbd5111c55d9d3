/*
 * lookup: a fixed set of threads, each holding one client popped from a
 * shared mongoc_client_pool_t, draining one bounded FIFO of jobs.
 *
 * The URI's timeouts default to the lookup deadline (libmongoc's own defaults
 * are 30 s server selection, 5 min socket), and retryReads defaults to off
 * because a retry doubles the wait; a quick connection error (a restarted
 * server's stale socket) is retried once here instead, if time remains.
 */
#include "lookup.h"

#include <bson/bson.h>
#include <mongoc/mongoc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "gridfs_store.h"
#include "log.h"

/* An id no document has: probes make the same round trip as real lookups. */
#define PROBE_OBJECTID "000000000000000000000000"

struct lookup_pool {
	mongoc_client_pool_t *clients;
	char *database;
	char *collection;
	char *path_field;
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

/* One find round trip (two for a file in GridFS); fills job->status, path, gridfs and detail. Returns the bson error domain. */
static uint32_t find_once(struct lookup_pool *pool, mongoc_client_t *client,
			  mongoc_collection_t *collection, struct lookup_job *job)
{
	const char *mid = job->kind == LOOKUP_PROBE ? PROBE_OBJECTID : job->mid;
	bson_oid_t oid;
	bson_t filter = BSON_INITIALIZER, options = BSON_INITIALIZER, projection;
	bson_error_t error = {0};
	const bson_t *document;
	bson_iter_t iter;

	bson_oid_init_from_string(&oid, mid);
	BSON_APPEND_OID(&filter, "_id", &oid);
	BSON_APPEND_DOCUMENT_BEGIN(&options, "projection", &projection);
	BSON_APPEND_INT32(&projection, pool->path_field, 1);
	if (documents_are_files(pool))
		gridfs_store_project(&projection);
	else
		BSON_APPEND_INT32(&projection, pool->gridfs_field, 1);
	bson_append_document_end(&options, &projection);
	BSON_APPEND_INT64(&options, "limit", 1);
	BSON_APPEND_BOOL(&options, "singleBatch", true);

	mongoc_cursor_t *cursor =
		mongoc_collection_find_with_opts(collection, &filter, &options, NULL);
	if (mongoc_cursor_next(cursor, &document)) {
		uint32_t length;
		const char *path;
		int has_path = bson_iter_init(&iter, document) &&
			       bson_iter_find_descendant(&iter, pool->path_field, &iter);
		if (has_path && BSON_ITER_HOLDS_UTF8(&iter) &&
		    (path = bson_iter_utf8(&iter, &length)) && length > 0 &&
		    strlen(path) == length) {
			job->status = LOOKUP_FOUND;
			job->path = strdup(path);
			if (job->path == NULL) {
				job->status = LOOKUP_FAILED;
				snprintf(job->detail, sizeof(job->detail), "out of memory");
			}
		} else if (!has_path) {
			find_gridfs_file(pool, client, document, job);
		} else {
			job->status = LOOKUP_NO_PATH;
			snprintf(job->detail, sizeof(job->detail),
				 "field '%s' is empty, not a string or holds a NUL",
				 pool->path_field);
		}
	} else if (mongoc_cursor_error(cursor, &error)) {
		job->status = is_unavailable(&error) ? LOOKUP_UNAVAILABLE : LOOKUP_FAILED;
		snprintf(job->detail, sizeof(job->detail), "%.250s", error.message);
	} else {
		job->status = LOOKUP_NOT_FOUND;
	}
	mongoc_cursor_destroy(cursor);
	bson_destroy(&filter);
	bson_destroy(&options);
	return error.domain;
}

static void run_job(struct lookup_pool *pool, mongoc_client_t *client,
		    mongoc_collection_t *collection, struct lookup_job *job)
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
	uint32_t domain = find_once(pool, client, collection, job);
	/* A stale pooled socket fails fast; one more try if most of the time is left. */
	if (domain == MONGOC_ERROR_STREAM &&
	    clock_ms_until(&job->deadline) > (long)pool->timeout_ms / 2) {
		log_debug("lookup %s: retrying after: %s", job->mid, job->detail);
		job->detail[0] = '\0';
		free(job->gridfs);
		job->gridfs = NULL;
		find_once(pool, client, collection, job);
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
	struct lookup_job *job;

	while ((job = take_job(pool)) != NULL) {
		run_job(pool, client, collection, job);
		deliver(job);
		pthread_mutex_lock(&pool->lock);
		pool->running--;
		pthread_mutex_unlock(&pool->lock);
	}
	mongoc_collection_destroy(collection);
	mongoc_client_pool_push(pool->clients, client);
	return NULL;
}

struct lookup_pool *lookup_pool_start(const struct config *config, unsigned max_queued,
				      char *error, size_t error_size)
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
	pool->database = strdup(config->database);
	pool->collection = strdup(config->collection);
	pool->path_field = strdup(config->path_field);
	pool->gridfs_field = strdup(config->gridfs_field);
	pool->gridfs_bucket = strdup(config->gridfs_bucket);
	pool->threads = calloc(pool->thread_count, sizeof(*pool->threads));
	if (!pool->database || !pool->collection || !pool->path_field || !pool->gridfs_field ||
	    !pool->gridfs_bucket || !pool->threads)
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
	free(pool->gridfs_field);
	free(pool->gridfs_bucket);
	free(pool);
}
