/*
 * main: start-up and shutdown. Everything that can be wrong with the
 * configuration (options, config file, media roots, logs, --user, listen
 * address, MongoDB URI) is found here and reported in one line with exit
 * status 2, before a single connection is accepted. Then the main thread
 * waits for signals: SIGUSR1 reopens the logs; SIGHUP re-reads the config
 * file (reload.c); SIGINT and SIGTERM drain musicd without dropping a
 * connection (worker.c, exchange.c; bounded), and exit 0. systemd hears of
 * each step (notify.c). This file turns the configuration into the shared
 * resources (and answers -t, -h, -V); run.c runs them.
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

#include "base/log.h"
#include "base/log_file.h"
#include "base/log_writer.h"
#include "config/config.h"
#include "config/config_sources.h"
#include "config/settings.h"
#include "config/url_keys.h"
#include "db/db_pool.h"
#include "db/db_reach.h"
#include "db/gridfs_spool.h"
#include "media/disk_io.h"
#include "media/media.h"
#include "ops/descriptor_budget.h"
#include "ops/log_files.h"
#include "ops/notify.h"
#include "ops/pid_file.h"
#include "ops/privileges.h"
#include "ops/reload.h"
#include "ops/run.h"
#include "ops/sign_url.h"
#include "respond/resources.h"

#ifndef MUSICD_VERSION
#define MUSICD_VERSION "dev"
#endif
/* The configuration file musicd reads without --config: the one make install puts in sysconfdir. */
#ifndef MUSICD_CONFIG_FILE
#error "MUSICD_CONFIG_FILE: the installed musicd.conf's path (the Makefile defines it)"
#endif
/* How long the end of main waits for each log's writer to write what it holds (a hung log). */
#define EXIT_LOG_WAIT_MS 2000


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
		.batched_closes = DISK_LANES(config->media_root_count) * DISK_CLOSE_BATCH,
		.max_connections = config->max_connections,
		.max_connections_ceiling = CONFIG_MAX_CONNECTIONS,
		.metrics_connections = config->metrics_host != NULL ? METRICS_MAX_CONNECTIONS : 0,
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

static void log_cache_stats(const struct resources *resources)
{
	struct cache_stats lookups = lookup_cache_stats(resources->lookup_cache);
	struct cache_stats files = file_cache_stats(resources->file_cache);
	log_info("lookup cache: %llu hits, %llu misses, %llu evictions, %llu entries",
		 (unsigned long long)lookups.hits, (unsigned long long)lookups.misses,
		 (unsigned long long)lookups.evictions, (unsigned long long)lookups.entries);
	log_info("open-file cache: %llu hits, %llu misses, %llu evictions, %llu entries (%zu checked "
		 "by lease)",
		 (unsigned long long)files.hits, (unsigned long long)files.misses,
		 (unsigned long long)files.evictions, (unsigned long long)files.entries,
		 file_cache_leased(resources->file_cache));
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

static int check_pid_file_as_user(const void *path, char *error, size_t error_size)
{
	return pid_file_check(path, error, error_size);
}

/* -t: the pid file as run writes it, after the drop to --user (as check_spool). */
static int check_pid_file(const struct config *config, const struct privileges *user,
			  char *error, size_t error_size)
{
	if (config->pid_file == NULL)
		return 0;
	if (user == NULL || geteuid() != 0)
		return pid_file_check(config->pid_file, error, error_size);
	return privileges_check_as(user, check_pid_file_as_user, config->pid_file, error,
				   error_size);
}

static int check_url_keys_as_user(const void *arg, char *error, size_t error_size)
{
	struct url_keys keys;
	int status = url_keys_load(arg, &keys, error, error_size);
	url_keys_clear(&keys);
	return status;
}

/*
 * -t: the URL-signing key file as start-up reads it, and as SIGHUP re-reads
 * it, which is after the drop: as --user too when musicd is root.
 */
static int check_url_keys(const struct config *config, const struct privileges *user,
			  char *error, size_t error_size)
{
	const char *path = config->url_signing_key_file;
	if (path == NULL)
		return 0;
	if (check_url_keys_as_user(path, error, error_size) < 0)
		return -1;
	if (user == NULL || geteuid() != 0)
		return 0;
	char reason[CONFIG_ERROR_MAX];
	if (privileges_check_as(user, check_url_keys_as_user, path, reason, sizeof(reason)) < 0) {
		snprintf(error, error_size, "%.380s (as --user %.64s, who re-reads it on SIGHUP)",
			 reason, user->user);
		return -1;
	}
	return 0;
}

/*
 * -t's answer, as nginx -t names the file it read: which configuration file
 * was read (or why none was), and that the database was not contacted.
 */
static void print_check_answer(const struct config *config)
{
	if (config->config_file != NULL)
		printf("configuration ok (read %s)\n", config->config_file);
	else if (config->config_off)
		printf("configuration ok (no configuration file: --config %s)\n", CONFIG_FILE_OFF);
	else
		printf("configuration ok (no configuration file: %s does not exist)\n",
		       MUSICD_CONFIG_FILE);
}

/*
 * -t --check-database: one server selection, as the lookups would make it
 * (on this thread: -t serves nothing). 0 with the server named on stdout, or
 * -1 with the reason.
 */
static int check_database(const struct config *config, char *error, size_t error_size)
{
	char server[CONFIG_ERROR_MAX];
	mongoc_init();
	int status = db_reach_check(config, server, sizeof(server), error, error_size);
	mongoc_cleanup();
	if (status == 0)
		printf("database reached: %s\n", server);
	return status;
}

int main(int argc, char **argv)
{
	struct config config;
	struct resources resources = {.config = &config};
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
	if (config_load(&config, argc, argv, getenv("MONGODB_URI"), MUSICD_CONFIG_FILE, &action,
			error, sizeof(error)) < 0) {
		status = run_failed(error);
		goto out;
	}
	if (action == CONFIG_ACTION_HELP) {
		config_print_usage(argv[0], MUSICD_CONFIG_FILE);
		status = 0;
		goto out;
	}
	if (action == CONFIG_ACTION_VERSION) {
		printf("musicd %s\n", MUSICD_VERSION);
		status = 0;
		goto out;
	}
	if (action == CONFIG_ACTION_SIGN_URL) {
		status = sign_url_print(&config);
		goto out;
	}
	log_set_level(config.log_level);
	/*
	 * The logs may be --user's files (or root's): it could not reopen them otherwise. A user
	 * that does not exist is reported below, in its turn; until then only root's may be.
	 */
	if (config.user != NULL && privileges_resolve(config.user, "--user", &user, error,
						      sizeof(error)) == 0)
		log_file_set_owner(user.uid);
	/* The error log first, so every start-up message lands in it (-t makes no file). */
	if (action != CONFIG_ACTION_CHECK && log_open(config.error_log, error, sizeof(error)) < 0) {
		status = run_failed(error);
		goto out;
	}
	/* From here on a thread that logs never waits for the log (-t writes its lines at once). */
	if (action != CONFIG_ACTION_CHECK && log_start_writer() < 0)
		log_warn("error log: no writer thread (out of memory or threads): lines are written "
			 "by whoever logs");
	/* The settings as given, before the worker count and connection cap are settled. */
	if (reload_init(&reload, argc, argv, &config) < 0) {
		status = run_failed("out of memory");
		goto out;
	}
	unsigned long long descriptor_limit = raise_descriptor_limit();
	if (plan_descriptors(&config, descriptor_limit, error, sizeof(error)) < 0) {
		status = run_failed(error);
		goto out;
	}

	if (media_roots_resolve(&resources.media_roots, config.media_roots, config.media_root_count,
				error, sizeof(error)) < 0) {
		status = run_failed(error);
		goto out;
	}
	char user_setting[CONFIG_ERROR_MAX + 8];
	snprintf(user_setting, sizeof(user_setting), "%s%s", config.user_origin,
		 config.user_origin[0] != '\0' ? ": user" : "--user");
	if (config.user != NULL &&
	    privileges_resolve(config.user, user_setting, &user, error, sizeof(error)) < 0) {
		status = run_failed(error);
		goto out_roots;
	}
	if (action == CONFIG_ACTION_CHECK) {
		/* As nginx -t: everything start-up checks, but no socket, no database, no file made. */
		mongoc_log_set_handler(NULL, NULL); /* its parse errors come back in error */
		if (log_files_check(&config, error, sizeof(error)) < 0 ||
		    check_spool(&config, config.user != NULL ? &user : NULL, error,
				sizeof(error)) < 0 ||
		    check_pid_file(&config, config.user != NULL ? &user : NULL, error,
				   sizeof(error)) < 0 ||
		    check_url_keys(&config, config.user != NULL ? &user : NULL, error,
				   sizeof(error)) < 0 ||
		    db_pool_check_uri(&config, error, sizeof(error)) < 0) {
			status = run_failed(error);
		} else {
			print_check_answer(&config);
			if (!config.check_database) {
				printf("database not contacted (--check-database reaches it)\n");
				status = 0;
			} else {
				status = check_database(&config, error, sizeof(error)) < 0
						 ? run_failed(error)
						 : 0;
			}
		}
		goto out_roots;
	}
	/* The first settings snapshot opens the access log. */
	struct settings *initial = settings_new(&config, NULL, error, sizeof(error));
	if (initial == NULL) {
		status = run_failed(error);
		goto out_roots;
	}
	if (initial->url_keys.count > 0)
		log_info("signed URLs: every track request needs a token (%zu key%s from %s)",
			 initial->url_keys.count, initial->url_keys.count == 1 ? "" : "s",
			 config.url_signing_key_file);
	/* One slot per worker, and one for the metrics listener's. */
	if ((resources.settings = settings_board_new(initial, config.workers + 1)) == NULL) {
		status = run_failed("out of memory for the settings");
		goto out_roots;
	}

	resources.handoff = handoff_for(&config);
	if (config.disk_threads_per_root == 0)
		config.disk_threads_per_root = config.disk_threads > 1 ? config.disk_threads * 3 / 4 : 1;
	struct disk_io_limits disk = {
		.threads = config.disk_threads,
		.root_threads = config.disk_threads_per_root,
		.queue = config.disk_queue,
	};
	resources.disk = disk_io_new(&disk, resources.media_roots.count, error, sizeof(error));
	if (resources.disk == NULL) {
		status = run_failed(error);
		goto out_roots;
	}
	resources.lookup_cache = lookup_cache_new(config.lookup_cache_entries, config.lookup_cache_ttl,
						config.lookup_cache_negative_ttl);
	resources.file_cache = file_cache_new(config.open_file_cache_entries,
					    config.open_file_cache_valid,
					    config.open_file_cache_inactive, resources.disk);
	resources.metrics = metrics_new(config.workers, config.lookup_threads);
	resources.client_places = address_counts_new();
	if (resources.lookup_cache == NULL || resources.file_cache == NULL || resources.metrics == NULL ||
	    resources.client_places == NULL) {
		status = run_failed("out of memory for the caches and counters");
		goto out_caches;
	}
	mongoc_log_set_handler(on_mongoc_log, NULL);
	mongoc_init();
	evthread_use_pthreads();
	notify_init();

	status = run_serving(&config, &resources, &handled_signals, config.user != NULL ? &user : NULL,
		     descriptor_limit, &reload);
	if (status == 0)
		log_cache_stats(&resources);

	mongoc_cleanup();
out_caches:
	address_counts_free(resources.client_places);
	metrics_free(resources.metrics);
	file_cache_free(resources.file_cache);
	lookup_cache_free(resources.lookup_cache);
	/* After the cache: its entries' descriptors are closed by the pool (or left to the exit). */
	disk_io_free(resources.disk);
	libevent_global_shutdown();
out_roots:
	settings_board_free(resources.settings);
	media_roots_free(&resources.media_roots);
out:
	reload_free(&reload);
	/* The access logs let go above, then the error log: what they hold is written, if it can be. */
	log_writer_wait_released(EXIT_LOG_WAIT_MS);
	log_flush(EXIT_LOG_WAIT_MS);
	log_close();
	config_free(&config);
	return status;
}
