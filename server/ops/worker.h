/*
 * worker: one thread running one event_base, with its own exchange server
 * (evhttp on its own SO_REUSEPORT listening socket). Everything a request
 * touches on its way in and out (evhttp objects, exchanges, timers) belongs
 * to exactly one worker.
 */
#ifndef MUSICD_WORKER_H
#define MUSICD_WORKER_H

#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "wire/exchange.h"
#include "respond/service.h"

struct worker {
	unsigned index;
	const struct service *service;
	struct exchange_settings settings; /* what its exchange server reads */
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
	struct event *housekeeping; /* worker 0 only: closes idle cached files */
	struct event *drain_deadline;
};

/*
 * Builds the worker's loop and exchange server around listen_fd (taken
 * over). open_connections is shared by every worker, for --max-connections.
 * -1 with a message.
 */
int worker_init(struct worker *worker, unsigned index, const struct service *service,
		atomic_uint *open_connections, int listen_fd, char *error, size_t error_size);

/* Runs the loop on a new thread, named "worker N" (as top -H and /proc show it). */
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

/* Waits for the worker's thread to return. */
void worker_join(struct worker *worker);

/* After the lookup pool stopped: runs the results it handed back, so their exchanges end. */
void worker_flush(struct worker *worker);

/* Closes remaining connections and frees everything (after worker_join). */
void worker_destroy(struct worker *worker);

#endif
