/*
 * worker: evhttp set-up, the request entry point (route, then hand to the
 * module that answers), and a graceful stop that lets responses in flight
 * finish before the loop exits.
 */
#include "worker.h"

#include <event2/thread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exchange.h"
#include "health.h"
#include "log.h"
#include "response.h"
#include "route.h"
#include "track.h"

#define IDLE_TIMEOUT_SECONDS 60
#define SEND_TIMEOUT_SECONDS 60
#define MAX_HEADERS_SIZE (16 * 1024)
#define MAX_BODY_SIZE (16 * 1024)
#define HOUSEKEEPING_INTERVAL_SECONDS 1

/*
 * Methods evhttp hands to us rather than answering 501 itself, so that every
 * method but GET and HEAD gets a 405 with Allow. Unknown methods get evhttp's 501.
 */
#define ACCEPTED_METHODS                                                                          \
	(EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |                     \
	 EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_PATCH |            \
	 EVHTTP_REQ_CONNECT)

static void on_request(struct evhttp_request *req, void *arg)
{
	struct worker *worker = arg;
	struct exchange *exchange = exchange_begin(worker, req);
	if (exchange == NULL) {
		log_error("out of memory for a request; closing its connection");
		evhttp_connection_free(evhttp_request_get_connection(req));
		return;
	}
	if (worker->draining || evhttp_request_get_command(req) == EVHTTP_REQ_CONNECT)
		exchange_close_after_response(exchange);

	struct route route = route_parse(evhttp_request_get_uri(req));
	int read_only = route_check_method(exchange_method(exchange)) == ROUTE_METHOD_OK;

	if (route.kind == ROUTE_NOT_FOUND)
		response_send_error(exchange, 404);
	else if (!read_only)
		response_send_error(exchange, 405);
	else if (route.kind == ROUTE_BAD_ID)
		response_send_error(exchange, 400);
	else if (route.kind == ROUTE_HEALTHZ)
		health_handle(exchange);
	else
		track_handle(exchange, route.mid);

	/* The request callback's own reference; pending work or evhttp hold the rest. */
	exchange_release(exchange);
}

static void on_housekeeping(evutil_socket_t fd, short what, void *arg)
{
	struct worker *worker = arg;
	(void)fd;
	(void)what;
	file_cache_expire(worker->service->file_cache);
}

/* One worker sweeps the shared caches; the others never pay for it. */
static int start_housekeeping(struct worker *worker)
{
	struct timeval interval = {.tv_sec = HOUSEKEEPING_INTERVAL_SECONDS};
	worker->housekeeping = event_new(worker->base, -1, EV_PERSIST, on_housekeeping, worker);
	return worker->housekeeping ? event_add(worker->housekeeping, &interval) : -1;
}

int worker_init(struct worker *worker, unsigned index, const struct service *service,
		int listen_fd, char *error, size_t error_size)
{
	memset(worker, 0, sizeof(*worker));
	worker->index = index;
	worker->service = service;
	worker->idle_timeout = (struct timeval){.tv_sec = IDLE_TIMEOUT_SECONDS};
	worker->send_timeout = (struct timeval){.tv_sec = SEND_TIMEOUT_SECONDS};

	/* Coalesces the enable/disable pairs evhttp makes per request into at most one epoll_ctl. */
	struct event_config *base_config = event_config_new();
	if (base_config != NULL)
		event_config_set_flag(base_config, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	worker->base = base_config ? event_base_new_with_config(base_config) : NULL;
	if (base_config != NULL)
		event_config_free(base_config);
	if (worker->base == NULL || (worker->http = evhttp_new(worker->base)) == NULL) {
		snprintf(error, error_size, "worker %u: cannot create its event loop", index);
		close(listen_fd);
		return -1;
	}
	evhttp_set_gencb(worker->http, on_request, worker);
	evhttp_set_allowed_methods(worker->http, ACCEPTED_METHODS);
	evhttp_set_default_content_type(worker->http, NULL);
	evhttp_set_timeout_tv(worker->http, &worker->idle_timeout);
	evhttp_set_max_headers_size(worker->http, MAX_HEADERS_SIZE);
	evhttp_set_max_body_size(worker->http, MAX_BODY_SIZE);

	if (index == 0 && start_housekeeping(worker) < 0) {
		snprintf(error, error_size, "worker %u: cannot start its housekeeping timer", index);
		close(listen_fd);
		return -1;
	}
	worker->listener = evhttp_accept_socket_with_handle(worker->http, listen_fd);
	if (worker->listener == NULL) {
		snprintf(error, error_size, "worker %u: cannot accept on its socket", index);
		close(listen_fd);
		return -1;
	}
	return 0;
}

static void *worker_thread(void *arg)
{
	struct worker *worker = arg;
	event_base_dispatch(worker->base);
	return NULL;
}

int worker_start(struct worker *worker)
{
	if (pthread_create(&worker->thread, NULL, worker_thread, worker) != 0)
		return -1;
	worker->thread_running = 1;
	return 0;
}

static void stop_if_idle(struct worker *worker)
{
	if (worker->draining && worker->live_exchanges == 0)
		event_base_loopbreak(worker->base);
}

static void on_drain_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct worker *worker = arg;
	(void)fd;
	(void)what;
	log_warn("worker %u: %u responses still in flight at the end of the shutdown grace period",
		 worker->index, worker->live_exchanges);
	event_base_loopbreak(worker->base);
}

/* Runs on the worker's thread. */
static void begin_drain(evutil_socket_t fd, short what, void *arg)
{
	struct worker *worker = arg;
	(void)fd;
	(void)what;
	if (worker->listener != NULL) {
		evhttp_del_accept_socket(worker->http, worker->listener);
		worker->listener = NULL;
	}
	worker->draining = 1;
	if (worker->housekeeping != NULL)
		event_del(worker->housekeeping);
	struct timeval grace = {.tv_sec = worker->grace_ms / 1000,
				.tv_usec = (suseconds_t)(worker->grace_ms % 1000) * 1000};
	worker->drain_deadline = evtimer_new(worker->base, on_drain_deadline, worker);
	if (worker->drain_deadline != NULL)
		evtimer_add(worker->drain_deadline, &grace);
	stop_if_idle(worker);
}

void worker_request_stop(struct worker *worker, unsigned grace_ms)
{
	/* Read by begin_drain on the worker's thread; event_base_once orders the two. */
	worker->grace_ms = grace_ms;
	if (event_base_once(worker->base, -1, EV_TIMEOUT, begin_drain, worker, NULL) < 0)
		log_error("worker %u: cannot ask it to stop", worker->index);
}

void worker_join(struct worker *worker)
{
	if (worker->thread_running) {
		pthread_join(worker->thread, NULL);
		worker->thread_running = 0;
	}
}

void worker_flush(struct worker *worker)
{
	if (worker->base != NULL)
		event_base_loop(worker->base, EVLOOP_NONBLOCK);
}

void worker_destroy(struct worker *worker)
{
	if (worker->drain_deadline != NULL)
		event_free(worker->drain_deadline);
	if (worker->housekeeping != NULL)
		event_free(worker->housekeeping);
	if (worker->http != NULL)
		evhttp_free(worker->http);
	if (worker->base != NULL)
		event_base_free(worker->base);
	memset(worker, 0, sizeof(*worker));
}

const char *worker_date(struct worker *worker)
{
	time_t now = time(NULL);
	if (now != worker->date_second) {
		http_date_format(worker->date_text, now);
		worker->date_second = now;
	}
	return worker->date_text;
}

void worker_exchange_started(struct worker *worker)
{
	worker->live_exchanges++;
}

void worker_exchange_ended(struct worker *worker)
{
	worker->live_exchanges--;
	stop_if_idle(worker);
}
