/*
 * main: start-up and shutdown. Everything that can be wrong with the
 * configuration (options, config file, media roots, logs, --user, listen
 * address, MongoDB URI) is found here and reported in one line with exit
 * status 2, before a single connection is accepted. Then the main thread
 * waits for signals: SIGUSR1 reopens the logs; SIGHUP re-reads the config
 * file (reload.c); SIGINT and SIGTERM drain musicd without dropping a
 * connection (worker.c, exchange.c; bounded), and exit 0. systemd hears of
 * each step (notify.c).
 */
#include <event2/event.h>
#include <event2/thread.h>
#include <mongoc/mongoc.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "ops/descriptor_budget.h"
#include "db/gridfs_spool.h"
#include "wire/listener.h"
#include "ops/liveness.h"
#include "base/log.h"
#include "ops/log_files.h"
#include "db/lookup.h"
#include "media/media.h"
#include "ops/metrics_listener.h"
#include "ops/notify.h"
#include "ops/privileges.h"
#include "ops/reload.h"
#include "respond/service.h"
#include "config/settings.h"
#include "ops/signal_wait.h"
#include "ops/worker.h"

#ifndef MUSICD_VERSION
#define MUSICD_VERSION "dev"
#endif

#define EXIT_CONFIG 2
#define SHUTDOWN_GRACE_MS 10000
#define WORKER_START_TIMEOUT_MS 10000 /* each loop answers its first heartbeat within it */

static void on_mongoc_log(mongoc_log_level_t level, const char *domain, const char *message,
			  void *unused)
{
	(void)unused;
	switch (level) {
	case MONGOC_LOG_LEVEL_ERROR:
	case MONGOC_LOG_LEVEL_CRITICAL:
		log_error("mongoc %s: %s", domain, message);
		break;
	case MONGOC_LOG_LEVEL_WARNING:
		/* FerretDB lacks endSessions; libmongoc warns about it at every pool shutdown. */
		if (strstr(message, "endSessions") != NULL)
			log_debug("mongoc %s: %s", domain, message);
		else
			log_warn("mongoc %s: %s", domain, message);
		break;
	case MONGOC_LOG_LEVEL_MESSAGE:
	case MONGOC_LOG_LEVEL_INFO:
	case MONGOC_LOG_LEVEL_DEBUG:
		log_debug("mongoc %s: %s", domain, message);
		break;
	case MONGOC_LOG_LEVEL_TRACE:
		break;
	}
}

static unsigned cpu_count(void)
{
	long count = sysconf(_SC_NPROCESSORS_ONLN);
	return count > 0 ? (unsigned)count : 1;
}

/* Blocks the signals main handles in every thread created from here on; main waits for them. */
static void block_signals(sigset_t *handled)
{
	sigemptyset(handled);
	sigaddset(handled, SIGINT);
	sigaddset(handled, SIGTERM);
	sigaddset(handled, SIGUSR1);
	sigaddset(handled, SIGHUP);
	pthread_sigmask(SIG_BLOCK, handled, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * Handles signals until one asks to stop; returns that one. The watchdog is
 * pinged only while every worker's loop answers its heartbeat.
 */
static int run_until_stopped(struct service *service, const sigset_t *handled,
			     struct reload *reload, struct worker *workers, unsigned worker_count)
{
	struct signal_wait wait;
	struct liveness_watch watch = {0};
	signal_wait_init(&wait, handled, notify_watchdog_interval_ms());
	for (;;) {
		int signal_number = signal_wait_next(&wait);
		switch (signal_number) {
		case 0: /* the watchdog's tick */
			if (liveness_tick(&watch, workers, worker_count))
				notify_watchdog();
			break;
		case SIGUSR1:
			log_files_reopen(settings_board_current(service->settings)->access_log);
			break;
		case SIGHUP:
			notify_reloading();
			reload_run(reload, service);
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

/* Raises the descriptor limit to the hard limit (each connection needs one); returns it. */
static unsigned long long raise_descriptor_limit(void)
{
	struct rlimit limit;
	if (getrlimit(RLIMIT_NOFILE, &limit) < 0)
		return 0;
	if (limit.rlim_cur < limit.rlim_max) {
		struct rlimit raised = {.rlim_cur = limit.rlim_max, .rlim_max = limit.rlim_max};
		if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
			limit = raised;
	}
	return (unsigned long long)limit.rlim_cur;
}

/* Settles the worker count and the connection cap within the descriptor limit; -1 with a message. */
static int plan_descriptors(struct config *config, unsigned long long limit, char *error,
			    size_t error_size)
{
	unsigned cpus = cpu_count();
	struct descriptor_budget_input input = {
		.limit = limit,
		.workers = config->workers,
		.default_workers = cpus < CONFIG_MAX_WORKERS ? cpus : CONFIG_MAX_WORKERS,
		.lookup_threads = config->lookup_threads,
		.open_file_cache_entries = config->open_file_cache_entries,
		.max_connections = config->max_connections,
		.max_connections_ceiling = CONFIG_MAX_CONNECTIONS,
	};
	struct descriptor_budget budget;
	if (descriptor_budget_plan(&input, &budget, error, error_size) < 0)
		return -1;
	if (budget.workers_lowered)
		log_warn("descriptor limit %llu: %u workers instead of one per CPU (%u); raise the "
			 "limit (ulimit -n, LimitNOFILE=) for more",
			 limit, budget.workers, input.default_workers);
	config->workers = budget.workers;
	config->max_connections = budget.max_connections;
	return 0;
}

static void log_cache_stats(const struct service *service)
{
	struct cache_stats lookups = lookup_cache_stats(service->lookup_cache);
	struct cache_stats files = file_cache_stats(service->file_cache);
	log_info("lookup cache: %llu hits, %llu misses, %llu evictions, %llu entries",
		 (unsigned long long)lookups.hits, (unsigned long long)lookups.misses,
		 (unsigned long long)lookups.evictions, (unsigned long long)lookups.entries);
	log_info("open-file cache: %llu hits, %llu misses, %llu evictions, %llu entries (%zu checked "
		 "by lease)",
		 (unsigned long long)files.hits, (unsigned long long)files.misses,
		 (unsigned long long)files.evictions, (unsigned long long)files.entries,
		 file_cache_leased(service->file_cache));
}

/* The one message of a failed start: on stderr, and in the error log too when it is a file. */
static int fail(const char *message)
{
	fprintf(stderr, "musicd: %s\n", message);
	if (log_file_path() != NULL)
		log_error("%s", message);
	return EXIT_CONFIG;
}

/* Opens every worker's listening socket; -1 with a message. */
static int open_listeners(const struct config *config, int *fds, char *error, size_t error_size)
{
	int shared = listener_probe(config->listen_host, config->listen_port, error, error_size);
	if (shared < 0)
		return -1;
	if (shared)
		log_warn("%s port %u is already served with SO_REUSEPORT by another process of this "
			 "user (a musicd being replaced?): the two share it until that one stops",
			 config->listen_host, config->listen_port);
	for (unsigned i = 0; i < config->workers; i++) {
		fds[i] = listener_open(config->listen_host, config->listen_port, error, error_size);
		if (fds[i] < 0) {
			while (i > 0)
				close(fds[--i]);
			return -1;
		}
	}
	return 0;
}

static void stop_workers(struct worker *workers, unsigned count, struct lookup_pool *lookups,
			 unsigned grace_ms)
{
	for (unsigned i = 0; i < count; i++)
		worker_request_stop(&workers[i], grace_ms);
	for (unsigned i = 0; i < count; i++)
		worker_join(&workers[i]);
	/*
	 * Lookups still running hand their jobs back; run those before freeing.
	 * The pool stays allocated (refusing new jobs) until no callback can reach it.
	 */
	lookup_pool_quiesce(lookups);
	for (unsigned i = 0; i < count; i++) {
		worker_flush(&workers[i]);
		worker_destroy(&workers[i]);
	}
}

static int serve(const struct config *config, struct service *service, const sigset_t *handled,
		 const struct privileges *user, unsigned long long descriptor_limit,
		 struct reload *reload)
{
	char error[CONFIG_ERROR_MAX];
	int listen_fds[CONFIG_MAX_WORKERS];
	struct worker *workers = calloc(config->workers, sizeof(*workers));
	atomic_uint open_connections = 0;
	unsigned started = 0;
	int status = EXIT_CONFIG;
	struct metrics_listener *metrics_listener = NULL;
	struct metrics_sources metrics_sources = {service->metrics, service->lookup_cache,
						  service->file_cache, &open_connections,
						  MUSICD_VERSION};

	if (workers == NULL)
		return fail("out of memory");
	if (open_listeners(config, listen_fds, error, sizeof(error)) < 0) {
		free(workers);
		return fail(error);
	}
	/* Scrapes may start at once: every counter and cache they read exists already. */
	if (config->metrics_host != NULL &&
	    (metrics_listener = metrics_listener_start(config->metrics_host, config->metrics_port,
						       &metrics_sources, error, sizeof(error))) == NULL) {
		fail(error);
		for (unsigned i = 0; i < config->workers; i++)
			close(listen_fds[i]);
		free(workers);
		return EXIT_CONFIG;
	}
	/* Listeners bound and logs open: nothing left that needs root. */
	if (user != NULL) {
		if (privileges_drop(user, error, sizeof(error)) < 0) {
			fail(error);
			metrics_listener_stop(metrics_listener);
			for (unsigned i = 0; i < config->workers; i++)
				close(listen_fds[i]);
			free(workers);
			return EXIT_CONFIG;
		}
		log_info("running as user %s (uid %u, gid %u)", user->user, (unsigned)user->uid,
			 (unsigned)user->gid);
		log_files_warn_unreopenable(config, user->user);
	} else if (geteuid() == 0) {
		log_warn("running as root: give --user USER to drop to it once the listeners are "
			 "bound and the logs open");
	}
	service->lookups = lookup_pool_start(config, config->max_pending_lookups, service->metrics,
					     error, sizeof(error));
	if (service->lookups == NULL) {
		fail(error);
		metrics_listener_stop(metrics_listener);
		for (unsigned i = 0; i < config->workers; i++)
			close(listen_fds[i]);
		free(workers);
		return EXIT_CONFIG;
	}
	if (config->gridfs_cache_dir != NULL) {
		/* Fills take lookup threads: at most half of them, so lookups always get a turn. */
		service->gridfs_spool = gridfs_spool_open(
			config->gridfs_cache_dir, config->gridfs_cache_size, service->lookups,
			config->lookup_threads / 2, error, sizeof(error));
		if (service->gridfs_spool == NULL) {
			fail(error);
			lookup_pool_stop(service->lookups);
			service->lookups = NULL;
			for (unsigned i = 0; i < config->workers; i++)
				close(listen_fds[i]);
			free(workers);
			return EXIT_CONFIG;
		}
	}
	for (; started < config->workers; started++) {
		if (worker_init(&workers[started], started, service, &open_connections,
				listen_fds[started], error, sizeof(error)) < 0 ||
		    worker_start(&workers[started]) < 0) {
			fail(error);
			for (unsigned i = started + 1; i < config->workers; i++)
				close(listen_fds[i]);
			started++;
			goto stop;
		}
	}
	if (liveness_await(workers, started, WORKER_START_TIMEOUT_MS, error, sizeof(error)) < 0) {
		fail(error);
		goto stop;
	}
	log_info("musicd %s listening on %s:%u (%u workers, %u lookup threads, database %s.%s)",
		 MUSICD_VERSION, config->listen_host, config->listen_port, config->workers,
		 config->lookup_threads, config->database, config->collection);
	log_info("descriptor limit %llu: at most %u connections at once", descriptor_limit,
		 config->max_connections);
	log_info("files are delivered by %s", service->delivery->name);
	if (metrics_listener != NULL)
		log_info(strchr(config->metrics_host, ':') ? "metrics on http://[%s]:%u/metrics"
							    : "metrics on http://%s:%u/metrics",
			 config->metrics_host, config->metrics_port);
	char ready[CONFIG_ERROR_MAX];
	bool v6 = strchr(config->listen_host, ':') != NULL;
	snprintf(ready, sizeof(ready), "listening on %s%s%s:%u", v6 ? "[" : "", config->listen_host,
		 v6 ? "]" : "", config->listen_port);
	notify_ready(ready);

	int signal_number = run_until_stopped(service, handled, reload, workers, started);
	notify_stopping();
	log_info("%s: stopping; letting responses in flight finish", strsignal(signal_number));
	status = 0;

stop: {
	unsigned grace_ms = SHUTDOWN_GRACE_MS;
	if (grace_ms < config->lookup_timeout_ms + 1000)
		grace_ms = config->lookup_timeout_ms + 1000;
	metrics_listener_stop(metrics_listener);
	stop_workers(workers, started, service->lookups, grace_ms);
	lookup_pool_stop(service->lookups);
	service->lookups = NULL;
	gridfs_spool_free(service->gridfs_spool); /* every fill finished with the pool */
	service->gridfs_spool = NULL;
	free(workers);
	if (status == 0)
		log_cache_stats(service);
	return status;
}
}

struct spool_check {
	const char *dir;
	const char *user;
};

static int check_spool_as_user(const void *arg, char *error, size_t error_size)
{
	const struct spool_check *spool = arg;
	return gridfs_spool_check(spool->dir, spool->user, error, error_size);
}

/*
 * -t: the spool as start-up opens it, which is after the drop to --user: so as
 * that user when there is one and musicd is root (else start-up fails anyway).
 */
static int check_spool(const struct config *config, const struct privileges *user, char *error,
		       size_t error_size)
{
	if (config->gridfs_cache_dir == NULL)
		return 0;
	if (user == NULL || geteuid() != 0)
		return gridfs_spool_check(config->gridfs_cache_dir, NULL, error, error_size);
	struct spool_check spool = {config->gridfs_cache_dir, user->user};
	return privileges_check_as(user, check_spool_as_user, &spool, error, error_size);
}

int main(int argc, char **argv)
{
	struct config config;
	struct service service = {.config = &config};
	struct reload reload = {0};
	enum config_action action;
	char error[CONFIG_ERROR_MAX];
	sigset_t handled_signals;
	struct privileges user;
	int status;

	/*
	 * First of all: before any thread starts (they inherit the mask), and so that a
	 * SIGUSR1 from logrotate during start-up waits for the loop instead of killing musicd.
	 */
	block_signals(&handled_signals);
	config_init(&config);
	if (config_load(&config, argc, argv, getenv("MONGODB_URI"), &action, error, sizeof(error)) <
	    0) {
		status = fail(error);
		goto out;
	}
	if (action == CONFIG_ACTION_HELP) {
		config_print_usage(argv[0]);
		status = 0;
		goto out;
	}
	if (action == CONFIG_ACTION_VERSION) {
		printf("musicd %s\n", MUSICD_VERSION);
		status = 0;
		goto out;
	}
	log_set_level(config.log_level);
	/* The error log first, so every start-up message lands in it (-t makes no file). */
	if (action != CONFIG_ACTION_CHECK && log_open(config.error_log, error, sizeof(error)) < 0) {
		status = fail(error);
		goto out;
	}
	/* The settings as given, before the worker count and connection cap are settled. */
	if (reload_init(&reload, argc, argv, &config) < 0) {
		status = fail("out of memory");
		goto out;
	}
	unsigned long long descriptor_limit = raise_descriptor_limit();
	if (plan_descriptors(&config, descriptor_limit, error, sizeof(error)) < 0) {
		status = fail(error);
		goto out;
	}

	if (media_roots_resolve(&service.media_roots, config.media_roots, config.media_root_count,
				error, sizeof(error)) < 0) {
		status = fail(error);
		goto out;
	}
	if (config.user != NULL && privileges_resolve(config.user, &user, error, sizeof(error)) < 0) {
		status = fail(error);
		goto out_roots;
	}
	if (action == CONFIG_ACTION_CHECK) {
		/* As nginx -t: everything start-up checks, but no socket, no database, no file made. */
		mongoc_log_set_handler(NULL, NULL); /* its parse errors come back in error */
		if (log_files_check(&config, error, sizeof(error)) < 0 ||
		    check_spool(&config, config.user != NULL ? &user : NULL, error,
				sizeof(error)) < 0 ||
		    lookup_check_uri(&config, error, sizeof(error)) < 0) {
			status = fail(error);
		} else {
			printf("configuration ok\n");
			status = 0;
		}
		goto out_roots;
	}
	/* The first settings snapshot opens the access log. */
	struct settings *initial = settings_new(&config, NULL, error, sizeof(error));
	if (initial == NULL) {
		status = fail(error);
		goto out_roots;
	}
	if ((service.settings = settings_board_new(initial, config.workers)) == NULL) {
		status = fail("out of memory for the settings");
		goto out_roots;
	}

	service.delivery = delivery_for(&config);
	service.lookup_cache = lookup_cache_new(config.lookup_cache_entries, config.lookup_cache_ttl,
						config.lookup_cache_negative_ttl);
	service.file_cache = file_cache_new(config.open_file_cache_entries,
					    config.open_file_cache_valid,
					    config.open_file_cache_inactive);
	service.metrics = metrics_new(config.workers, config.lookup_threads);
	if (service.lookup_cache == NULL || service.file_cache == NULL || service.metrics == NULL) {
		status = fail("out of memory for the caches and counters");
		goto out_caches;
	}
	mongoc_log_set_handler(on_mongoc_log, NULL);
	mongoc_init();
	evthread_use_pthreads();
	notify_init();

	status = serve(&config, &service, &handled_signals, config.user != NULL ? &user : NULL,
		       descriptor_limit, &reload);

	mongoc_cleanup();
out_caches:
	metrics_free(service.metrics);
	file_cache_free(service.file_cache);
	lookup_cache_free(service.lookup_cache);
	libevent_global_shutdown();
out_roots:
	settings_board_free(service.settings);
	media_roots_free(&service.media_roots);
out:
	reload_free(&reload);
	log_close();
	config_free(&config);
	return status;
}
