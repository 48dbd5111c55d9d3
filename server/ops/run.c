/*
 * run: the steps of a running musicd, taken in order and undone in reverse
 * through one unwind ladder.
 */
#include "ops/run.h"

#include <event2/event.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "db/db_reach.h"
#include "ops/log_files.h"
#include "ops/notify.h"
#include "ops/pid_file.h"
#include "ops/worker.h"
#include "respond/metrics_page.h"
#include "respond/routes.h"
#include "wire/listener.h"

#ifndef MUSICD_VERSION
#define MUSICD_VERSION "dev"
#endif

#define SHUTDOWN_GRACE_MS 10000
/* How long a stop waits for disk work under way once the workers are gone. */
#define DISK_QUIESCE_MS 1000
#define WORKER_START_TIMEOUT_MS 10000 /* each loop answers its first heartbeat within it */
#define START_LOG_WAIT_MS 1000 /* for start-up's log lines to be written, before serving */

/* What run_serving holds while it runs: each field is set by one step and undone by its rung. */
struct serving {
	int listen_fds[CONFIG_MAX_WORKERS]; /* -1 once a worker took it over */
	int metrics_fd;			    /* -1: none, or taken over */
	struct worker *workers;		    /* the track listener's, then the metrics one */
	unsigned started;		    /* workers initialised (and their threads started) */
	struct metrics_page *metrics_page;
	atomic_uint open_connections;	  /* the track listener's, for --max-connections */
	atomic_uint metrics_connections; /* the metrics listener's, for its own cap */
	bool pid_file_written;		 /* --pid-file names this process */
};

int run_failed(const char *message)
{
	/* After what the log holds: on stderr the reason is the last line, as it comes last. */
	log_flush(START_LOG_WAIT_MS);
	fprintf(stderr, "musicd: %s\n", message);
	if (log_file_path() != NULL)
		log_error("%s", message);
	return EXIT_CONFIG;
}

static void close_unused(int *fds, unsigned count)
{
	for (unsigned i = 0; i < count; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/* Opens every worker's listening socket on host:port; -1 with a message. */
static int open_listeners(const char *host, uint16_t port, const char *what, int *fds,
			  unsigned count, char *error, size_t error_size)
{
	int shared = listener_probe(host, port, error, error_size);
	if (shared < 0)
		return -1;
	if (shared)
		log_warn("%s %s:%u is already served with SO_REUSEPORT by another process of this "
			 "user (a musicd being replaced?): the two share it until that one stops",
			 what, host, port);
	for (unsigned i = 0; i < count; i++) {
		fds[i] = listener_open(host, port, error, error_size);
		if (fds[i] < 0) {
			close_unused(fds, i);
			return -1;
		}
	}
	return 0;
}

/*
 * The main thread's wait for the signals it handles (blocked in every thread,
 * taken with sigwait/sigtimedwait), with the watchdog's tick woven in: the
 * tick's deadline moves by tick_ms each time it is reached, so a storm of
 * signals cannot starve it (the watchdog would kill musicd).
 */
struct signal_wait {
	const sigset_t *handled;
	unsigned long long tick_ms; /* 0: no tick */
	unsigned long long due_ms;  /* CLOCK_MONOTONIC, when the next tick is due */
};

static void signal_wait_init(struct signal_wait *wait, const sigset_t *handled, unsigned long long tick_ms)
{
	wait->handled = handled;
	wait->tick_ms = tick_ms;
	wait->due_ms = clock_now_ms(); /* the first tick at once */
}

static int signal_wait_next(struct signal_wait *wait)
{
	for (;;) {
		if (wait->tick_ms == 0) {
			int signal_number = 0;
			if (sigwait(wait->handled, &signal_number) == 0)
				return signal_number;
			continue;
		}
		unsigned long long now = clock_now_ms();
		if (now >= wait->due_ms) {
			wait->due_ms = now + wait->tick_ms;
			return 0;
		}
		unsigned long long left = wait->due_ms - now;
		struct timespec timeout = {.tv_sec = (time_t)(left / 1000),
					   .tv_nsec = (long)(left % 1000) * 1000000L};
		int signal_number = sigtimedwait(wait->handled, NULL, &timeout);
		if (signal_number > 0)
			return signal_number;
		/* EAGAIN (the tick is due) or EINTR: the loop looks again. */
	}
}

/* Handles signals until one asks to stop; returns that one. The watchdog is pinged only while every loop answers. */
static int run_until_stopped(struct resources *resources, const sigset_t *handled,
			     struct reload *reload, struct worker *workers, unsigned count)
{
	struct signal_wait wait;
	struct worker_watch watch = {0};
	signal_wait_init(&wait, handled, notify_watchdog_interval_ms());
	for (;;) {
		int signal_number = signal_wait_next(&wait);
		switch (signal_number) {
		case 0: /* the watchdog's tick */
			if (worker_tick(&watch, workers, count))
				notify_watchdog();
			break;
		case SIGUSR1:
			log_files_reopen(settings_board_current(resources->settings)->access_log);
			break;
		case SIGHUP:
			notify_reloading();
			reload_run(reload, resources);
			notify_ready(NULL);
			break;
		case SIGINT:
		case SIGTERM:
			return signal_number;
		default:
			break;
		}
	}
}

/* The role of track worker index. */
static struct worker_role track_role(struct resources *resources, struct serving *serving,
				     unsigned index)
{
	const struct config *config = resources->config;
	struct worker_role role = {
		.settings =
			{
				.snapshots = settings_board_slot(resources->settings, index),
				.open_connections = &serving->open_connections,
				.max_connections = config->max_connections,
				.metrics = metrics_worker(resources->metrics, index),
				.log_requests = 1,
				.client_places = resources->client_places,
			},
		.on_request = routes_track,
		.arg = resources,
		.sweeps = index == 0 ? resources->file_cache : NULL,
	};
	/* index < CONFIG_MAX_WORKERS: the cast only tells the compiler the name fits. */
	snprintf(role.name, sizeof(role.name), "worker %u", (unsigned short)index);
	return role;
}

/* The metrics listener's: the last settings slot, no counters and no access log of its own. */
static struct worker_role metrics_role(struct resources *resources, struct serving *serving)
{
	struct worker_role role = {
		.name = "metrics",
		.settings =
			{
				.snapshots = settings_board_slot(resources->settings,
								 resources->config->workers),
				.open_connections = &serving->metrics_connections,
				.max_connections = METRICS_MAX_CONNECTIONS,
				.log_prefix = "metrics: ",
				.cap_name = "the metrics listener's cap of",
			},
		.on_request = routes_metrics,
		.arg = serving->metrics_page,
	};
	return role;
}

/* Starts worker serving->started with role on fd (taken over); -1 with a message. */
static int start_worker(struct serving *serving, const struct worker_role *role, int *fd,
			char *error, size_t error_size)
{
	struct worker *worker = &serving->workers[serving->started];
	int taken = *fd;
	*fd = -1;
	if (worker_init(worker, role, taken, error, error_size) < 0) {
		worker_destroy(worker);
		return -1;
	}
	serving->started++;
	if (worker_start(worker) < 0) {
		snprintf(error, error_size, "%s: cannot start its thread", role->name);
		return -1;
	}
	return 0;
}

static void stop_workers(struct serving *serving, struct db_pool *db, struct disk_io *disk,
			 unsigned grace_ms)
{
	for (unsigned i = 0; i < serving->started; i++)
		worker_request_stop(&serving->workers[i], grace_ms);
	for (unsigned i = 0; i < serving->started; i++)
		worker_join(&serving->workers[i]);
	/*
	 * Jobs still running hand their work back; run those before freeing.
	 * The pool stays allocated (refusing new jobs) until no callback can reach it.
	 */
	db_pool_quiesce(db);
	/* The same for the disk, for a while: a read that never returns is abandoned. */
	unsigned abandoned = disk_io_quiesce(disk, DISK_QUIESCE_MS);
	if (abandoned > 0)
		log_warn("%u disk read%s did not return within %u ms of the stop (a hung mount?): "
			 "left to the exit",
			 abandoned, abandoned == 1 ? "" : "s", DISK_QUIESCE_MS);
	for (unsigned i = 0; i < serving->started; i++) {
		worker_flush(&serving->workers[i]);
		worker_destroy(&serving->workers[i]);
	}
	serving->started = 0;
}

static void log_started(const struct config *config, const struct resources *resources,
			unsigned long long descriptor_limit)
{
	bool v6 = strchr(config->listen_host, ':') != NULL;
	log_info("musicd %s listening on %s%s%s:%u (%u workers, %u lookup threads, database %s.%s)",
		 MUSICD_VERSION, v6 ? "[" : "", config->listen_host, v6 ? "]" : "",
		 config->listen_port, config->workers, config->lookup_threads, config->database,
		 config->collection);
	log_info("descriptor limit %llu: at most %u connections at once", descriptor_limit,
		 config->max_connections);
	log_info("files are delivered by %s", resources->handoff->name);
	if (config->metrics_host != NULL)
		log_info(strchr(config->metrics_host, ':') ? "metrics on http://[%s]:%u/metrics"
							    : "metrics on http://%s:%u/metrics",
			 config->metrics_host, config->metrics_port);
}

static void notify_started(const struct config *config)
{
	char ready[CONFIG_ERROR_MAX];
	bool v6 = strchr(config->listen_host, ':') != NULL;
	snprintf(ready, sizeof(ready), "listening on %s%s%s:%u", v6 ? "[" : "", config->listen_host,
		 v6 ? "]" : "", config->listen_port);
	notify_ready(ready);
}

int run_serving(const struct config *config, struct resources *resources, const sigset_t *handled,
	const struct privileges *user, unsigned long long descriptor_limit, struct reload *reload)
{
	char error[CONFIG_ERROR_MAX];
	int status = EXIT_CONFIG;
	int metrics_on = config->metrics_host != NULL;
	struct serving serving = {.metrics_fd = -1};
	atomic_init(&serving.open_connections, 0);
	atomic_init(&serving.metrics_connections, 0);
	for (unsigned i = 0; i < CONFIG_MAX_WORKERS; i++)
		serving.listen_fds[i] = -1;

	serving.workers = calloc(config->workers + 1, sizeof(*serving.workers));
	if (serving.workers == NULL) {
		run_failed("out of memory");
		return EXIT_CONFIG;
	}
	if (open_listeners(config->listen_host, config->listen_port, "port", serving.listen_fds,
			   config->workers, error, sizeof(error)) < 0) {
		run_failed(error);
		goto out_listeners;
	}
	if (metrics_on && open_listeners(config->metrics_host, config->metrics_port, "metrics port",
					 &serving.metrics_fd, 1, error, sizeof(error)) < 0) {
		char message[CONFIG_ERROR_MAX + 16];
		snprintf(message, sizeof(message), "metrics-%s", error); /* "metrics-listen: ..." */
		run_failed(message);
		goto out_listeners;
	}
	/* Listeners bound and logs open: nothing left that needs root. */
	if (user != NULL) {
		if (privileges_drop(user, error, sizeof(error)) < 0) {
			run_failed(error);
			goto out_listeners;
		}
		log_info("running as user %s (uid %u, gid %u)", user->user, (unsigned)user->uid,
			 (unsigned)user->gid);
		log_files_warn_unreopenable(config, user->user);
	} else if (geteuid() == 0) {
		log_warn("running as root: give --user USER to drop to it once the listeners are "
			 "bound and the logs open");
	}
	resources->db = db_pool_start(config, config->max_pending_lookups, resources->metrics,
				      error, sizeof(error));
	if (resources->db == NULL) {
		run_failed(error);
		goto out_listeners;
	}
	if (config->gridfs_cache_dir != NULL) {
		/* Fills take pool threads: at most half of them, so lookups always get a turn. */
		resources->gridfs_spool = gridfs_spool_open(
			config->gridfs_cache_dir, config->gridfs_cache_size, resources->db,
			config->lookup_threads / 2, error, sizeof(error));
		if (resources->gridfs_spool == NULL) {
			run_failed(error);
			goto out_db;
		}
	}
	if (metrics_on) {
		struct metrics_sources sources = {resources->metrics, resources->lookup_cache,
						  resources->file_cache, &serving.open_connections,
						  MUSICD_VERSION, resources->client_places,
						  resources->disk};
		serving.metrics_page = metrics_page_new(&sources);
		if (serving.metrics_page == NULL) {
			run_failed("out of memory for the metrics page");
			goto out_spool;
		}
	}
	/*
	 * The listeners listen (a connection made now waits for a worker), and this is the
	 * user musicd serves as, who removes the file at exit.
	 */
	if (config->pid_file != NULL) {
		if (pid_file_write(config->pid_file, getpid(), error, sizeof(error)) < 0) {
			run_failed(error);
			goto out_workers;
		}
		serving.pid_file_written = true;
	}
	/* What start-up said is written before anything is served (bounded: a hung log). */
	log_flush(START_LOG_WAIT_MS);
	for (unsigned i = 0; i < config->workers; i++) {
		struct worker_role role = track_role(resources, &serving, i);
		if (start_worker(&serving, &role, &serving.listen_fds[i], error, sizeof(error)) < 0) {
			run_failed(error);
			goto out_workers;
		}
	}
	/* Scrapes may start at once: every counter and cache they read exists already. */
	if (metrics_on) {
		struct worker_role role = metrics_role(resources, &serving);
		if (start_worker(&serving, &role, &serving.metrics_fd, error, sizeof(error)) < 0) {
			run_failed(error);
			goto out_workers;
		}
	}
	if (worker_await_running(serving.workers, serving.started, WORKER_START_TIMEOUT_MS, error,
			   sizeof(error)) < 0) {
		run_failed(error);
		goto out_workers;
	}
	log_started(config, resources, descriptor_limit);
	log_flush(START_LOG_WAIT_MS); /* the supervisor hears "started" after the log says so */
	notify_started(config);
	/* Says whether the database answers, once a pool thread knows; nothing waits for it. */
	if (db_reach_at_start(resources->db) < 0)
		log_warn("database: out of memory for the start-up check; nothing said until a lookup");

	int signal_number =
		run_until_stopped(resources, handled, reload, serving.workers, serving.started);
	notify_stopping();
	log_info("%s: stopping; letting responses in flight finish", strsignal(signal_number));
	status = 0;

out_workers: {
	unsigned grace_ms = SHUTDOWN_GRACE_MS;
	if (grace_ms < config->lookup_timeout_ms + 1000)
		grace_ms = config->lookup_timeout_ms + 1000;
	stop_workers(&serving, resources->db, resources->disk, grace_ms);
	if (serving.pid_file_written)
		pid_file_remove(config->pid_file, getpid());
	metrics_page_free(serving.metrics_page);
}
out_spool:
	gridfs_spool_free(resources->gridfs_spool); /* every fill finished with the pool */
	resources->gridfs_spool = NULL;
out_db:
	db_pool_stop(resources->db);
	resources->db = NULL;
out_listeners:
	close_unused(serving.listen_fds, config->workers);
	close_unused(&serving.metrics_fd, 1);
	free(serving.workers);
	return status;
}
