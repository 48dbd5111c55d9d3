/*
 * worker: the route -> handler table, the worker's loop, its heartbeat (how
 * the main thread knows the loop runs), and a graceful stop: its exchange
 * server drains (no connection dropped) before the loop exits, within the
 * grace period.
 */
#include "ops/worker.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "respond/health.h"
#include "base/log.h"
#include "respond/response.h"
#include "http/route.h"
#include "respond/track.h"

#define HOUSEKEEPING_INTERVAL_SECONDS 1

/* A handler answers one route's GET or HEAD (now or later). */
typedef void (*route_handler)(struct exchange *exchange, const struct route *route,
			      const struct service *service);

static void handle_track(struct exchange *exchange, const struct route *route,
			 const struct service *service)
{
	track_handle(exchange, route->mid, service);
}

static void handle_healthz(struct exchange *exchange, const struct route *route,
			   const struct service *service)
{
	(void)route;
	(void)service;
	health_handle(exchange);
}

static void handle_bad_id(struct exchange *exchange, const struct route *route,
			  const struct service *service)
{
	(void)route;
	(void)service;
	response_send_error(exchange, 400);
}

static const route_handler handlers[] = {
	[ROUTE_TRACK] = handle_track,
	[ROUTE_BAD_ID] = handle_bad_id,
	[ROUTE_HEALTHZ] = handle_healthz,
	[ROUTE_NOT_FOUND] = NULL, /* 404 whatever the method */
};

/* A CORS preflight: an OPTIONS naming the page's origin and the method it means to use. */
static int is_preflight(const struct exchange *exchange)
{
	return exchange_header(exchange, "Origin") != NULL &&
	       exchange_header(exchange, "Access-Control-Request-Method") != NULL;
}

static void on_request(struct exchange *exchange, void *arg)
{
	const struct service *service = arg;
	if (exchange_is_refused(exchange)) {
		response_send_error(exchange, 400);
		return;
	}
	struct route route = route_parse(exchange_target(exchange));
	route_handler handler = handlers[route.kind];
	if (handler == NULL)
		response_send_error(exchange, 404);
	else if (strcmp(exchange_method(exchange), "OPTIONS") == 0 &&
		 response_cors_applies(exchange))
		/* Answered from the route alone: a preflight costs no lookup. */
		response_send_options(exchange, is_preflight(exchange));
	else if (route_check_method(exchange_method(exchange)) != ROUTE_METHOD_OK)
		response_send_error(exchange, 405);
	else
		handler(exchange, &route, service);
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

/* Runs on the worker's thread: answers every heartbeat asked until now. */
static void on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
	struct worker *worker = arg;
	(void)fd;
	(void)what;
	atomic_store(&worker->heartbeats_answered, atomic_load(&worker->heartbeats_asked));
}

void worker_ask_heartbeat(struct worker *worker)
{
	atomic_fetch_add(&worker->heartbeats_asked, 1);
	event_active(worker->heartbeat, EV_TIMEOUT, 0);
}

bool worker_answered(struct worker *worker)
{
	return atomic_load(&worker->heartbeats_answered) == atomic_load(&worker->heartbeats_asked);
}

int worker_init(struct worker *worker, unsigned index, const struct service *service,
		atomic_uint *open_connections, int listen_fd, char *error, size_t error_size)
{
	memset(worker, 0, sizeof(*worker));
	atomic_init(&worker->heartbeats_asked, 0);
	atomic_init(&worker->heartbeats_answered, 0);
	worker->index = index;
	worker->service = service;
	worker->settings = (struct exchange_settings){
		.snapshots = settings_board_slot(service->settings, index),
		.lookups = service->lookups,
		.open_connections = open_connections,
		.max_connections = service->config->max_connections,
		.metrics = metrics_worker(service->metrics, index),
	};

	/* Coalesces the enable/disable pairs evhttp makes per request into at most one epoll_ctl. */
	struct event_config *base_config = event_config_new();
	if (base_config != NULL)
		event_config_set_flag(base_config, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	worker->base = base_config ? event_base_new_with_config(base_config) : NULL;
	if (base_config != NULL)
		event_config_free(base_config);
	if (worker->base == NULL) {
		snprintf(error, error_size, "worker %u: cannot create its event loop", index);
		close(listen_fd);
		return -1;
	}
	worker->heartbeat = event_new(worker->base, -1, 0, on_heartbeat, worker);
	if (worker->heartbeat == NULL) {
		snprintf(error, error_size, "worker %u: cannot create its heartbeat", index);
		close(listen_fd);
		return -1;
	}
	if (index == 0 && start_housekeeping(worker) < 0) {
		snprintf(error, error_size, "worker %u: cannot start its housekeeping timer", index);
		close(listen_fd);
		return -1;
	}
	char reason[256];
	worker->server = exchange_server_new(worker->base, listen_fd, &worker->settings, on_request,
					     (void *)service, reason, sizeof(reason));
	if (worker->server == NULL) {
		snprintf(error, error_size, "worker %u: %s", index, reason);
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
	char name[16]; /* the kernel keeps 15 characters */
	snprintf(name, sizeof(name), "worker %u", worker->index);
	pthread_setname_np(worker->thread, name);
	return 0;
}

static void on_idle(void *arg)
{
	struct worker *worker = arg;
	event_base_loopbreak(worker->base);
}

static void on_drain_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct worker *worker = arg;
	(void)fd;
	(void)what;
	log_warn("worker %u: %u responses still in flight and %u connections open at the end of "
		 "the shutdown grace period; closing them",
		 worker->index, exchange_server_live(worker->server),
		 exchange_server_open(worker->server));
	event_base_loopbreak(worker->base);
}

/* Runs on the worker's thread. */
static void begin_drain(evutil_socket_t fd, short what, void *arg)
{
	struct worker *worker = arg;
	(void)fd;
	(void)what;
	if (worker->housekeeping != NULL)
		event_del(worker->housekeeping);
	struct timeval grace = {.tv_sec = worker->grace_ms / 1000,
				.tv_usec = (suseconds_t)(worker->grace_ms % 1000) * 1000};
	worker->drain_deadline = evtimer_new(worker->base, on_drain_deadline, worker);
	if (worker->drain_deadline != NULL)
		evtimer_add(worker->drain_deadline, &grace);
	exchange_server_drain(worker->server, on_idle, worker);
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
	if (worker->heartbeat != NULL)
		event_free(worker->heartbeat);
	exchange_server_free(worker->server);
	if (worker->base != NULL)
		event_base_free(worker->base);
	memset(worker, 0, sizeof(*worker));
}
