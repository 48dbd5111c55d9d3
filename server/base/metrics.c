/*
 * metrics: one shard per counting thread, each on cache lines of its own,
 * so a worker counting never touches a line another thread writes. A
 * single writer per counter makes load + store as good as an atomic add
 * (which would lock the bus) and still lets a scrape read each counter whole.
 */
#include "base/metrics.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_LINE 64
#define NANOSECONDS 1e9

typedef _Atomic uint64_t counter;

struct histogram {
	counter buckets[METRICS_BUCKETS + 1];
	counter sum_ns;
};

struct metrics_worker {
	counter requests[METRICS_STATUS_SLOTS][METRICS_METHOD_COUNT];
	counter response_bytes;
	struct histogram first_byte;
	counter connections_accepted, connections_refused;
	counter streams_refused, paced; /* per-client limits */
	counter lookups_started, lookups_finished;
	counter lookup_errors[METRICS_LOOKUP_ERROR_COUNT];
	counter url_refusals[METRICS_URL_REFUSAL_COUNT];
} __attribute__((aligned(CACHE_LINE)));

struct metrics_lookup_thread {
	struct histogram duration;
} __attribute__((aligned(CACHE_LINE)));

struct metrics {
	unsigned worker_count, lookup_thread_count;
	struct metrics_worker *workers;		      /* owned, worker_count of them */
	struct metrics_lookup_thread *lookup_threads; /* owned, lookup_thread_count of them */
	_Atomic int database_up;
};

/* Only the shard's own thread calls this. */
static inline void add(counter *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline uint64_t value_of(counter *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

static void *zeroed_lines(size_t count, size_t size)
{
	void *memory = NULL;
	if (count == 0)
		count = 1;
	if (posix_memalign(&memory, CACHE_LINE, count * size) != 0)
		return NULL;
	memset(memory, 0, count * size);
	return memory;
}

struct metrics *metrics_new(unsigned worker_count, unsigned lookup_thread_count)
{
	struct metrics *metrics = calloc(1, sizeof(*metrics));
	if (metrics == NULL)
		return NULL;
	metrics->worker_count = worker_count;
	metrics->lookup_thread_count = lookup_thread_count;
	metrics->workers = zeroed_lines(worker_count, sizeof(*metrics->workers));
	metrics->lookup_threads = zeroed_lines(lookup_thread_count, sizeof(*metrics->lookup_threads));
	if (metrics->workers == NULL || metrics->lookup_threads == NULL) {
		metrics_free(metrics);
		return NULL;
	}
	return metrics;
}

void metrics_free(struct metrics *metrics)
{
	if (metrics == NULL)
		return;
	free(metrics->workers);
	free(metrics->lookup_threads);
	free(metrics);
}

struct metrics_worker *metrics_worker(struct metrics *metrics, unsigned index)
{
	return metrics != NULL && index < metrics->worker_count ? &metrics->workers[index] : NULL;
}

struct metrics_lookup_thread *metrics_lookup_thread(struct metrics *metrics, unsigned index)
{
	return metrics != NULL && index < metrics->lookup_thread_count
		       ? &metrics->lookup_threads[index]
		       : NULL;
}

static void observe(struct histogram *histogram, double seconds)
{
	if (seconds < 0)
		seconds = 0;
	add(&histogram->buckets[metrics_bucket_of(seconds)], 1);
	add(&histogram->sum_ns, (uint64_t)(seconds * NANOSECONDS));
}

void metrics_count_request(struct metrics_worker *worker, enum metrics_method method, int status,
			   uint64_t body_bytes)
{
	if (worker == NULL)
		return;
	if (status < METRICS_STATUS_MIN || status > METRICS_STATUS_MAX)
		status = METRICS_STATUS_MAX;
	if (method >= METRICS_METHOD_COUNT)
		method = METRICS_METHOD_OTHER;
	add(&worker->requests[status - METRICS_STATUS_MIN][method], 1);
	add(&worker->response_bytes, body_bytes);
}

void metrics_observe_first_byte(struct metrics_worker *worker, double seconds)
{
	if (worker != NULL)
		observe(&worker->first_byte, seconds);
}

void metrics_count_connection(struct metrics_worker *worker, int refused)
{
	if (worker == NULL)
		return;
	add(&worker->connections_accepted, 1);
	if (refused)
		add(&worker->connections_refused, 1);
}

void metrics_count_stream_refused(struct metrics_worker *worker)
{
	if (worker != NULL)
		add(&worker->streams_refused, 1);
}

void metrics_count_paced(struct metrics_worker *worker)
{
	if (worker != NULL)
		add(&worker->paced, 1);
}

void metrics_lookup_started(struct metrics_worker *worker)
{
	if (worker != NULL)
		add(&worker->lookups_started, 1);
}

void metrics_lookup_finished(struct metrics_worker *worker, int error_kind)
{
	if (worker == NULL)
		return;
	add(&worker->lookups_finished, 1);
	if (error_kind >= 0 && error_kind < METRICS_LOOKUP_ERROR_COUNT)
		add(&worker->lookup_errors[error_kind], 1);
}

void metrics_count_lookup_error(struct metrics_worker *worker, enum metrics_lookup_error kind)
{
	if (worker != NULL && kind < METRICS_LOOKUP_ERROR_COUNT)
		add(&worker->lookup_errors[kind], 1);
}

void metrics_count_url_refusal(struct metrics_worker *worker, enum metrics_url_refusal reason)
{
	if (worker != NULL && reason < METRICS_URL_REFUSAL_COUNT)
		add(&worker->url_refusals[reason], 1);
}

void metrics_observe_lookup(struct metrics_lookup_thread *thread, double seconds)
{
	if (thread != NULL)
		observe(&thread->duration, seconds);
}

void metrics_set_database_up(struct metrics *metrics, int up)
{
	if (metrics == NULL)
		return;
	/* Written only when it changes: every lookup thread storing it each time would share the line. */
	if (atomic_load_explicit(&metrics->database_up, memory_order_relaxed) != !!up)
		atomic_store_explicit(&metrics->database_up, !!up, memory_order_relaxed);
}

static void add_histogram(struct metrics_histogram_snapshot *into, struct histogram *from)
{
	for (unsigned i = 0; i <= METRICS_BUCKETS; i++)
		into->buckets[i] += value_of(&from->buckets[i]);
	into->sum_seconds += (double)value_of(&from->sum_ns) / NANOSECONDS;
}

void metrics_collect(struct metrics *metrics, struct metrics_snapshot *snapshot)
{
	memset(snapshot->requests, 0, sizeof(snapshot->requests));
	memset(&snapshot->first_byte, 0, sizeof(snapshot->first_byte));
	memset(&snapshot->lookup_duration, 0, sizeof(snapshot->lookup_duration));
	memset(snapshot->lookup_errors, 0, sizeof(snapshot->lookup_errors));
	memset(snapshot->url_refusals, 0, sizeof(snapshot->url_refusals));
	snapshot->response_bytes = 0;
	snapshot->connections_accepted = snapshot->connections_refused = 0;
	snapshot->streams_refused = snapshot->paced = 0;
	snapshot->lookups_in_flight = 0;
	snapshot->database_up = 0;
	if (metrics == NULL)
		return;

	uint64_t started = 0, finished = 0;
	for (unsigned w = 0; w < metrics->worker_count; w++) {
		struct metrics_worker *worker = &metrics->workers[w];
		for (unsigned s = 0; s < METRICS_STATUS_SLOTS; s++) {
			for (unsigned m = 0; m < METRICS_METHOD_COUNT; m++)
				snapshot->requests[s][m] += value_of(&worker->requests[s][m]);
		}
		snapshot->response_bytes += value_of(&worker->response_bytes);
		add_histogram(&snapshot->first_byte, &worker->first_byte);
		snapshot->connections_accepted += value_of(&worker->connections_accepted);
		snapshot->connections_refused += value_of(&worker->connections_refused);
		snapshot->streams_refused += value_of(&worker->streams_refused);
		snapshot->paced += value_of(&worker->paced);
		started += value_of(&worker->lookups_started);
		finished += value_of(&worker->lookups_finished);
		for (unsigned k = 0; k < METRICS_LOOKUP_ERROR_COUNT; k++)
			snapshot->lookup_errors[k] += value_of(&worker->lookup_errors[k]);
		for (unsigned r = 0; r < METRICS_URL_REFUSAL_COUNT; r++)
			snapshot->url_refusals[r] += value_of(&worker->url_refusals[r]);
	}
	/* Relaxed reads of two counters may see a lookup finished before it started. */
	snapshot->lookups_in_flight = started > finished ? started - finished : 0;
	for (unsigned t = 0; t < metrics->lookup_thread_count; t++)
		add_histogram(&snapshot->lookup_duration, &metrics->lookup_threads[t].duration);
	snapshot->database_up = atomic_load_explicit(&metrics->database_up, memory_order_relaxed);
}
