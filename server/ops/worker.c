/*
 * worker: the worker's loop, its heartbeat (how the main thread knows the
 * loop runs), and a graceful stop: its exchange server drains (no connection
 * dropped) before the loop exits, within the grace period.
 */
#include "ops/worker.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

#define HOUSEKEEPING_INTERVAL_SECONDS 1

static void on_housekeeping(evutil_socket_t fd, short what, void *arg)
{
	struct worker *worker = arg;
	(void)fd;
	(void)what;
	file_cache_expire(worker->role.sweeps);
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

int worker_init(struct worker *worker, const struct worker_role *role, int listen_fd,
		char *error, size_t error_size)
{
	memset(worker, 0, sizeof(*worker));
	atomic_init(&worker->heartbeats_asked, 0);
	atomic_init(&worker->heartbeats_answered, 0);
	worker->role = *role;

	/* Coalesces the enable/disable pairs evhttp makes per request into at most one epoll_ctl. */
	struct event_config *base_config = event_config_new();
	if (base_config != NULL)
		event_config_set_flag(base_config, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	worker->base = base_config ? event_base_new_with_config(base_config) : NULL;
	if (base_config != NULL)
		event_config_free(base_config);
	if (worker->base == NULL) {
		snprintf(error, error_size, "%s: cannot create its event loop", role->name);
		close(listen_fd);
		return -1;
	}
	worker->heartbeat = event_new(worker->base, -1, 0, on_heartbeat, worker);
	if (worker->heartbeat == NULL) {
		snprintf(error, error_size, "%s: cannot create its heartbeat", role->name);
		close(listen_fd);
		return -1;
	}
	if (role->sweeps != NULL && start_housekeeping(worker) < 0) {
		snprintf(error, error_size, "%s: cannot start its housekeeping timer", role->name);
		close(listen_fd);
		return -1;
	}
	char reason[256];
	worker->server = exchange_server_new(worker->base, listen_fd, &worker->role.settings,
					     role->on_request, role->arg, reason, sizeof(reason));
	if (worker->server == NULL) {
		snprintf(error, error_size, "%s: %s", role->name, reason);
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
	pthread_setname_np(worker->thread, worker->role.name);
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
	log_warn("%s: %u responses still in flight and %u connections open at the end of "
		 "the shutdown grace period; closing them",
		 worker->role.name, exchange_server_live(worker->server),
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
		log_error("%s: cannot ask it to stop", worker->role.name);
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

/* --- Liveness: the main thread and the heartbeats --- */

#define AWAIT_POLL_NS (1000 * 1000)

/* The first worker that has not answered every heartbeat asked of it, or count. */
static unsigned first_unanswered(struct worker *workers, unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		if (!worker_answered(&workers[i]))
			return i;
	return count;
}

int worker_await_running(struct worker *workers, unsigned count, unsigned timeout_ms, char *error,
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

bool worker_tick(struct worker_watch *watch, struct worker *workers, unsigned count)
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
