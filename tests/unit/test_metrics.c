/*
 * Unit tests for server/base/metrics.h: the per-thread shards and their sum. A
 * scrape sees the sum over every worker's and lookup thread's shard; a
 * status or method outside the counted sets lands in a bounded slot;
 * lookups in flight are those started and not yet finished; a finished
 * lookup's error kind is counted; database_up follows the last round trip;
 * a NULL shard counts nothing; and threads counting on their own shards at
 * once lose no event.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/metrics.h"

#define WORKERS 3
#define LOOKUP_THREADS 2
#define EVENTS_PER_THREAD 100000

struct fixture {
	struct metrics *metrics;
	struct metrics_snapshot *snapshot;
};

static int set_up(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->metrics = metrics_new(WORKERS, LOOKUP_THREADS);
	f->snapshot = calloc(1, sizeof(*f->snapshot));
	assert_non_null(f->metrics);
	assert_non_null(f->snapshot);
	*state = f;
	return 0;
}

static int tear_down(void **state)
{
	struct fixture *f = *state;
	metrics_free(f->metrics);
	free(f->snapshot);
	free(f);
	return 0;
}

static uint64_t requests(const struct metrics_snapshot *snapshot, int status,
			 enum metrics_method method)
{
	return snapshot->requests[status - METRICS_STATUS_MIN][method];
}

static void test_a_scrape_sums_every_workers_shard(void **state)
{
	struct fixture *f = *state;
	for (unsigned w = 0; w < WORKERS; w++) {
		struct metrics_worker *worker = metrics_worker(f->metrics, w);
		metrics_count_request(worker, METRICS_METHOD_GET, 200, 1000);
		metrics_count_connection(worker, 0);
	}
	metrics_count_request(metrics_worker(f->metrics, 1), METRICS_METHOD_HEAD, 200, 0);
	metrics_count_request(metrics_worker(f->metrics, 2), METRICS_METHOD_GET, 206, 10);
	metrics_count_connection(metrics_worker(f->metrics, 2), 1);
	metrics_count_stream_refused(metrics_worker(f->metrics, 1));
	metrics_count_stream_refused(metrics_worker(f->metrics, 2));
	metrics_count_paced(metrics_worker(f->metrics, 0));
	metrics_collect(f->metrics, f->snapshot);
	assert_int_equal(requests(f->snapshot, 200, METRICS_METHOD_GET), WORKERS);
	assert_int_equal(requests(f->snapshot, 200, METRICS_METHOD_HEAD), 1);
	assert_int_equal(requests(f->snapshot, 206, METRICS_METHOD_GET), 1);
	assert_int_equal(requests(f->snapshot, 304, METRICS_METHOD_GET), 0);
	assert_int_equal(f->snapshot->response_bytes, WORKERS * 1000 + 10);
	assert_int_equal(f->snapshot->connections_accepted, WORKERS + 1);
	assert_int_equal(f->snapshot->connections_refused, 1);
	assert_int_equal(f->snapshot->streams_refused, 2);
	assert_int_equal(f->snapshot->paced, 1);
}

static void test_a_status_or_method_outside_the_counted_sets_stays_bounded(void **state)
{
	struct fixture *f = *state;
	struct metrics_worker *worker = metrics_worker(f->metrics, 0);
	metrics_count_request(worker, METRICS_METHOD_COUNT + 5, 200, 0);
	metrics_count_request(worker, METRICS_METHOD_GET, 42, 0);
	metrics_count_request(worker, METRICS_METHOD_GET, 1000, 0);
	metrics_collect(f->metrics, f->snapshot);
	assert_int_equal(requests(f->snapshot, 200, METRICS_METHOD_OTHER), 1);
	assert_int_equal(requests(f->snapshot, METRICS_STATUS_MAX, METRICS_METHOD_GET), 2);
}

static void test_lookups_in_flight_are_started_less_finished_and_errors_count_by_kind(void **state)
{
	struct fixture *f = *state;
	struct metrics_worker *a = metrics_worker(f->metrics, 0);
	struct metrics_worker *b = metrics_worker(f->metrics, 1);
	for (int i = 0; i < 5; i++)
		metrics_lookup_started(a);
	metrics_lookup_started(b);
	metrics_lookup_finished(a, -1);
	metrics_lookup_finished(a, METRICS_LOOKUP_TIMEOUT);
	metrics_lookup_finished(b, METRICS_LOOKUP_UNAVAILABLE);
	metrics_count_lookup_error(b, METRICS_LOOKUP_REJECTED);
	metrics_collect(f->metrics, f->snapshot);
	assert_int_equal(f->snapshot->lookups_in_flight, 3);
	assert_int_equal(f->snapshot->lookup_errors[METRICS_LOOKUP_TIMEOUT], 1);
	assert_int_equal(f->snapshot->lookup_errors[METRICS_LOOKUP_UNAVAILABLE], 1);
	assert_int_equal(f->snapshot->lookup_errors[METRICS_LOOKUP_REJECTED], 1);
	assert_int_equal(f->snapshot->lookup_errors[METRICS_LOOKUP_ERROR], 0);
}

static void test_url_signing_refusals_are_summed_over_workers_by_reason(void **state)
{
	struct fixture *f = *state;
	metrics_count_url_refusal(metrics_worker(f->metrics, 0), METRICS_URL_EXPIRED);
	metrics_count_url_refusal(metrics_worker(f->metrics, 1), METRICS_URL_EXPIRED);
	metrics_count_url_refusal(metrics_worker(f->metrics, 1), METRICS_URL_MISSING);
	metrics_count_url_refusal(metrics_worker(f->metrics, 1), METRICS_URL_REFUSAL_COUNT);
	metrics_count_url_refusal(NULL, METRICS_URL_MISSING);
	metrics_collect(f->metrics, f->snapshot);
	assert_int_equal(f->snapshot->url_refusals[METRICS_URL_EXPIRED], 2);
	assert_int_equal(f->snapshot->url_refusals[METRICS_URL_MISSING], 1);
	assert_int_equal(f->snapshot->url_refusals[METRICS_URL_BAD_SIGNATURE], 0);
	metrics_collect(NULL, f->snapshot);
	assert_int_equal(f->snapshot->url_refusals[METRICS_URL_EXPIRED], 0);
}

static void test_histograms_sum_the_threads_observations(void **state)
{
	struct fixture *f = *state;
	metrics_observe_lookup(metrics_lookup_thread(f->metrics, 0), 0.0004);
	metrics_observe_lookup(metrics_lookup_thread(f->metrics, 1), 0.003);
	metrics_observe_lookup(metrics_lookup_thread(f->metrics, 1), 30);
	metrics_observe_first_byte(metrics_worker(f->metrics, 2), 0.02);
	metrics_collect(f->metrics, f->snapshot);
	const struct metrics_histogram_snapshot *lookups = &f->snapshot->lookup_duration;
	assert_int_equal(lookups->buckets[0], 1);
	assert_int_equal(lookups->buckets[metrics_bucket_of(0.003)], 1);
	assert_int_equal(lookups->buckets[METRICS_BUCKETS], 1);
	assert_float_equal(lookups->sum_seconds, 30.0034, 1e-6);
	assert_int_equal(f->snapshot->first_byte.buckets[metrics_bucket_of(0.02)], 1);
	assert_float_equal(f->snapshot->first_byte.sum_seconds, 0.02, 1e-6);
}

static void test_database_up_follows_the_last_round_trip(void **state)
{
	struct fixture *f = *state;
	metrics_collect(f->metrics, f->snapshot);
	assert_int_equal(f->snapshot->database_up, 0); /* no round trip yet */
	metrics_set_database_up(f->metrics, 1);
	metrics_collect(f->metrics, f->snapshot);
	assert_int_equal(f->snapshot->database_up, 1);
	metrics_set_database_up(f->metrics, 0);
	metrics_collect(f->metrics, f->snapshot);
	assert_int_equal(f->snapshot->database_up, 0);
}

static void test_a_null_shard_counts_nothing(void **state)
{
	struct fixture *f = *state;
	assert_null(metrics_worker(f->metrics, WORKERS));
	assert_null(metrics_lookup_thread(f->metrics, LOOKUP_THREADS));
	assert_null(metrics_worker(NULL, 0));
	metrics_count_request(NULL, METRICS_METHOD_GET, 200, 1);
	metrics_observe_first_byte(NULL, 1);
	metrics_count_connection(NULL, 1);
	metrics_lookup_started(NULL);
	metrics_lookup_finished(NULL, METRICS_LOOKUP_ERROR);
	metrics_count_lookup_error(NULL, METRICS_LOOKUP_REJECTED);
	metrics_observe_lookup(NULL, 1);
	metrics_set_database_up(NULL, 1);
	metrics_collect(f->metrics, f->snapshot);
	assert_int_equal(requests(f->snapshot, 200, METRICS_METHOD_GET), 0);
	assert_int_equal(f->snapshot->connections_accepted, 0);
	metrics_collect(NULL, f->snapshot);
	assert_int_equal(f->snapshot->response_bytes, 0);
}

static void *count_many(void *arg)
{
	struct metrics_worker *worker = arg;
	for (int i = 0; i < EVENTS_PER_THREAD; i++) {
		metrics_count_request(worker, METRICS_METHOD_GET, 200, 3);
		metrics_observe_first_byte(worker, 0.001);
	}
	return NULL;
}

static void test_threads_counting_at_once_on_their_own_shards_lose_nothing(void **state)
{
	struct fixture *f = *state;
	pthread_t threads[WORKERS];
	for (unsigned w = 0; w < WORKERS; w++)
		assert_int_equal(pthread_create(&threads[w], NULL, count_many,
						metrics_worker(f->metrics, w)),
				 0);
	/* A scrape meanwhile reads partial sums, never more than was counted. */
	metrics_collect(f->metrics, f->snapshot);
	assert_true(requests(f->snapshot, 200, METRICS_METHOD_GET) <=
		    (uint64_t)WORKERS * EVENTS_PER_THREAD);
	for (unsigned w = 0; w < WORKERS; w++)
		pthread_join(threads[w], NULL);
	metrics_collect(f->metrics, f->snapshot);
	assert_int_equal(requests(f->snapshot, 200, METRICS_METHOD_GET),
			 (uint64_t)WORKERS * EVENTS_PER_THREAD);
	assert_int_equal(f->snapshot->response_bytes, (uint64_t)WORKERS * EVENTS_PER_THREAD * 3);
	assert_int_equal(f->snapshot->first_byte.buckets[metrics_bucket_of(0.001)],
			 (uint64_t)WORKERS * EVENTS_PER_THREAD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_scrape_sums_every_workers_shard, set_up,
						tear_down),
		cmocka_unit_test_setup_teardown(
			test_a_status_or_method_outside_the_counted_sets_stays_bounded, set_up,
			tear_down),
		cmocka_unit_test_setup_teardown(
			test_lookups_in_flight_are_started_less_finished_and_errors_count_by_kind,
			set_up, tear_down),
		cmocka_unit_test_setup_teardown(test_url_signing_refusals_are_summed_over_workers_by_reason,
						set_up, tear_down),
		cmocka_unit_test_setup_teardown(test_histograms_sum_the_threads_observations, set_up,
						tear_down),
		cmocka_unit_test_setup_teardown(test_database_up_follows_the_last_round_trip, set_up,
						tear_down),
		cmocka_unit_test_setup_teardown(test_a_null_shard_counts_nothing, set_up, tear_down),
		cmocka_unit_test_setup_teardown(
			test_threads_counting_at_once_on_their_own_shards_lose_nothing, set_up,
			tear_down),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
