/*
 * task_pool: one lock, one condition, and per lane three lists of the
 * owners' tasks (continuations, starts, starts waiting for room). A thread
 * looks at the lanes in turn from where the last one stopped and takes the
 * first task of a lane below its thread cap, continuations first; taking a
 * start makes room for the oldest waiting one. Everything is counted under
 * the lock the lists need anyway, so a scrape reads figures that agree.
 */
#include "base/task_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

/* Where a task is (task->where). */
enum {
	TASK_NOWHERE,
	TASK_IN_CONTINUATIONS,
	TASK_IN_STARTS,
	TASK_IN_WAITING,
	TASK_RUNNING,
	TASK_SKIPPED,
};

struct task_list {
	struct task *first, *last;
	uint64_t count;
};

struct lane {
	struct task_list continuations, starts, waiting;
	unsigned running;
	uint64_t finished;
};

struct task_pool {
	struct task_pool_limits limits;
	pthread_mutex_t lock;
	pthread_cond_t work;	 /* a task may be taken, or stopping */
	pthread_cond_t finished; /* a thread ended a task, or exited */
	bool stopping;
	bool abandoning;	 /* tasks still running hand nothing back */
	bool orphaned;		 /* freed by its owner while a task never returned: the last
				    thread to exit frees it */
	unsigned next_lane;	 /* where the next look for work starts */
	unsigned threads_alive;	 /* threads not yet returned from their function */
	unsigned running;	 /* tasks being run, all lanes */
	unsigned handing_back;	 /* threads inside a done callback */
	uint64_t finished_count;
	struct metrics_histogram_snapshot wait;
	struct lane lanes[TASK_POOL_LANES_MAX];
	unsigned started; /* threads made */
	pthread_t threads[];
};

static void list_push(struct task_list *list, struct task *task, int where)
{
	task->next = NULL;
	task->previous = list->last;
	if (list->last != NULL)
		list->last->next = task;
	else
		list->first = task;
	list->last = task;
	list->count++;
	task->where = where;
}

static void list_remove(struct task_list *list, struct task *task)
{
	if (task->previous != NULL)
		task->previous->next = task->next;
	else
		list->first = task->next;
	if (task->next != NULL)
		task->next->previous = task->previous;
	else
		list->last = task->previous;
	task->next = task->previous = NULL;
	list->count--;
	task->where = TASK_NOWHERE;
}

static struct task *list_shift(struct task_list *list)
{
	struct task *task = list->first;
	if (task != NULL)
		list_remove(list, task);
	return task;
}

/* The next task a free thread may run, taken out of its list; NULL for none. Lock held. */
static struct task *take_next(struct task_pool *pool)
{
	unsigned lanes = pool->limits.lanes;
	for (unsigned step = 0; step < lanes; step++) {
		unsigned index = (pool->next_lane + step) % lanes;
		struct lane *lane = &pool->lanes[index];
		if (lane->running >= pool->limits.lane_threads)
			continue;
		struct task *task = list_shift(&lane->continuations);
		if (task == NULL && (task = list_shift(&lane->starts)) != NULL) {
			struct task *promoted = list_shift(&lane->waiting);
			if (promoted != NULL)
				list_push(&lane->starts, promoted, TASK_IN_STARTS);
		}
		if (task == NULL)
			continue;
		pool->next_lane = (index + 1) % lanes;
		lane->running++;
		pool->running++;
		task->where = TASK_RUNNING;
		return task;
	}
	return NULL;
}

static void count_wait(struct task_pool *pool, const struct task *task)
{
	pool->wait.buckets[metrics_bucket_of(clock_seconds_since(&task->queued_at))]++;
	pool->wait.sum_seconds += clock_seconds_since(&task->queued_at);
}

static void destroy(struct task_pool *pool)
{
	pthread_cond_destroy(&pool->finished);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}

static void *thread_main(void *arg)
{
	struct task_pool *pool = arg;
	pthread_mutex_lock(&pool->lock);
	for (;;) {
		struct task *task = NULL;
		while (!pool->stopping && (task = take_next(pool)) == NULL)
			pthread_cond_wait(&pool->work, &pool->lock);
		if (task == NULL)
			break; /* stopping: what is left is handed back by the quiesce */
		count_wait(pool, task);
		unsigned lane = task->lane;
		pthread_mutex_unlock(&pool->lock);

		task->run(task);

		pthread_mutex_lock(&pool->lock);
		/* Once abandoned, the owner's loop may be gone: nothing is handed back. */
		bool hand_back = !pool->abandoning;
		if (hand_back) {
			/* Counted: once abandoning, the quiesce still waits for this to end. */
			pool->handing_back++;
			pthread_mutex_unlock(&pool->lock);
			task->where = TASK_NOWHERE;
			task->done(task);
			pthread_mutex_lock(&pool->lock);
			pool->handing_back--;
		}
		pool->lanes[lane].running--;
		pool->lanes[lane].finished++;
		pool->running--;
		pool->finished_count++;
		/*
		 * No thread is woken for the slot this task freed in its lane: this one
		 * looks for work again at once, that lane's included. Only a quiesce waits.
		 */
		if (pool->stopping)
			pthread_cond_broadcast(&pool->finished);
	}
	bool last_of_orphan = --pool->threads_alive == 0 && pool->orphaned;
	pthread_cond_broadcast(&pool->finished);
	pthread_mutex_unlock(&pool->lock);
	if (last_of_orphan)
		destroy(pool);
	return NULL;
}

struct task_pool *task_pool_new(const struct task_pool_limits *limits, char *error,
				size_t error_size)
{
	if (limits->threads == 0 || limits->lanes == 0 || limits->lanes > TASK_POOL_LANES_MAX ||
	    limits->lane_threads == 0) {
		snprintf(error, error_size, "disk pool: %u threads, %u lanes: out of bounds",
			 limits->threads, limits->lanes);
		return NULL;
	}
	struct task_pool *pool = calloc(1, sizeof(*pool) + limits->threads * sizeof(pthread_t));
	if (pool == NULL) {
		snprintf(error, error_size, "disk pool: out of memory");
		return NULL;
	}
	pool->limits = *limits;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	/* The quiesce's wait is measured on the monotonic clock, as every deadline here is. */
	pthread_condattr_t monotonic;
	pthread_condattr_init(&monotonic);
	clock_condattr_monotonic(&monotonic);
	pthread_cond_init(&pool->finished, &monotonic);
	pthread_condattr_destroy(&monotonic);
	for (; pool->started < limits->threads; pool->started++) {
		pthread_mutex_lock(&pool->lock);
		pool->threads_alive++;
		pthread_mutex_unlock(&pool->lock);
		int failed = pthread_create(&pool->threads[pool->started], NULL, thread_main, pool);
		if (failed != 0) {
			pthread_mutex_lock(&pool->lock);
			pool->threads_alive--;
			pthread_mutex_unlock(&pool->lock);
			snprintf(error, error_size, "disk pool: cannot start thread %u: %s",
				 pool->started + 1, strerror(failed));
			task_pool_free(pool);
			return NULL;
		}
	}
	return pool;
}

int task_pool_submit(struct task_pool *pool, struct task *task)
{
	task->queued_at = clock_now();
	pthread_mutex_lock(&pool->lock);
	if (pool->stopping || task->lane >= pool->limits.lanes) {
		pthread_mutex_unlock(&pool->lock);
		return -1;
	}
	struct lane *lane = &pool->lanes[task->lane];
	if (task->kind == TASK_CONTINUE)
		list_push(&lane->continuations, task, TASK_IN_CONTINUATIONS);
	else if (lane->starts.count < pool->limits.queue_max)
		list_push(&lane->starts, task, TASK_IN_STARTS);
	else
		list_push(&lane->waiting, task, TASK_IN_WAITING);
	bool takeable = task->where != TASK_IN_WAITING;
	pthread_mutex_unlock(&pool->lock);
	/*
	 * Signalled after the unlock: the woken thread takes the lock at once
	 * instead of waking to find it held (a futex wait and a wake more). The
	 * pool outlives every submit (freed after its owners' loops end).
	 */
	if (takeable)
		pthread_cond_signal(&pool->work);
	return 0;
}

int task_pool_cancel(struct task_pool *pool, struct task *task)
{
	pthread_mutex_lock(&pool->lock);
	int taken = task->where == TASK_IN_WAITING;
	if (taken)
		list_remove(&pool->lanes[task->lane].waiting, task);
	pthread_mutex_unlock(&pool->lock);
	return taken;
}

int task_pool_skipped(const struct task *task)
{
	return task->where == TASK_SKIPPED;
}

/* Every task not yet taken, out of the lists, into skipped (in order). Lock held. */
static void take_all_queued(struct task_pool *pool, struct task_list *skipped)
{
	for (unsigned i = 0; i < pool->limits.lanes; i++) {
		struct lane *lane = &pool->lanes[i];
		struct task_list *lists[] = {&lane->continuations, &lane->starts, &lane->waiting};
		for (size_t j = 0; j < sizeof(lists) / sizeof(lists[0]); j++) {
			struct task *task;
			while ((task = list_shift(lists[j])) != NULL)
				list_push(skipped, task, TASK_SKIPPED);
		}
	}
}

unsigned task_pool_quiesce(struct task_pool *pool, unsigned wait_ms)
{
	struct task_list skipped = {0};
	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	take_all_queued(pool, &skipped);
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);

	/* Off the lists, nobody else reaches them: handed back without the lock. */
	struct task *task;
	while ((task = skipped.first) != NULL) {
		skipped.first = task->next;
		task->next = task->previous = NULL;
		task->where = TASK_SKIPPED;
		task->done(task);
	}

	struct timespec deadline = clock_deadline_after(wait_ms);
	pthread_mutex_lock(&pool->lock);
	while (pool->running > 0 &&
	       pthread_cond_timedwait(&pool->finished, &pool->lock, &deadline) != ETIMEDOUT) {
	}
	pool->abandoning = true;
	/* A hand-back under way finishes (an event_active): after it, nothing reaches the owners. */
	while (pool->handing_back > 0)
		pthread_cond_wait(&pool->finished, &pool->lock);
	unsigned abandoned = pool->running;
	pthread_mutex_unlock(&pool->lock);
	return abandoned;
}

void task_pool_free(struct task_pool *pool)
{
	if (pool == NULL)
		return;
	pthread_mutex_lock(&pool->lock);
	bool quiesced = pool->stopping;
	pthread_mutex_unlock(&pool->lock);
	if (!quiesced)
		task_pool_quiesce(pool, 0);
	pthread_mutex_lock(&pool->lock);
	bool stuck = pool->running > 0;
	if (stuck) {
		/*
		 * A thread is inside a task that has not returned: the threads are let go,
		 * and the last of them to return frees the pool (if the process lasts).
		 */
		pool->orphaned = true;
		for (unsigned i = 0; i < pool->started; i++)
			pthread_detach(pool->threads[i]);
	}
	pthread_mutex_unlock(&pool->lock);
	if (stuck)
		return;
	for (unsigned i = 0; i < pool->started; i++)
		pthread_join(pool->threads[i], NULL);
	destroy(pool);
}

struct task_pool_limits task_pool_limits_of(const struct task_pool *pool)
{
	return pool->limits;
}

void task_pool_collect(struct task_pool *pool, struct task_pool_stats *stats)
{
	pthread_mutex_lock(&pool->lock);
	stats->lanes = pool->limits.lanes;
	for (unsigned i = 0; i < pool->limits.lanes; i++) {
		const struct lane *lane = &pool->lanes[i];
		stats->lane[i] = (struct task_pool_lane_stats){
			.queued = lane->continuations.count + lane->starts.count,
			.waiting = lane->waiting.count,
			.running = lane->running,
			.finished = lane->finished,
		};
	}
	stats->wait = pool->wait;
	stats->finished = pool->finished_count;
	pthread_mutex_unlock(&pool->lock);
}
