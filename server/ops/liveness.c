/*
 * liveness: awaiting and checking the workers' heartbeats (see liveness.h).
 * The heartbeat itself (an event the main thread activates and the loop runs)
 * is the worker's.
 */
#include "ops/liveness.h"

#include <stdio.h>
#include <time.h>

#include "base/log.h"

#define AWAIT_POLL_NS (1000 * 1000)

/* The first worker that has not answered every heartbeat asked of it, or count. */
static unsigned first_unanswered(struct worker *workers, unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		if (!worker_answered(&workers[i]))
			return i;
	return count;
}

int liveness_await(struct worker *workers, unsigned count, unsigned timeout_ms, char *error,
		   size_t error_size)
{
	for (unsigned i = 0; i < count; i++)
		worker_ask_heartbeat(&workers[i]);
	unsigned long long waited_ns = 0;
	unsigned late;
	while ((late = first_unanswered(workers, count)) < count) {
		if (waited_ns >= (unsigned long long)timeout_ms * 1000 * 1000) {
			snprintf(error, error_size,
				 "%s did not start running its loop within %u ms", workers[late].role.name,
				 timeout_ms);
			return -1;
		}
		struct timespec pause = {.tv_nsec = AWAIT_POLL_NS};
		nanosleep(&pause, NULL);
		waited_ns += AWAIT_POLL_NS;
	}
	return 0;
}

bool liveness_tick(struct liveness_watch *watch, struct worker *workers, unsigned count)
{
	unsigned late = first_unanswered(workers, count);
	bool alive = late == count;
	if (!alive && !watch->stuck_reported) {
		log_warn("%s has not run its loop since the last watchdog tick: WATCHDOG=1 "
			 "is withheld until it does (systemd restarts musicd after WatchdogSec)",
			 workers[late].role.name);
		watch->stuck_reported = true;
	} else if (alive && watch->stuck_reported) {
		log_info("every worker runs its loop again: WATCHDOG=1 resumes");
		watch->stuck_reported = false;
	}
	for (unsigned i = 0; i < count; i++)
		worker_ask_heartbeat(&workers[i]);
	return alive;
}
