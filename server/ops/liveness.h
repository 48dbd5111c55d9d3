/*
 * liveness: whether every worker's loop runs, from the main thread, through
 * the workers' heartbeats. At start-up musicd says READY=1 only once each
 * loop has answered one; while it runs, the watchdog's WATCHDOG=1 goes out
 * only while each loop answers, so systemd restarts a musicd whose worker is
 * stuck instead of watching a main thread that is fine on its own.
 */
#ifndef MUSICD_LIVENESS_H
#define MUSICD_LIVENESS_H

#include <stdbool.h>

#include "ops/worker.h"

/*
 * Asks each worker for a heartbeat and waits, up to timeout_ms, until all
 * have answered. 0, or -1 with a message naming the first that has not.
 */
int liveness_await(struct worker *workers, unsigned count, unsigned timeout_ms, char *error,
		   size_t error_size);

/* What a watchdog tick found, and what the next one must remember. */
struct liveness_watch {
	bool stuck_reported; /* a warning for the current stuck spell is written */
};

/*
 * At a watchdog tick: true when every worker answered the heartbeat asked at
 * the tick before (then ping the watchdog). Asks for the next one either way.
 * Logs one warning when a worker stops answering and one when all answer again.
 */
bool liveness_tick(struct liveness_watch *watch, struct worker *workers, unsigned count);

#endif
