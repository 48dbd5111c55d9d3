/*
 * task_pool: a bounded set of threads for work that may wait as long as a
 * disk, a mount or a network filesystem takes (nginx's thread pools, for
 * `aio threads`, are the model: a task is posted with its handler and comes
 * back to the loop as an event, so the loop never waits).
 *
 * Tasks go into lanes (one per media root, and a few more: media/disk_io.h),
 * and a lane may occupy at most lane_threads of the threads at once: a mount
 * that hangs holds its own lane's threads and queue, never the others'.
 *
 * Two kinds of task:
 *   - a start (TASK_START: the first storage work of a request) waits in its
 *     lane's queue, of at most queue_max starts; a start that finds the queue
 *     full waits for room in the lane's waiting line, from which the owner
 *     may take it back (task_pool_cancel: the owner's deadline, then 503);
 *   - a continuation (TASK_CONTINUE: the next window of a stream already
 *     playing, a close) is never refused nor made to wait behind starts:
 *     threads take continuations first. Their number is bounded by the
 *     streams (each has at most one in flight), not by the queue.
 *
 * Threads take the lanes in turn, so a busy lane does not starve a quiet one.
 * Every task is the owner's memory, kept alive from task_pool_submit until
 * its done callback has run (or task_pool_cancel took it back): the pool
 * allocates nothing per task.
 */
#ifndef MUSICD_TASK_POOL_H
#define MUSICD_TASK_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/metrics_text.h"

/* The most lanes one pool has (media roots, and the pool's own few). */
#define TASK_POOL_LANES_MAX 40

enum task_kind {
	TASK_START,
	TASK_CONTINUE,
};

struct task;

/* On a pool thread: the work (it may block), then the hand-back (it must not). */
typedef void (*task_fn)(struct task *task);

/* One task; its owner fills run, done, lane and kind. The rest is the pool's. */
struct task {
	task_fn run;
	task_fn done; /* right after run, on the same thread: e.g. event_active on the owner's loop */
	unsigned lane;
	enum task_kind kind;
	/* The pool's: */
	struct task *next, *previous;
	int where; /* which list holds it, or running */
	struct timespec queued_at;
};

struct task_pool_limits {
	unsigned threads;      /* threads in all */
	unsigned lane_threads; /* the most threads one lane occupies at once */
	unsigned queue_max;    /* starts queued per lane; more wait for room */
	unsigned lanes;	       /* lanes 0 .. lanes - 1 */
};

/* A lane's figures at one moment. */
struct task_pool_lane_stats {
	uint64_t queued;  /* starts and continuations waiting for a thread */
	uint64_t waiting; /* starts waiting for room in the queue */
	uint64_t running; /* tasks a thread is running */
	uint64_t finished; /* tasks run to their end (or skipped), all along */
};

/* The pool's figures at one moment (a scrape's). */
struct task_pool_stats {
	unsigned lanes;
	struct task_pool_lane_stats lane[TASK_POOL_LANES_MAX];
	struct metrics_histogram_snapshot wait; /* from submit until a thread took it */
	uint64_t finished;			/* tasks run to their end */
};

struct task_pool;

/* Starts the threads; NULL with a message in error. */
struct task_pool *task_pool_new(const struct task_pool_limits *limits, char *error,
				size_t error_size);

/*
 * Queues task (in its lane's queue, or a start beyond queue_max in the lane's
 * waiting line); 0, or -1 when the pool is stopping (nothing queued).
 */
int task_pool_submit(struct task_pool *pool, struct task *task);

/*
 * Takes back a start still waiting for room in its queue: 1 when taken back
 * (its callbacks will not run), 0 when it is queued, running or done (its
 * done callback runs, or ran).
 */
int task_pool_cancel(struct task_pool *pool, struct task *task);

/*
 * Stops taking tasks (later submits fail), hands back every task not yet
 * taken without running it (its done callback runs on the calling thread;
 * the owner sees task_pool_skipped), and waits up to wait_ms for the running
 * ones. A task still running then (a read that never returns) is abandoned:
 * its done callback never runs, so the owners' loops may go. Returns how many
 * were abandoned.
 */
unsigned task_pool_quiesce(struct task_pool *pool, unsigned wait_ms);

/*
 * Quiesces the pool (with no wait) if that was not done, then frees it, unless
 * a thread is still inside an abandoned task: then the pool is left to the
 * ending process (its thread may still return into it).
 */
void task_pool_free(struct task_pool *pool);

/* True in a done callback when the pool stopped before running the task. */
int task_pool_skipped(const struct task *task);

/* The limits the pool was made with. */
struct task_pool_limits task_pool_limits_of(const struct task_pool *pool);

/* Fills stats (from any thread). */
void task_pool_collect(struct task_pool *pool, struct task_pool_stats *stats);

#endif
