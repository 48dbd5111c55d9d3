/*
 * main: start-up and shutdown. Everything that can be wrong with the
 * configuration (options, config file, media roots, access log, listen
 * address, MongoDB URI) is found here and reported in one line with exit
 * status 2, before a single connection is accepted. SIGINT and SIGTERM stop
 * accepting, let responses in flight finish (bounded), and exit 0.
 */
#include <event2/event.h>
#include <event2/thread.h>
#include <mongoc/mongoc.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "descriptor_budget.h"
#include "gridfs_spool.h"
#include "listener.h"
#include "log.h"
#include "lookup.h"
#include "media.h"
#include "service.h"
#include "worker.h"

#ifndef MUSICD_VERSION
#define MUSICD_VERSION "dev"
#endif

#define EXIT_CONFIG 2
#define SHUTDOWN_GRACE_MS 10000

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

/* Blocks the stop signals in every thread created from here on; main waits for them. */
static void block_stop_signals(sigset_t *stop_signals)
{
	sigemptyset(stop_signals);
	sigaddset(stop_signals, SIGINT);
	sigaddset(stop_signals, SIGTERM);
	pthread_sigmask(SIG_BLOCK, stop_signals, NULL);
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

/*
 * The access log can be opened for appending, checked without creating it:
 * its directory must exist and be writable (or the file itself, if it exists).
 */
static int check_access_log(const char *target, char *error, size_t error_size)
{
	if (target == NULL || strcmp(target, "-") == 0)
		return 0;
	if (access(target, F_OK) == 0) {
		if (access(target, W_OK) == 0)
			return 0;
	} else {
		char directory[PATH_MAX];
		snprintf(directory, sizeof(directory), "%s", target);
		char *slash = strrchr(directory, '/');
		const char *parent = slash == NULL ? "." : slash == directory ? "/" : directory;
		if (slash != NULL && slash != directory)
			*slash = '\0';
		if (access(parent, W_OK | X_OK) == 0)
			return 0;
	}
	snprintf(error, error_size, "access log %s: %s", target, strerror(errno));
	return -1;
}

static int fail(const char *message)
{
	fprintf(stderr, "musicd: %s\n", message);
	return EXIT_CONFIG;
}

/* Opens every worker's listening socket; -1 with a message. */
static int open_listeners(const struct config *config, int *fds, char *error, size_t error_size)
{
	if (listener_check_free(config->listen_host, config->listen_port, error, error_size) < 0)
		return -1;
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

static int serve(const struct config *config, struct service *service, const sigset_t *stop_signals,
		 unsigned long long descriptor_limit)
{
	char error[CONFIG_ERROR_MAX];
	int listen_fds[CONFIG_MAX_WORKERS];
	struct worker *workers = calloc(config->workers, sizeof(*workers));
	atomic_uint open_connections = 0;
	unsigned started = 0;
	int status = EXIT_CONFIG;

	if (workers == NULL)
		return fail("out of memory");
	if (open_listeners(config, listen_fds, error, sizeof(error)) < 0) {
		free(workers);
		return fail(error);
	}
	service->lookups = lookup_pool_start(config, config->max_pending_lookups, error, sizeof(error));
	if (service->lookups == NULL) {
		fail(error);
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
	log_info("musicd %s listening on %s:%u (%u workers, %u lookup threads, database %s.%s)",
		 MUSICD_VERSION, config->listen_host, config->listen_port, config->workers,
		 config->lookup_threads, config->database, config->collection);
	log_info("descriptor limit %llu: at most %u connections at once", descriptor_limit,
		 config->max_connections);
	log_info("files are delivered by %s", service->delivery->name);

	int signal_number = 0;
	sigwait(stop_signals, &signal_number);
	log_info("%s: stopping; letting responses in flight finish", strsignal(signal_number));
	status = 0;

stop: {
	unsigned grace_ms = SHUTDOWN_GRACE_MS;
	if (grace_ms < config->lookup_timeout_ms + 1000)
		grace_ms = config->lookup_timeout_ms + 1000;
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

int main(int argc, char **argv)
{
	struct config config;
	struct service service = {.config = &config};
	enum config_action action;
	char error[CONFIG_ERROR_MAX];
	sigset_t stop_signals;
	int status;

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
	if (action == CONFIG_ACTION_CHECK) {
		/* As nginx -t: everything start-up checks, but no socket, no database, no file made. */
		mongoc_log_set_handler(NULL, NULL); /* its parse errors come back in error */
		if (check_access_log(config.access_log, error, sizeof(error)) < 0 ||
		    lookup_check_uri(&config, error, sizeof(error)) < 0) {
			status = fail(error);
		} else {
			printf("configuration ok\n");
			status = 0;
		}
		goto out_roots;
	}
	if (config.access_log != NULL &&
	    (service.access_log = access_log_open(config.access_log, error, sizeof(error))) == NULL) {
		status = fail(error);
		goto out_roots;
	}

	service.delivery = delivery_for(&config);
	for (size_t i = 0; i < config.trusted_proxy_count; i++)
		cidr_parse(config.trusted_proxies[i], &service.trusted_proxies[i]); /* validated */
	service.trusted_proxy_count = config.trusted_proxy_count;
	/* Before any thread starts (the open-file cache's lease thread is the first). */
	block_stop_signals(&stop_signals);
	service.lookup_cache = lookup_cache_new(config.lookup_cache_entries, config.lookup_cache_ttl,
						config.lookup_cache_negative_ttl);
	service.file_cache = file_cache_new(config.open_file_cache_entries,
					    config.open_file_cache_valid,
					    config.open_file_cache_inactive);
	if (service.lookup_cache == NULL || service.file_cache == NULL) {
		status = fail("out of memory for the caches");
		goto out_caches;
	}
	mongoc_log_set_handler(on_mongoc_log, NULL);
	mongoc_init();
	evthread_use_pthreads();

	status = serve(&config, &service, &stop_signals, descriptor_limit);

	mongoc_cleanup();
out_caches:
	file_cache_free(service.file_cache);
	lookup_cache_free(service.lookup_cache);
	libevent_global_shutdown();
	access_log_close(service.access_log);
out_roots:
	media_roots_free(&service.media_roots);
out:
	config_free(&config);
	return status;
}
