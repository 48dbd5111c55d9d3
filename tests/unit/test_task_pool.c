/*
 * Unit tests for server/base/task_pool.h, as a specification of the pool the
 * disk work runs on: every task runs and is handed back once; a lane never
 * occupies more than its share of the threads, so a lane whose work hangs
 * leaves the others running; starts beyond a lane's queue wait for room and
 * may be taken back, continuations are never refused and go first; a stop
 * hands back what was not run and abandons what never returns, without
 * handing it back later.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "base/task_pool.h"

#define WAIT_STEP_NS (1000 * 1000)
#define WAIT_LIMIT_STEPS 5000 /* 5 s: every wait here is bounded */

/* A task that blocks until its gate opens, and records what happened to it. */
struct probe {
	struct task task;
	_Atomic bool *gate; /* NULL: returns at once */
	_Atomic int runs, dones, skipped;
	_Atomic int *order; /* where it ran, among the probes sharing order_next */
	_Atomic int *order_next;
	int ran_as;
};

static void probe_run(struct task *task)
{
	struct probe *probe = (struct probe *)task;
	atomic_fetch_add(&probe->runs, 1);
	if (probe->order_next != NULL)
		probe->ran_as = atomic_fetch_add(probe->order_next, 1);
	for (int i = 0; probe->gate != NULL && !atomic_load(probe->gate) && i < WAIT_LIMIT_STEPS;
	     i++) {
		struct timespec pause = {0, WAIT_STEP_NS};
		nanosleep(&pause, NULL);
	}
}

static void probe_done(struct task *task)
{
	struct probe *probe = (struct probe *)task;
	if (task_pool_skipped(task))
		atomic_fetch_add(&probe->skipped, 1);
	atomic_fetch_add(&probe->dones, 1);
}

static void probe_init(struct probe *probe, unsigned lane, enum task_kind kind, _Atomic bool *gate)
{
	memset(probe, 0, sizeof(*probe));
	probe->task = (struct task){.run = probe_run, .done = probe_done, .lane = lane, .kind = kind};
	probe->gate = gate;
}

static void wait_for(_Atomic int *counter, int value)
{
	for (int i = 0; atomic_load(counter) < value && i < WAIT_LIMIT_STEPS; i++) {
		struct timespec pause = {0, WAIT_STEP_NS};
		nanosleep(&pause, NULL);
	}
	assert_true(atomic_load(counter) >= value);
}

static struct task_pool *new_pool(unsigned threads, unsigned lane_threads, unsigned queue_max,
				  unsigned lanes)
{
	char error[128];
	struct task_pool_limits limits = {threads, lane_threads, queue_max, lanes};
	struct task_pool *pool = task_pool_new(&limits, error, sizeof(error));
	assert_non_null(pool);
	return pool;
}

static void test_every_task_runs_and_is_handed_back_once(void **state)
{
	(void)state;
	struct task_pool *pool = new_pool(4, 4, 100, 2);
	struct probe probes[50];
	for (size_t i = 0; i < 50; i++) {
		probe_init(&probes[i], (unsigned)(i % 2), i % 3 ? TASK_START : TASK_CONTINUE, NULL);
		assert_int_equal(task_pool_submit(pool, &probes[i].task), 0);
	}
	for (size_t i = 0; i < 50; i++)
		wait_for(&probes[i].dones, 1);
	assert_int_equal(task_pool_quiesce(pool, 1000), 0);
	task_pool_free(pool);
	for (size_t i = 0; i < 50; i++) {
		assert_int_equal(probes[i].runs, 1);
		assert_int_equal(probes[i].dones, 1);
		assert_int_equal(probes[i].skipped, 0);
	}
}

static void test_a_hung_lane_holds_only_its_share_of_the_threads(void **state)
{
	(void)state;
	/* 4 threads, 3 a lane at most: lane 0's hung work leaves a thread to lane 1. */
	struct task_pool *pool = new_pool(4, 3, 100, 2);
	_Atomic bool hung = false;
	struct probe stuck[5], quick[3];
	for (size_t i = 0; i < 5; i++) {
		probe_init(&stuck[i], 0, TASK_START, &hung);
		assert_int_equal(task_pool_submit(pool, &stuck[i].task), 0);
	}
	for (size_t i = 0; i < 3; i++) {
		probe_init(&quick[i], 1, TASK_START, NULL);
		assert_int_equal(task_pool_submit(pool, &quick[i].task), 0);
	}
	for (size_t i = 0; i < 3; i++)
		wait_for(&quick[i].dones, 1);
	struct task_pool_stats stats;
	task_pool_collect(pool, &stats);
	assert_int_equal(stats.lane[0].running, 3); /* never more than its cap */
	assert_int_equal(stats.lane[0].queued, 2);
	assert_int_equal(stuck[3].runs + stuck[4].runs, 0);
	atomic_store(&hung, true);
	for (size_t i = 0; i < 5; i++)
		wait_for(&stuck[i].dones, 1);
	task_pool_free(pool);
}

static void test_starts_beyond_the_queue_wait_for_room_and_may_be_taken_back(void **state)
{
	(void)state;
	struct task_pool *pool = new_pool(1, 1, 2, 1);
	_Atomic bool open = false;
	struct probe busy, queued[2], waiting[2];
	probe_init(&busy, 0, TASK_START, &open);
	assert_int_equal(task_pool_submit(pool, &busy.task), 0);
	wait_for(&busy.runs, 1); /* the one thread is taken */
	for (size_t i = 0; i < 2; i++) {
		probe_init(&queued[i], 0, TASK_START, NULL);
		probe_init(&waiting[i], 0, TASK_START, NULL);
	}
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(task_pool_submit(pool, &queued[i].task), 0);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(task_pool_submit(pool, &waiting[i].task), 0);
	struct task_pool_stats stats;
	task_pool_collect(pool, &stats);
	assert_int_equal(stats.lane[0].queued, 2);
	assert_int_equal(stats.lane[0].waiting, 2);
	/* A queued start cannot be taken back; a waiting one can, once. */
	assert_int_equal(task_pool_cancel(pool, &queued[0].task), 0);
	assert_int_equal(task_pool_cancel(pool, &waiting[1].task), 1);
	assert_int_equal(task_pool_cancel(pool, &waiting[1].task), 0);
	atomic_store(&open, true);
	wait_for(&waiting[0].dones, 1); /* promoted into the queue as room was made, then run */
	wait_for(&queued[1].dones, 1);
	task_pool_collect(pool, &stats);
	assert_int_equal(stats.lane[0].waiting, 0);
	task_pool_free(pool);
	assert_int_equal(waiting[1].runs + waiting[1].dones, 0); /* taken back: nothing ran */
}

static void test_continuations_are_never_refused_and_go_before_starts(void **state)
{
	(void)state;
	struct task_pool *pool = new_pool(1, 1, 1, 1);
	_Atomic bool open = false;
	_Atomic int next = 0;
	struct probe busy, starts[3], continuations[3];
	probe_init(&busy, 0, TASK_START, &open);
	assert_int_equal(task_pool_submit(pool, &busy.task), 0);
	wait_for(&busy.runs, 1);
	for (size_t i = 0; i < 3; i++) {
		probe_init(&starts[i], 0, TASK_START, NULL);
		starts[i].order_next = &next;
		assert_int_equal(task_pool_submit(pool, &starts[i].task), 0);
	}
	for (size_t i = 0; i < 3; i++) {
		probe_init(&continuations[i], 0, TASK_CONTINUE, NULL);
		continuations[i].order_next = &next;
		assert_int_equal(task_pool_submit(pool, &continuations[i].task), 0);
	}
	struct task_pool_stats stats;
	task_pool_collect(pool, &stats);
	assert_int_equal(stats.lane[0].queued, 4); /* one start and every continuation */
	assert_int_equal(stats.lane[0].waiting, 2);
	atomic_store(&open, true);
	for (size_t i = 0; i < 3; i++) {
		wait_for(&starts[i].dones, 1);
		wait_for(&continuations[i].dones, 1);
	}
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(continuations[i].ran_as, (int)i);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(starts[i].ran_as, 3 + (int)i);
	task_pool_free(pool);
}

static void test_a_stop_hands_back_the_unrun_and_abandons_the_hung(void **state)
{
	(void)state;
	struct task_pool *pool = new_pool(1, 1, 10, 1);
	_Atomic bool never = false;
	struct probe hung, queued[3];
	probe_init(&hung, 0, TASK_START, &never);
	assert_int_equal(task_pool_submit(pool, &hung.task), 0);
	wait_for(&hung.runs, 1);
	for (size_t i = 0; i < 3; i++) {
		probe_init(&queued[i], 0, i ? TASK_START : TASK_CONTINUE, NULL);
		assert_int_equal(task_pool_submit(pool, &queued[i].task), 0);
	}
	assert_int_equal(task_pool_quiesce(pool, 50), 1);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(queued[i].runs, 0);
		assert_int_equal(queued[i].dones, 1);
		assert_int_equal(queued[i].skipped, 1);
	}
	struct probe late;
	probe_init(&late, 0, TASK_START, NULL);
	assert_int_equal(task_pool_submit(pool, &late.task), -1);
	task_pool_free(pool); /* left to the thread still inside the hung task */
	atomic_store(&never, true);
	/* The hung task returns now, into an abandoned pool: its done never runs. */
	struct timespec pause = {0, 50 * WAIT_STEP_NS};
	nanosleep(&pause, NULL);
	assert_int_equal(hung.dones, 0);
}

static void test_the_wait_for_a_thread_is_counted(void **state)
{
	(void)state;
	struct task_pool *pool = new_pool(2, 2, 10, 1);
	struct probe probes[5];
	for (size_t i = 0; i < 5; i++) {
		probe_init(&probes[i], 0, TASK_START, NULL);
		assert_int_equal(task_pool_submit(pool, &probes[i].task), 0);
	}
	for (size_t i = 0; i < 5; i++)
		wait_for(&probes[i].dones, 1);
	struct task_pool_stats stats;
	task_pool_collect(pool, &stats);
	uint64_t counted = 0;
	for (unsigned i = 0; i <= METRICS_BUCKETS; i++)
		counted += stats.wait.buckets[i];
	assert_int_equal(counted, 5);
	task_pool_free(pool);
	assert_int_equal(stats.lanes, 1);
}

static void test_limits_out_of_bounds_are_refused(void **state)
{
	(void)state;
	char error[128];
	struct task_pool_limits none = {0, 1, 1, 1}, lanes = {1, 1, 1, TASK_POOL_LANES_MAX + 1};
	assert_null(task_pool_new(&none, error, sizeof(error)));
	assert_null(task_pool_new(&lanes, error, sizeof(error)));
	assert_non_null(strstr(error, "lanes"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_task_runs_and_is_handed_back_once),
		cmocka_unit_test(test_a_hung_lane_holds_only_its_share_of_the_threads),
		cmocka_unit_test(test_starts_beyond_the_queue_wait_for_room_and_may_be_taken_back),
		cmocka_unit_test(test_continuations_are_never_refused_and_go_before_starts),
		cmocka_unit_test(test_a_stop_hands_back_the_unrun_and_abandons_the_hung),
		cmocka_unit_test(test_the_wait_for_a_thread_is_counted),
		cmocka_unit_test(test_limits_out_of_bounds_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
