/*
 * db_pool: a fixed set of threads, each holding one client popped from a
 * shared mongoc_client_pool_t (and its own collection handle), draining one
 * bounded FIFO of jobs.
 *
 * The URI's timeouts default to the lookup deadline (libmongoc's own defaults
 * are 30 s server selection, 5 min socket), and retryReads defaults to off
 * because the driver's retry does not know the deadline: find_track and
 * gridfs_read retry a read that fails with a retryable error (read_retry.h)
 * themselves, once, if half the deadline is left.
 */
#include "db/db_pool.h"

#include <bson/bson.h>
#include <mongoc/mongoc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "db/gridfs_store.h"
#include "db/lookup_monitor.h"

struct db_pool {
	mongoc_client_pool_t *clients;
	char *database;
	char *collection;
	char *gridfs_bucket;
	unsigned timeout_ms;

	pthread_mutex_t lock;
	pthread_cond_t wakeup;
	struct db_job *queue_head, *queue_tail; /* guarded by lock */
	unsigned queued, running, max_queued;	/* guarded by lock */
	int stopping;				/* guarded by lock */
	int joined;

	pthread_t *threads;
	unsigned thread_count;
	struct metrics *metrics; /* NULL: nothing counted */
	atomic_uint next_shard;	 /* each thread takes the next shard */
};

static void default_int_option(mongoc_uri_t *uri, const char *name, int32_t value)
{
	if (!mongoc_uri_has_option(uri, name))
		mongoc_uri_set_option_as_int32(uri, name, value);
}

mongoc_uri_t *db_pool_make_uri(const struct config *config, unsigned client_count, char *error,
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

int db_pool_check_uri(const struct config *config, char *error, size_t error_size)
{
	mongoc_uri_t *uri = db_pool_make_uri(config, config->lookup_threads, error, error_size);
	if (uri == NULL)
		return -1;
	mongoc_uri_destroy(uri);
	return 0;
}

bool db_pool_stopping(struct db_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	bool stopping = pool->stopping != 0;
	pthread_mutex_unlock(&pool->lock);
	return stopping;
}

unsigned db_pool_timeout_ms(const struct db_pool *pool)
{
	return pool->timeout_ms;
}

/* Thread-safe (evthread_use_pthreads) and allocation-free: a job is never dropped here. */
static void deliver(struct db_job *job)
{
	if (job->delivery == NULL)
		job->done(job); /* a job no loop waits for (a spool fill): it finishes itself */
	else
		event_active(job->delivery, EV_TIMEOUT, 1);
}

static struct db_job *take_job(struct db_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	while (pool->queue_head == NULL && !pool->stopping)
		pthread_cond_wait(&pool->wakeup, &pool->lock);
	struct db_job *job = pool->queue_head;
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

static void run_job(struct db_job *job, const struct db_thread *thread)
{
	if (clock_ms_until(&job->deadline) <= 0) {
		job->status = LOOKUP_UNAVAILABLE;
		snprintf(job->detail, sizeof(job->detail), "deadline passed while queued");
		return;
	}
	job->run(job, thread);
}

static void *pool_thread(void *arg)
{
	struct db_pool *pool = arg;
	mongoc_client_t *client = mongoc_client_pool_pop(pool->clients);
	struct db_thread thread = {
		.client = client,
		.tracks = mongoc_client_get_collection(client, pool->database, pool->collection),
		.database = pool->database,
		.gridfs_bucket = pool->gridfs_bucket,
		.metrics = metrics_lookup_thread(pool->metrics, atomic_fetch_add(&pool->next_shard, 1)),
		.all_metrics = pool->metrics,
		.timeout_ms = pool->timeout_ms,
	};
	struct db_job *job;
	while ((job = take_job(pool)) != NULL) {
		run_job(job, &thread);
		deliver(job);
		pthread_mutex_lock(&pool->lock);
		pool->running--;
		pthread_mutex_unlock(&pool->lock);
	}
	mongoc_collection_destroy(thread.tracks);
	mongoc_client_pool_push(pool->clients, client);
	return NULL;
}

struct db_pool *db_pool_start(const struct config *config, unsigned max_queued,
			      struct metrics *metrics, char *error, size_t error_size)
{
	struct db_pool *pool = calloc(1, sizeof(*pool));
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
	pool->gridfs_bucket = strdup(config->gridfs_bucket);
	pool->threads = calloc(pool->thread_count, sizeof(*pool->threads));
	if (!pool->database || !pool->collection || !pool->gridfs_bucket || !pool->threads)
		goto out_of_memory;

	uri = db_pool_make_uri(config, pool->thread_count, error, error_size);
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
		if (pthread_create(&pool->threads[i], NULL, pool_thread, pool) != 0) {
			snprintf(error, error_size, "cannot start lookup thread %u", i);
			pool->thread_count = i;
			db_pool_stop(pool);
			return NULL;
		}
	}
	return pool;

out_of_memory:
	snprintf(error, error_size, "out of memory");
fail:
	pool->thread_count = 0;
	db_pool_stop(pool);
	return NULL;
}

int db_pool_submit(struct db_pool *pool, struct db_job *job)
{
	int accepted = 0;
	job->next_queued = NULL;
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
static void answer_queued_jobs(struct db_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	pool->stopping = 1;
	struct db_job *job = pool->queue_head;
	pool->queue_head = pool->queue_tail = NULL;
	pool->queued = 0;
	pthread_cond_broadcast(&pool->wakeup);
	pthread_mutex_unlock(&pool->lock);
	while (job != NULL) {
		struct db_job *next = job->next_queued;
		job->status = LOOKUP_UNAVAILABLE;
		snprintf(job->detail, sizeof(job->detail), "shutting down");
		deliver(job);
		job = next;
	}
}

void db_pool_quiesce(struct db_pool *pool)
{
	if (pool == NULL || pool->joined)
		return;
	answer_queued_jobs(pool);
	for (unsigned i = 0; i < pool->thread_count; i++)
		pthread_join(pool->threads[i], NULL);
	pool->joined = 1;
}

void db_pool_stop(struct db_pool *pool)
{
	if (pool == NULL)
		return;
	db_pool_quiesce(pool);
	if (pool->clients != NULL)
		mongoc_client_pool_destroy(pool->clients);
	pthread_mutex_destroy(&pool->lock);
	pthread_cond_destroy(&pool->wakeup);
	free(pool->threads);
	free(pool->database);
	free(pool->collection);
	free(pool->gridfs_bucket);
	free(pool);
}
