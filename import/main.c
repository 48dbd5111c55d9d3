/*
 * musicd-import: from a directory of music to the documents musicd serves.
 * The run: options -> the directories resolved -> the database (index) ->
 * the walk -> the known documents -> each file classified (plan) -> new and
 * changed files read in parallel (pool) and written in bulk (store) ->
 * --prune -> one summary line. Exit status 0: all imported; 1: some files
 * skipped; 2: a usage or database error.
 */
#include "console.h"
#include "escape.h"
#include "known.h"
#include "options.h"
#include "plan.h"
#include "pool.h"
#include "store.h"
#include "summary.h"
#include "tags.h"
#include "walk.h"

#include <errno.h>
#include <limits.h>
#include <mongoc/mongoc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MUSICD_VERSION
#define MUSICD_VERSION "unknown"
#endif

#define EXIT_ALL_IMPORTED 0
#define EXIT_SOME_SKIPPED 1
#define EXIT_USAGE_OR_DATABASE 2
#define PROGRESS_WAIT_MS 250

/* The state of one run; released by run_free. */
struct run {
	struct import_options options;
	struct console console;
	struct store store;
	struct walk walk;
	struct known known;
	char *roots[IMPORT_MAX_DIRS]; /* canonical; owned */
	size_t root_count;
	struct summary summary;
	char error[1024];
};

static void on_mongoc_log(mongoc_log_level_t level, const char *domain, const char *message,
			  void *data)
{
	struct console *console = data;
	/* Warnings (FerretDB's missing endSessions at shutdown) are not the user's business. */
	if (level <= MONGOC_LOG_LEVEL_ERROR && console != NULL)
		console_error(console, "libmongoc %s: %s", domain, message);
}

/* Each DIR as a canonical absolute path; an error names the one that is not a directory. */
static int resolve_roots(struct run *run)
{
	for (size_t i = 0; i < run->options.dir_count; i++) {
		const char *dir = run->options.dirs[i];
		char *resolved = realpath(dir, NULL);
		struct stat st;
		char *shown = escape_for_terminal(dir, strlen(dir));
		if (resolved == NULL || stat(resolved, &st) < 0 || !S_ISDIR(st.st_mode)) {
			snprintf(run->error, sizeof(run->error), "%s: %s", shown ? shown : "DIR",
				 resolved == NULL ? strerror(errno) : "not a directory");
			free(shown);
			free(resolved);
			return -1;
		}
		if (!escape_is_utf8(resolved, strlen(resolved))) {
			snprintf(run->error, sizeof(run->error),
				 "%s: the directory's path is not valid UTF-8", shown ? shown : "DIR");
			free(shown);
			free(resolved);
			return -1;
		}
		free(shown);
		run->roots[run->root_count++] = resolved;
	}
	return 0;
}

/* stdout: one line per change in a dry run, one URL per added track with --print-urls. */
static void print_change(const char *verb, const char *path)
{
	char *shown = escape_for_terminal(path, strlen(path));
	printf("would %s %s\n", verb, shown ? shown : "(out of memory)");
	free(shown);
}

static void print_url(const char *base, const bson_oid_t *id, const char *path)
{
	char hex[25];
	bson_oid_to_string(id, hex);
	const char *name = strrchr(path, '/');
	char *escaped = escape_for_url(name ? name + 1 : path);
	printf("%s/musicdb/%s/%s\n", base, hex, escaped ? escaped : "");
	free(escaped);
}

/* The files to read: new or changed ones; unchanged ones only counted. */
static struct pool_item *classify(struct run *run, size_t *count)
{
	struct pool_item *items = calloc(run->walk.count ? run->walk.count : 1, sizeof(*items));
	if (items == NULL)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < run->walk.count; i++) {
		const struct walk_entry *entry = &run->walk.entries[i];
		struct known_entry *known = known_find(&run->known, entry->path);
		if (known != NULL)
			known->seen = true;
		enum plan_action action =
			plan_classify(known, entry->size, entry->mtime_ms, run->options.hash);
		if (action == PLAN_UNCHANGED) {
			run->summary.unchanged++;
			continue;
		}
		items[n].path = entry->path;
		items[n].action = action;
		n++;
	}
	*count = n;
	return items;
}

/* Executes a full or final batch, counts what it wrote, prints the URLs of what it added. */
static int flush_batch(struct run *run, struct store_batch *batch, struct pool_item *items,
		       size_t first, size_t end, const bson_oid_t *ids)
{
	size_t raced = 0, added = 0, updated = 0;
	if (store_batch_execute(batch, &raced, run->error, sizeof(run->error)) < 0)
		return -1;
	for (size_t i = first; i < end; i++) {
		if (items[i].status != 0)
			continue;
		if (items[i].action == PLAN_UPDATE) {
			updated++;
			continue;
		}
		added++;
		if (run->options.print_urls != NULL)
			print_url(run->options.print_urls, &ids[i - first], items[i].path);
	}
	fflush(stdout);
	/* An insert that lost a race with another writer became an update of its document. */
	run->summary.added += added - raced;
	run->summary.updated += updated + raced;
	return 0;
}

/* Reads (in parallel) and writes (in order) the new and changed files. */
static int import_files(struct run *run, struct pool_item *items, size_t count)
{
	struct pool pool;
	unsigned jobs = run->options.jobs;
	if (jobs == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		jobs = cpus < 1 ? 1 : cpus > IMPORT_MAX_JOBS ? IMPORT_MAX_JOBS : (unsigned)cpus;
	}
	if (count == 0)
		return 0;
	/* Readers may fill the next batch while the current one is written. */
	if (pool_start(&pool, items, count, jobs, 2 * STORE_BATCH_MAX, run->options.hash) < 0) {
		snprintf(run->error, sizeof(run->error), "cannot start reader threads");
		return -1;
	}
	static bson_oid_t ids[STORE_BATCH_MAX];
	struct store_batch batch;
	store_batch_init(&batch, &run->store);
	size_t batch_first = 0;
	size_t found = run->walk.count;
	int status = 0;

	for (size_t i = 0; i < count && status == 0; i++) {
		struct pool_item *item;
		while ((item = pool_wait(&pool, i, PROGRESS_WAIT_MS)) == NULL)
			console_progress(&run->console, run->summary.unchanged + i, found, false);
		console_progress(&run->console, run->summary.unchanged + i + 1, found, i + 1 == count);
		if (item->status < 0) {
			snprintf(run->error, sizeof(run->error), "%s", item->reason);
			status = -1;
			break;
		}
		if (item->status > 0) {
			console_skip(&run->console, item->path, "%s", item->reason);
		} else if (run->options.dry_run) {
			print_change(item->action == PLAN_ADD ? "add" : "update", item->path);
		} else if (item->action == PLAN_ADD) {
			bson_oid_init(&ids[i - batch_first], NULL);
			store_batch_insert(&batch, &item->track, &ids[i - batch_first]);
		} else {
			store_batch_update(&batch, &item->track);
		}
		if (item->status == 0 && run->options.dry_run)
			*(item->action == PLAN_ADD ? &run->summary.added : &run->summary.updated) += 1;
		if (STORE_BATCH_FULL(&batch) || i + 1 - batch_first == STORE_BATCH_MAX ||
		    i + 1 == count) {
			if (!run->options.dry_run)
				status = flush_batch(run, &batch, items, batch_first, i + 1, ids);
			pool_release(&pool, i + 1);
			batch_first = i + 1;
		}
	}
	if (status < 0 && batch.bulk != NULL) {
		mongoc_bulk_operation_destroy(batch.bulk); /* never executed: nothing half-written */
		batch.bulk = NULL;
	}
	pool_stop(&pool);
	return status;
}

/* --prune: documents under the roots whose files the walk did not find and that are gone. */
static int prune(struct run *run)
{
	const char *paths[STORE_BATCH_MAX];
	size_t count = 0;
	for (size_t i = 0; i < run->known.count; i++) {
		const struct known_entry *entry = &run->known.entries[i];
		if (!plan_prune_candidate(entry, (const char *const *)run->roots, run->root_count))
			continue;
		struct stat st;
		if (lstat(entry->path, &st) == 0 || (errno != ENOENT && errno != ENOTDIR))
			continue; /* still there (unreadable, or not an audio file now): kept */
		if (run->options.dry_run) {
			print_change("prune", entry->path);
			run->summary.pruned++;
			continue;
		}
		paths[count++] = entry->path;
		if (count == STORE_BATCH_MAX) {
			if (store_delete_paths(&run->store, paths, count, run->error,
					       sizeof(run->error)) < 0)
				return -1;
			run->summary.pruned += count;
			count = 0;
		}
	}
	if (store_delete_paths(&run->store, paths, count, run->error, sizeof(run->error)) < 0)
		return -1;
	run->summary.pruned += count;
	return 0;
}

static void print_summary(struct run *run)
{
	char line[512];
	run->summary.skipped = console_skipped(&run->console);
	run->summary.seconds = console_elapsed(&run->console);
	run->summary.dry_run = run->options.dry_run;
	int formatted = run->options.json
				? summary_format_json(&run->summary, line, sizeof(line))
				: summary_format_text(&run->summary, line, sizeof(line));
	if (formatted == 0)
		printf("%s\n", line);
	fflush(stdout);
}

/* The run after the options: returns the exit status. */
static int run_import(struct run *run)
{
	if (resolve_roots(run) < 0)
		return EXIT_USAGE_OR_DATABASE;
	if (store_open(&run->store, &run->options.config, run->error, sizeof(run->error)) < 0)
		return EXIT_USAGE_OR_DATABASE;
	if (!run->options.dry_run &&
	    store_ensure_index(&run->store, run->error, sizeof(run->error)) < 0)
		return EXIT_USAGE_OR_DATABASE;
	if (walk_roots((const char *const *)run->roots, run->root_count, &run->walk,
		       &run->console) < 0) {
		snprintf(run->error, sizeof(run->error), "out of memory");
		return EXIT_USAGE_OR_DATABASE;
	}
	if (store_load_known(&run->store, (const char *const *)run->roots, run->root_count,
			     &run->known, run->error, sizeof(run->error)) < 0)
		return EXIT_USAGE_OR_DATABASE;

	size_t count;
	struct pool_item *items = classify(run, &count);
	if (items == NULL) {
		snprintf(run->error, sizeof(run->error), "out of memory");
		return EXIT_USAGE_OR_DATABASE;
	}
	int status = import_files(run, items, count);
	free(items);
	console_progress_end(&run->console);
	if (status == 0 && run->options.prune)
		status = prune(run);
	print_summary(run);
	if (status < 0)
		return EXIT_USAGE_OR_DATABASE;
	return run->summary.skipped > 0 ? EXIT_SOME_SKIPPED : EXIT_ALL_IMPORTED;
}

int main(int argc, char **argv)
{
	static struct run run;
	enum import_action action;
	int status;

	console_init(&run.console);
	import_options_init(&run.options);
	known_init(&run.known);
	if (import_options_load(&run.options, argc, argv, getenv("MONGODB_URI"), &action,
				run.error, sizeof(run.error)) < 0) {
		fprintf(stderr, "musicd-import: %s\n", run.error);
		import_options_free(&run.options);
		return EXIT_USAGE_OR_DATABASE;
	}
	if (action == IMPORT_HELP) {
		import_options_usage(stdout, "musicd-import");
		import_options_free(&run.options);
		return EXIT_ALL_IMPORTED;
	}
	if (action == IMPORT_VERSION) {
		printf("musicd-import %s\n", MUSICD_VERSION);
		import_options_free(&run.options);
		return EXIT_ALL_IMPORTED;
	}

	mongoc_log_set_handler(on_mongoc_log, &run.console);
	mongoc_init();
	tags_init();
	status = run_import(&run);
	if (status == EXIT_USAGE_OR_DATABASE)
		console_error(&run.console, "%s", run.error);

	store_close(&run.store);
	mongoc_cleanup();
	walk_free(&run.walk);
	known_free(&run.known);
	for (size_t i = 0; i < run.root_count; i++)
		free(run.roots[i]);
	import_options_free(&run.options);
	console_destroy(&run.console);
	return status;
}
