/*
 * Unit tests for server/db/db_pool.h, the hand-back half (with find_track.h
 * lookups as the jobs): every submitted job
 * comes back exactly once, on its submitter's loop, through the delivery
 * event the submitter made (so handing back allocates nothing and cannot
 * drop a job); a database that cannot be reached answers UNAVAILABLE within
 * the deadline; stopping the pool answers queued jobs; a full queue refuses.
 * The database here is an address nothing listens on: no server is needed.
 */
#include <event2/event.h>
#include <event2/thread.h>
#include <mongoc/mongoc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "config/config.h"
#include "db/db_pool.h"
#include "db/find_track.h"

#define MID "65f0c0ffee0000000000abcd"
#define JOBS 6
#define TIMEOUT_MS 300

struct fixture {
	struct config config;
	struct event_base *base;
	struct track_lookup jobs[JOBS];
	unsigned delivered[JOBS];
};

static struct fixture *current;

static void on_delivered(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	struct track_lookup *job = arg;
	current->delivered[job - current->jobs]++;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	config_init(&f->config);
	char error[256];
	/* Port 1 on loopback: connections are refused at once. */
	assert_int_equal(config_set(&f->config, "mongodb-uri", "mongodb://127.0.0.1:1", error,
				    sizeof(error)),
			 0);
	f->config.lookup_threads = 2;
	f->config.lookup_timeout_ms = TIMEOUT_MS;
	f->base = event_base_new();
	assert_non_null(f->base);
	for (size_t i = 0; i < JOBS; i++) {
		struct track_lookup *job = &f->jobs[i];
		find_track_prepare(job, FIND_TRACK, MID, &f->config, TIMEOUT_MS);
		job->job.delivery = event_new(f->base, -1, 0, on_delivered, job);
		assert_non_null(job->job.delivery);
	}
	current = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	for (size_t i = 0; i < JOBS; i++)
		event_free(f->jobs[i].job.delivery);
	event_base_free(f->base);
	config_free(&f->config);
	free(f);
	return 0;
}

static unsigned delivered_count(const struct fixture *f)
{
	unsigned total = 0;
	for (size_t i = 0; i < JOBS; i++)
		total += f->delivered[i];
	return total;
}

/* Runs the loop until want jobs came back or about ten deadlines passed. */
static void run_until_delivered(struct fixture *f, unsigned want)
{
	struct timespec give_up = clock_deadline_after(TIMEOUT_MS * 10);
	while (delivered_count(f) < want && clock_ms_until(&give_up) > 0) {
		struct timeval tick = {.tv_sec = 0, .tv_usec = 10000};
		event_base_loopexit(f->base, &tick);
		event_base_dispatch(f->base);
	}
}

static void test_every_job_comes_back_once_as_unavailable(void **state)
{
	struct fixture *f = *state;
	char error[256];
	struct db_pool *pool = db_pool_start(&f->config, JOBS, NULL, error, sizeof(error));
	assert_non_null(pool);
	for (size_t i = 0; i < JOBS; i++) {
		f->jobs[i].job.deadline = clock_deadline_after(TIMEOUT_MS);
		assert_int_equal(db_pool_submit(pool, &f->jobs[i].job), 0);
	}
	run_until_delivered(f, JOBS);
	for (size_t i = 0; i < JOBS; i++) {
		assert_int_equal(f->delivered[i], 1);
		assert_int_equal(f->jobs[i].job.status, LOOKUP_UNAVAILABLE);
		assert_int_equal(f->jobs[i].document.path[0], '\0');
	}
	db_pool_stop(pool);
	event_base_loop(f->base, EVLOOP_NONBLOCK);
	assert_int_equal(delivered_count(f), JOBS);
}

static void test_a_full_queue_refuses_the_next_job(void **state)
{
	struct fixture *f = *state;
	char error[256];
	struct db_pool *pool = db_pool_start(&f->config, 2, NULL, error, sizeof(error));
	assert_non_null(pool);
	for (size_t i = 0; i < 2; i++) {
		f->jobs[i].job.deadline = clock_deadline_after(TIMEOUT_MS);
		assert_int_equal(db_pool_submit(pool, &f->jobs[i].job), 0);
	}
	f->jobs[2].job.deadline = clock_deadline_after(TIMEOUT_MS);
	assert_int_equal(db_pool_submit(pool, &f->jobs[2].job), -1);
	run_until_delivered(f, 2);
	assert_int_equal(f->delivered[2], 0);
	db_pool_stop(pool);
	event_base_loop(f->base, EVLOOP_NONBLOCK);
	assert_int_equal(delivered_count(f), 2);
}

static void test_stopping_answers_queued_jobs(void **state)
{
	struct fixture *f = *state;
	char error[256];
	f->config.lookup_threads = 1;
	f->config.lookup_timeout_ms = 60000; /* nothing finishes on its own during the test */
	struct db_pool *pool = db_pool_start(&f->config, JOBS, NULL, error, sizeof(error));
	assert_non_null(pool);
	for (size_t i = 0; i < JOBS; i++) {
		f->jobs[i].job.deadline = clock_deadline_after(60000);
		assert_int_equal(db_pool_submit(pool, &f->jobs[i].job), 0);
	}
	db_pool_stop(pool);
	event_base_loop(f->base, EVLOOP_NONBLOCK);
	for (size_t i = 0; i < JOBS; i++) {
		assert_int_equal(f->delivered[i], 1);
		assert_int_equal(f->jobs[i].job.status, LOOKUP_UNAVAILABLE);
	}
}

static void test_a_job_whose_deadline_passed_in_the_queue_is_not_run(void **state)
{
	struct fixture *f = *state;
	char error[256];
	struct db_pool *pool = db_pool_start(&f->config, JOBS, NULL, error, sizeof(error));
	assert_non_null(pool);
	f->jobs[0].job.deadline = clock_deadline_after(0);
	assert_int_equal(db_pool_submit(pool, &f->jobs[0].job), 0);
	run_until_delivered(f, 1);
	assert_int_equal(f->delivered[0], 1);
	assert_int_equal(f->jobs[0].job.status, LOOKUP_UNAVAILABLE);
	assert_string_equal(f->jobs[0].job.detail, "deadline passed while queued");
	db_pool_stop(pool);
}

int main(void)
{
	mongoc_log_set_handler(NULL, NULL);
	mongoc_init();
	evthread_use_pthreads();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_every_job_comes_back_once_as_unavailable, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_full_queue_refuses_the_next_job, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stopping_answers_queued_jobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_job_whose_deadline_passed_in_the_queue_is_not_run,
						setup, teardown),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	mongoc_cleanup();
	libevent_global_shutdown();
	return failed;
}
