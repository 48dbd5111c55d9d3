/*
 * musicd-import: from a directory of music to the documents musicd serves.
 * The run: options -> the directories resolved -> the database (index) ->
 * the known documents -> the walk -> each file classified (plan) -> new and
 * changed files read in parallel (pool) and written in bulk (batch), each
 * write counted only as its reply (or, after a failure, the collection) says
 * -> --prune, or a note of the files gone -> --print-urls -> one summary
 * line. Exit status 0: all imported; 1: some files skipped; 2: a usage or
 * database error.
 */
#include "batch.h"
#include "console.h"
#include "escape.h"
#include "known.h"
#include "listing.h"
#include "options.h"
#include "plan.h"
#include "pool.h"
#include "store.h"
#include "summary.h"
#include "tags.h"
#include "walk.h"

#include "config/url_keys.h"

#include <errno.h>
#include <limits.h>
#include <mongoc/mongoc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MUSICD_VERSION
#define MUSICD_VERSION "unknown"
#endif
/* musicd's configuration file, read without --config as musicd reads it (the Makefile's). */
#ifndef MUSICD_CONFIG_FILE
#error "MUSICD_CONFIG_FILE: the installed musicd.conf's path (the Makefile defines it)"
#endif

#define EXIT_ALL_IMPORTED 0
#define EXIT_SOME_SKIPPED 1
#define EXIT_USAGE_OR_DATABASE 2
#define PROGRESS_WAIT_MS 250
/*
 * The first write is sent after this many files, each next one after twice as
 * many up to BATCH_INSERTS_MAX: the database, which takes longer over a
 * document than a reader does over its file, starts early instead of idling
 * until 4,000 files are read.
 */
#define FIRST_WRITE_ITEMS 256

/* The state of one run; released by run_free. */
struct run {
	struct import_options options;
	struct console console;
	struct store store;
	struct walk walk;
	struct known known;
	struct listing listing; /* --print-urls */
	struct url_keys signing_keys; /* --url-signing-key-file, for --print-urls; count 0: none */
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
		if (!bson_utf8_validate(resolved, strlen(resolved), false)) {
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

/* stdout: one line per change in a dry run. */
static void print_change(struct run *run, const char *verb, const char *path)
{
	char *shown = escape_for_terminal(path, strlen(path));
	console_print(&run->console, "would %s %s\n", verb, shown ? shown : "(out of memory)");
	free(shown);
}

/* A track for --print-urls, if asked for and if its _id is an ObjectId (musicd's :mid). */
static int list_track(struct run *run, const char *path, const bson_oid_t *id,
		      const char *artist, const char *title)
{
	if (run->options.print_urls == NULL || id == NULL)
		return 0;
	if (listing_add(&run->listing, path, id, artist, title) < 0) {
		snprintf(run->error, sizeof(run->error), "out of memory");
		return -1;
	}
	return 0;
}

static int list_known(struct run *run, const struct known_entry *known)
{
	return list_track(run, known->path, known->has_oid ? &known->id : NULL, known->artist,
			  known->title);
}

/* The files to read: new or changed ones; unchanged ones only counted (and listed). */
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
			if (list_known(run, known) < 0) {
				free(items);
				return NULL;
			}
			continue;
		}
		items[n].path = entry->path;
		items[n].action = action;
		items[n].known = known;
		n++;
	}
	*count = n;
	return items;
}

/* Counts, reports and lists what became of each write of a batch. */
static int tally(struct run *run, const struct batch_op *ops, const struct op_result *results,
		 size_t count, bool inserts)
{
	for (size_t i = 0; i < count; i++) {
		const struct track *track = ops[i].track;
		switch (results[i].outcome) {
		case OP_WRITTEN:
			if (inserts && !ops[i].raced)
				run->summary.added++;
			else
				run->summary.updated++;
			if (list_track(run, track->path, ops[i].has_id ? &ops[i].id : NULL,
				       track->artist, track->title) < 0)
				return -1;
			break;
		case OP_DUPLICATE:
		case OP_REFUSED:
			console_skip(&run->console, track->path, "the database refused its document: %s",
				     results[i].message);
			break;
		case OP_UNKNOWN:
			run->summary.unconfirmed++;
			break;
		case OP_NOT_WRITTEN:
			break;
		}
	}
	return 0;
}

/* Executes a full or final batch and counts what it wrote. */
static int flush_batch(struct run *run, struct batch *batch)
{
	int status = batch_execute(batch, run->error, sizeof(run->error));
	if (tally(run, batch->inserts, batch->insert_results, batch->insert_count, true) < 0 ||
	    tally(run, batch->upserts, batch->upsert_results, batch->upsert_count, false) < 0)
		status = -1;
	batch_clear(batch);
	return status;
}

/* One file read: queued for writing, or said in a dry run; 1 when its document cannot be. */
static int take_item(struct run *run, struct batch *batch, struct pool_item *item,
		     bson_oid_t *id)
{
	char reason[POOL_REASON_MAX];
	int queued;
	if (run->options.dry_run) {
		print_change(run, item->action == PLAN_ADD ? "add" : "update", item->path);
		*(item->action == PLAN_ADD ? &run->summary.added : &run->summary.updated) += 1;
		return item->known != NULL ? list_known(run, item->known) : 0;
	}
	if (item->action == PLAN_ADD) {
		bson_oid_init(id, NULL);
		queued = batch_insert(batch, &item->track, id, reason, sizeof(reason));
	} else {
		const struct known_entry *known = item->known;
		queued = batch_upsert(batch, &item->track,
				      known != NULL && known->has_oid ? &known->id : NULL, reason,
				      sizeof(reason));
	}
	if (queued > 0)
		console_skip(&run->console, item->path, "%s", reason);
	return queued < 0 ? -1 : 0;
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
	struct batch *batch = malloc(sizeof(*batch));
	if (batch == NULL) {
		snprintf(run->error, sizeof(run->error), "out of memory");
		return -1;
	}
	batch_init(batch, &run->store);
	/* Readers may fill the next batch while the current one is written. */
	if (pool_start(&pool, items, count, jobs, 2 * BATCH_INSERTS_MAX, run->options.hash) < 0) {
		snprintf(run->error, sizeof(run->error), "cannot start reader threads");
		free(batch);
		return -1;
	}
	size_t released = 0, write_at = FIRST_WRITE_ITEMS;
	int status = 0;

	console_reading(&run->console, run->walk.count, run->summary.unchanged, count);
	for (size_t i = 0; i < count && status == 0; i++) {
		struct pool_item *item;
		while ((item = pool_wait(&pool, i, PROGRESS_WAIT_MS)) == NULL)
			console_read_progress(&run->console, i, NULL, false);
		console_read_progress(&run->console, i + 1, item->path, i + 1 == count);
		if (item->status < 0) {
			snprintf(run->error, sizeof(run->error), "%s", item->reason);
			status = -1;
			break;
		}
		if (item->status > 0)
			console_skip(&run->console, item->path, "%s", item->reason);
		else if (take_item(run, batch, item, &item->id) < 0)
			status = -1;
		/*
		 * Also after write_at items whatever the batch holds: files skipped
		 * (or only said, in a dry run) fill no batch, and readers stopped at
		 * the window would wait for a release forever.
		 */
		if (status == 0 && (batch_full(batch) || i + 1 == count ||
				    i + 1 - released == write_at)) {
			status = flush_batch(run, batch);
			pool_release(&pool, i + 1);
			released = i + 1;
			write_at = write_at * 2 < BATCH_INSERTS_MAX ? write_at * 2 : BATCH_INSERTS_MAX;
		}
	}
	batch_clear(batch); /* after an error: whatever was queued is never sent */
	free(batch);
	pool_stop(&pool);
	return status;
}

/* Documents under the roots whose files the walk did not find and that are gone. */
static int gone_paths(struct run *run, const char ***paths_out, size_t *count_out)
{
	const char **paths = malloc((run->known.count ? run->known.count : 1) * sizeof(*paths));
	if (paths == NULL) {
		snprintf(run->error, sizeof(run->error), "out of memory");
		return -1;
	}
	size_t count = 0;
	for (size_t i = 0; i < run->known.count; i++) {
		const struct known_entry *entry = &run->known.entries[i];
		if (!plan_prune_candidate(entry, (const char *const *)run->roots, run->root_count))
			continue;
		struct stat st;
		if (lstat(entry->path, &st) == 0 || (errno != ENOENT && errno != ENOTDIR))
			continue; /* still there (unreadable, or not an audio file now): kept */
		paths[count++] = entry->path;
	}
	*paths_out = paths;
	*count_out = count;
	return 0;
}

/* Deletes one batch of gone documents; after a failure, counts those the collection lost. */
static int delete_gone(struct run *run, const char *const *paths, size_t count)
{
	size_t deleted;
	if (store_delete_paths(&run->store, paths, count, &deleted, run->error,
			       sizeof(run->error)) == 0) {
		run->summary.pruned += deleted;
		return 0;
	}
	struct known left;
	char ignored[256];
	known_init(&left);
	if (store_look_up(&run->store, paths, count, BATCH_LOOK_UP_WAIT_MS, &left, ignored,
			  sizeof(ignored)) == 0)
		run->summary.pruned += count - left.count;
	else
		run->summary.unconfirmed += count;
	known_free(&left);
	return -1;
}

/* --prune deletes the documents of gone files; without it, a note says how many there are. */
static int prune(struct run *run)
{
	const char **paths;
	size_t count;
	int status = 0;
	if (gone_paths(run, &paths, &count) < 0)
		return -1;
	if (!run->options.prune) {
		run->summary.gone = count;
		if (count > 0)
			console_error(&run->console,
				      "%zu file%s gone: run with --prune to remove %s document%s",
				      count, count == 1 ? "" : "s", count == 1 ? "its" : "their",
				      count == 1 ? "" : "s");
	} else if (run->options.dry_run) {
		for (size_t i = 0; i < count; i++)
			print_change(run, "prune", paths[i]);
		run->summary.pruned = count;
	} else {
		for (size_t first = 0; first < count && status == 0; first += BATCH_INSERTS_MAX) {
			size_t n = count - first < BATCH_INSERTS_MAX ? count - first : BATCH_INSERTS_MAX;
			status = delete_gone(run, paths + first, n);
		}
		run->summary.gone = count - run->summary.pruned; /* after a failure: not known deleted */
	}
	free(paths);
	return status;
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
	/* The keys first: a key file that cannot be used stops the run before it writes. */
	if (run->options.print_urls != NULL && run->options.config.url_signing_key_file != NULL &&
	    url_keys_load(run->options.config.url_signing_key_file, &run->signing_keys, run->error,
			  sizeof(run->error)) < 0)
		return EXIT_USAGE_OR_DATABASE;
	if (resolve_roots(run) < 0)
		return EXIT_USAGE_OR_DATABASE;
	if (store_open(&run->store, &run->options.config, run->error, sizeof(run->error)) < 0)
		return EXIT_USAGE_OR_DATABASE;
	if (!run->options.dry_run &&
	    store_ensure_index(&run->store, run->error, sizeof(run->error)) < 0)
		return EXIT_USAGE_OR_DATABASE;
	/* Before the walk: the previous import's count is the walk's progress line's estimate. */
	if (store_load_known(&run->store, (const char *const *)run->roots, run->root_count,
			     run->options.print_urls != NULL, &run->known, &run->console, run->error,
			     sizeof(run->error)) < 0)
		return EXIT_USAGE_OR_DATABASE;
	console_walking(&run->console, run->known.count);
	if (walk_roots((const char *const *)run->roots, run->root_count, &run->walk,
		       &run->console) < 0) {
		snprintf(run->error, sizeof(run->error), "out of memory");
		return EXIT_USAGE_OR_DATABASE;
	}

	size_t count;
	struct pool_item *items = classify(run, &count);
	if (items == NULL) {
		snprintf(run->error, sizeof(run->error), "out of memory");
		return EXIT_USAGE_OR_DATABASE;
	}
	int status = import_files(run, items, count);
	free(items);
	console_progress_end(&run->console);
	if (status == 0)
		status = prune(run);
	struct listing_signer signer = {
		.key = &run->signing_keys.keys[0],
		.parameter = run->options.config.url_signing_parameter,
		.expires = (int64_t)time(NULL) + run->options.url_lifetime,
	};
	if (run->options.print_urls != NULL &&
	    listing_print(&run->listing, run->options.print_urls,
			  run->signing_keys.count > 0 ? &signer : NULL, stdout) < 0 &&
	    status == 0) {
		snprintf(run->error, sizeof(run->error), "out of memory, or a URL too long to sign");
		status = -1;
	}
	if (status < 0 && run->summary.unconfirmed > 0) {
		size_t used = strlen(run->error);
		snprintf(run->error + used, sizeof(run->error) - used,
			 "; %zu writes unconfirmed: the database did not answer for %d s to say "
			 "whether they were stored (a run once it is back completes them)",
			 run->summary.unconfirmed, BATCH_LOOK_UP_WAIT_MS / 1000);
	}
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
	listing_init(&run.listing);
	if (import_options_load(&run.options, argc, argv, getenv("MONGODB_URI"), MUSICD_CONFIG_FILE,
				&action, run.error, sizeof(run.error)) < 0) {
		fprintf(stderr, "musicd-import: %s\n", run.error);
		import_options_free(&run.options);
		return EXIT_USAGE_OR_DATABASE;
	}
	if (run.options.json)
		console_hide_progress(&run.console);
	if (action == IMPORT_HELP) {
		import_options_usage(stdout, "musicd-import", MUSICD_CONFIG_FILE);
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
	listing_free(&run.listing);
	url_keys_clear(&run.signing_keys);
	for (size_t i = 0; i < run.root_count; i++)
		free(run.roots[i]);
	import_options_free(&run.options);
	console_destroy(&run.console);
	return status;
}
