/*
 * metrics_page: a snapshot summed over every shard, formatted into a buffer
 * that grows to the largest scrape and is then reused.
 */
#include "respond/metrics_page.h"

#include <stdlib.h>

#include "base/access_log.h"
#include "base/log.h"
#include "base/metrics_process.h"
#include "base/metrics_text.h"
#include "config/config.h"
#include "respond/answer.h"

#define METRICS_TEXT_INITIAL (16 * 1024)

struct metrics_page {
	struct metrics_sources sources;
	struct metrics_snapshot snapshot;
	char *text;
	size_t text_size;
};

struct metrics_page *metrics_page_new(const struct metrics_sources *sources)
{
	struct metrics_page *page = calloc(1, sizeof(*page));
	if (page == NULL || (page->text = malloc(METRICS_TEXT_INITIAL)) == NULL) {
		free(page);
		return NULL;
	}
	page->sources = *sources;
	page->text_size = METRICS_TEXT_INITIAL;
	page->snapshot.process.start_time_seconds = metrics_process_start_time();
	return page;
}

void metrics_page_free(struct metrics_page *page)
{
	if (page == NULL)
		return;
	free(page->text);
	free(page);
}

/* The limits as config says now (restart-only ones as settled at start, live ones as reloaded). */
static struct metrics_limits limits_of(const struct config *config)
{
	return (struct metrics_limits){
		.connections = config->max_connections,
		.lookup_threads = config->lookup_threads,
		.lookups_in_flight = config->max_pending_lookups,
		.lookup_cache_entries = config->lookup_cache_entries,
		.file_cache_entries = config->open_file_cache_entries,
		.streams_per_client = config->max_streams_per_client,
		.limit_rate = config->limit_rate,
		.disk_window = config->disk_window,
	};
}

/* The snapshot's text in page->text; its length, or 0 if out of memory. */
static size_t format_snapshot(struct metrics_page *page, const struct config *config)
{
	const struct metrics_sources *sources = &page->sources;
	struct metrics_snapshot *snapshot = &page->snapshot;
	metrics_collect(sources->metrics, snapshot);
	struct cache_stats lookups = lookup_cache_stats(sources->lookup_cache);
	struct cache_stats files = file_cache_stats(sources->file_cache);
	snapshot->lookup_cache = (struct metrics_cache_snapshot){
		lookups.hits, lookups.misses, lookups.evictions, lookups.entries};
	snapshot->file_cache =
		(struct metrics_cache_snapshot){files.hits, files.misses, files.evictions, files.entries};
	snapshot->connections_open = atomic_load(sources->open_connections);
	snapshot->client_streams = address_counts_total(sources->client_places);
	if (sources->disk != NULL)
		disk_io_collect(sources->disk, &snapshot->disk);
	snapshot->log_lines_dropped[METRICS_LOG_ACCESS] = access_log_dropped_lines();
	snapshot->log_lines_dropped[METRICS_LOG_ERROR] = log_dropped_lines();
	snapshot->version = sources->version;
	snapshot->limits = limits_of(config);
	snapshot->have_process = metrics_process_read(&snapshot->process) == 0;

	for (;;) {
		size_t length = metrics_text_format(snapshot, page->text, page->text_size);
		if (length < page->text_size)
			return length;
		char *grown = realloc(page->text, length + 1);
		if (grown == NULL)
			return 0;
		page->text = grown;
		page->text_size = length + 1;
	}
}

void metrics_page_answer(struct exchange *exchange, const struct request *request,
			 struct metrics_page *page)
{
	size_t length = format_snapshot(page, request->config);
	if (length == 0) {
		log_error("metrics: out of memory formatting a scrape");
		answer_error(exchange, request, 500);
		return;
	}
	answer_body(exchange, request, 200, METRICS_TEXT_CONTENT_TYPE, page->text, length);
}
