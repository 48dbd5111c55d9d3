/*
 * pool: one mutex, two condition variables. Readers take the next index
 * under the lock and read with it released; the main thread waits on one
 * item at a time, in order.
 */
#include "pool.h"

#include "reader.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static void *reader_thread(void *arg)
{
	struct pool *pool = arg;
	pthread_mutex_lock(&pool->lock);
	while (1) {
		while (!pool->stopping && pool->next < pool->count &&
		       pool->next >= pool->released + pool->window)
			pthread_cond_wait(&pool->room, &pool->lock);
		if (pool->stopping || pool->next >= pool->count)
			break;
		struct pool_item *item = &pool->items[pool->next++];
		pthread_mutex_unlock(&pool->lock);

		struct track track;
		char reason[POOL_REASON_MAX] = "";
		int status = reader_read(item->path, pool->want_hash, &track, reason, sizeof(reason));

		pthread_mutex_lock(&pool->lock);
		item->track = track;
		item->status = status;
		memcpy(item->reason, reason, sizeof(reason));
		item->done = true;
		/* Wake the main thread only for the items it waits on: no switch per file. */
		size_t index = (size_t)(item - pool->items);
		if (index == pool->awaited || index == pool->awaited_last)
			pthread_cond_signal(&pool->item_done);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

int pool_start(struct pool *pool, struct pool_item *items, size_t count, unsigned jobs,
	       size_t window, bool want_hash)
{
	memset(pool, 0, sizeof(*pool));
	pool->window = window ? window : 1;
	pool->awaited = pool->awaited_last = SIZE_MAX;
	pool->items = items;
	pool->count = count;
	pool->want_hash = want_hash;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->item_done, NULL);
	pthread_cond_init(&pool->room, NULL);
	if (jobs > IMPORT_MAX_JOBS)
		jobs = IMPORT_MAX_JOBS;
	if (jobs > count)
		jobs = count ? (unsigned)count : 1;
	for (unsigned i = 0; i < jobs; i++) {
		if (pthread_create(&pool->threads[i], NULL, reader_thread, pool) != 0)
			break;
		pool->thread_count++;
	}
	return pool->thread_count > 0 ? 0 : -1;
}

struct pool_item *pool_wait(struct pool *pool, size_t index, unsigned timeout_ms)
{
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	struct pool_item *item = &pool->items[index];
	pthread_mutex_lock(&pool->lock);
	if (!item->done) {
		/* The last of the items readers reach before the next pool_release. */
		size_t last = index + POOL_WAKE_AHEAD, reachable = pool->released + pool->window;
		if (last >= reachable)
			last = reachable - 1;
		if (last >= pool->count)
			last = pool->count - 1;
		if (last < index)
			last = index;
		pool->awaited = index;
		pool->awaited_last = last;
		while (!item->done || !pool->items[last].done) {
			if (pthread_cond_timedwait(&pool->item_done, &pool->lock, &deadline) ==
			    ETIMEDOUT)
				break;
		}
		pool->awaited = pool->awaited_last = SIZE_MAX;
	}
	bool done = item->done;
	pthread_mutex_unlock(&pool->lock);
	return done ? item : NULL;
}

void pool_release(struct pool *pool, size_t up_to)
{
	pthread_mutex_lock(&pool->lock);
	for (size_t i = pool->released; i < up_to && i < pool->count; i++) {
		if (pool->items[i].done)
			track_free(&pool->items[i].track);
	}
	if (up_to > pool->released)
		pool->released = up_to;
	pthread_cond_broadcast(&pool->room);
	pthread_mutex_unlock(&pool->lock);
}

void pool_stop(struct pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	pthread_cond_broadcast(&pool->room);
	pthread_mutex_unlock(&pool->lock);
	for (unsigned i = 0; i < pool->thread_count; i++)
		pthread_join(pool->threads[i], NULL);
	pool_release(pool, pool->count);
	pthread_cond_destroy(&pool->room);
	pthread_cond_destroy(&pool->item_done);
	pthread_mutex_destroy(&pool->lock);
}
