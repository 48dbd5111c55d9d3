/*
 * worker: one thread running one event_base, with its own exchange server
 * (evhttp on its own SO_REUSEPORT listening socket) answering one listener's
 * routes: the track listener's workers, and the metrics listener's one.
 * Everything a request touches on its way in and out (evhttp objects,
 * exchanges, timers) belongs to exactly one worker. Each loop has a
 * heartbeat, by which the main thread knows it runs.
 */
#ifndef MUSICD_WORKER_H
#define MUSICD_WORKER_H

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "media/file_cache.h"
#include "wire/exchange.h"

/* What a worker serves; its exchange settings outlive it (the worker keeps a copy). */
struct worker_role {
	char name[16];			    /* its thread's ("worker 3", "metrics"), as top -H shows it */
	struct exchange_settings settings;  /* snapshots, connection cap, counters */
	exchange_request_cb on_request;	    /* its routes (respond/routes.h) */
	void *arg;
	struct file_cache *sweeps;	    /* the cache it closes idle files of; NULL: none */
};

struct worker {
	struct worker_role role;
	struct event_base *base;
	struct exchange_server *server;
	pthread_t thread;
	int thread_running;

	/*
	 * The heartbeat: the main thread asks (event_active on it), the loop
	 * answers by running it. A loop that has not answered is stuck.
	 */
	struct event *heartbeat;
	atomic_uint heartbeats_asked;
	atomic_uint heartbeats_answered;

	/* Worker-thread only. */
	unsigned grace_ms;
	struct event *housekeeping; /* with role.sweeps: closes idle cached files */
	struct event *drain_deadline;
};

/* Builds the worker's loop and exchange server around listen_fd (taken over). -1 with a message. */
int worker_init(struct worker *worker, const struct worker_role *role, int listen_fd,
		char *error, size_t error_size);

/* Runs the loop on a new thread, named after the role. */
int worker_start(struct worker *worker);

/* From any thread: asks the worker's loop to run its heartbeat once more. */
void worker_ask_heartbeat(struct worker *worker);

/* True when the worker's loop has run every heartbeat asked of it so far. */
bool worker_answered(struct worker *worker);

/*
 * From any thread: drain (exchange_server_drain: stop accepting, answer what
 * is on its way, close idle connections gracefully) for up to grace_ms, then
 * exit the loop.
 */
void worker_request_stop(struct worker *worker, unsigned grace_ms);

/*
 * Liveness, from the main thread, through the workers' heartbeats: musicd
 * says READY=1 only once each loop has answered one (worker_await_running),
 * and while it runs, the watchdog's WATCHDOG=1 goes out only while each loop
 * answers (worker_tick), so systemd restarts a musicd whose worker is stuck
 * instead of watching a main thread that is fine on its own.
 */
/*
 * Asks each worker for a heartbeat and waits, up to timeout_ms, until all
 * have answered. 0, or -1 with a message naming the first that has not.
 */
int worker_await_running(struct worker *workers, unsigned count, unsigned timeout_ms, char *error,
		   size_t error_size);

/* What a watchdog tick found, and what the next one must remember. */
struct worker_watch {
	bool stuck_reported; /* a warning for the current stuck spell is written */
};

/*
 * At a watchdog tick: true when every worker answered the heartbeat asked at
 * the tick before (then ping the watchdog). Asks for the next one either way.
 * Logs one warning when a worker stops answering and one when all answer again.
 */
bool worker_tick(struct worker_watch *watch, struct worker *workers, unsigned count);

/* Waits for the worker's thread to return. */
void worker_join(struct worker *worker);

/* After the database pool stopped: runs the results it handed back, so their exchanges end. */
void worker_flush(struct worker *worker);

/* Closes remaining connections and frees everything (after worker_join). */
void worker_destroy(struct worker *worker);

#endif
