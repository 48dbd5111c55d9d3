/*
 * worker: one thread running one event_base with its own evhttp on its own
 * SO_REUSEPORT listening socket. Everything a request touches on its way in
 * and out (evhttp objects, exchanges, timers) belongs to exactly one worker.
 */
#ifndef MUSICD_WORKER_H
#define MUSICD_WORKER_H

#include <event2/event.h>
#include <event2/http.h>
#include <pthread.h>
#include <sys/time.h>

#include "service.h"
#include "validators.h"

struct worker {
	unsigned index;
	const struct service *service;
	struct event_base *base;
	struct evhttp *http;
	struct evhttp_bound_socket *listener; /* NULL once accepting stopped */
	pthread_t thread;
	int thread_running;

	struct timeval idle_timeout; /* reading a request, keep-alive idle */
	struct timeval send_timeout; /* no progress while sending a body */

	/* Worker-thread only. */
	unsigned live_exchanges;
	int draining;
	unsigned grace_ms;
	struct event *housekeeping; /* worker 0 only: closes idle cached files */
	time_t date_second;	    /* the second date_text shows */
	char date_text[HTTP_DATE_MAX];
	struct event *drain_deadline;
};

/* Builds the worker's loop and evhttp around listen_fd (taken over). -1 with a message. */
int worker_init(struct worker *worker, unsigned index, const struct service *service,
		int listen_fd, char *error, size_t error_size);

/* Runs the loop on a new thread. */
int worker_start(struct worker *worker);

/* From any thread: stop accepting, let responses in flight end (up to grace_ms), then exit the loop. */
void worker_request_stop(struct worker *worker, unsigned grace_ms);

/* Waits for the worker's thread to return. */
void worker_join(struct worker *worker);

/* After the lookup pool stopped: runs the results it handed back, so their exchanges end. */
void worker_flush(struct worker *worker);

/* Closes remaining connections and frees everything (after worker_join). */
void worker_destroy(struct worker *worker);

/* The Date header value for now, formatted once a second. */
const char *worker_date(struct worker *worker);

/* Exchange accounting, from the worker's thread. */
void worker_exchange_started(struct worker *worker);
void worker_exchange_ended(struct worker *worker);

#endif
