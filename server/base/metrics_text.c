/*
 * metrics_text: one snapshot -> the text format Prometheus scrapes. Every
 * family is written with its HELP and TYPE lines even when it has no sample
 * yet (musicd_http_requests_total before the first request), so a scraper
 * always sees the same families. Label values come from fixed tables, except
 * the version, which is escaped as the format asks (\\, \" and \n).
 */
#include "base/metrics_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const double metrics_bucket_bounds[METRICS_BUCKETS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

static const char *const method_names[METRICS_METHOD_COUNT] = {
	[METRICS_METHOD_GET] = "GET",	      [METRICS_METHOD_HEAD] = "HEAD",
	[METRICS_METHOD_POST] = "POST",	      [METRICS_METHOD_PUT] = "PUT",
	[METRICS_METHOD_DELETE] = "DELETE",   [METRICS_METHOD_OPTIONS] = "OPTIONS",
	[METRICS_METHOD_TRACE] = "TRACE",     [METRICS_METHOD_CONNECT] = "CONNECT",
	[METRICS_METHOD_PATCH] = "PATCH",     [METRICS_METHOD_OTHER] = "other",
};

static const char *const lookup_error_names[METRICS_LOOKUP_ERROR_COUNT] = {
	[METRICS_LOOKUP_UNAVAILABLE] = "unavailable",
	[METRICS_LOOKUP_TIMEOUT] = "timeout",
	[METRICS_LOOKUP_ERROR] = "error",
	[METRICS_LOOKUP_REJECTED] = "rejected",
};

static const char *const url_refusal_names[METRICS_URL_REFUSAL_COUNT] = {
	[METRICS_URL_MISSING] = "missing",
	[METRICS_URL_MALFORMED] = "malformed",
	[METRICS_URL_BAD_SIGNATURE] = "bad_signature",
	[METRICS_URL_EXPIRED] = "expired",
	[METRICS_URL_NOT_YET_VALID] = "not_yet_valid",
	[METRICS_URL_WRONG_TRACK] = "wrong_track",
};

const char *metrics_method_name(enum metrics_method method)
{
	return method < METRICS_METHOD_COUNT ? method_names[method] : method_names[METRICS_METHOD_OTHER];
}

enum metrics_method metrics_method_of(const char *name)
{
	/* Methods are case-sensitive (RFC 9110 9.1): "get" is not GET. */
	for (unsigned i = 0; i < METRICS_METHOD_OTHER; i++) {
		if (strcmp(name, method_names[i]) == 0)
			return (enum metrics_method)i;
	}
	return METRICS_METHOD_OTHER;
}

const char *metrics_lookup_error_name(enum metrics_lookup_error kind)
{
	return kind < METRICS_LOOKUP_ERROR_COUNT ? lookup_error_names[kind] : "error";
}

const char *metrics_url_refusal_name(enum metrics_url_refusal reason)
{
	return reason < METRICS_URL_REFUSAL_COUNT ? url_refusal_names[reason] : "malformed";
}

unsigned metrics_bucket_of(double seconds)
{
	unsigned i = 0;
	while (i < METRICS_BUCKETS && seconds > metrics_bucket_bounds[i])
		i++;
	return i;
}

/* Text appended to a caller's buffer; length counts on past its end, as snprintf does. */
struct text {
	char *out;
	size_t size;
	size_t length;
};

static void put(struct text *text, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *text, const char *format, ...)
{
	va_list args;
	va_start(args, format);
	size_t room = text->length < text->size ? text->size - text->length : 0;
	int written = vsnprintf(room ? text->out + text->length : NULL, room, format, args);
	va_end(args);
	if (written > 0)
		text->length += (size_t)written;
}

static void family(struct text *text, const char *name, const char *type, const char *help)
{
	put(text, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(struct text *text, const char *name, const char *help, uint64_t value)
{
	family(text, name, "counter", help);
	put(text, "%s %llu\n", name, (unsigned long long)value);
}

static void gauge(struct text *text, const char *name, const char *help, uint64_t value)
{
	family(text, name, "gauge", help);
	put(text, "%s %llu\n", name, (unsigned long long)value);
}

static void histogram(struct text *text, const char *name, const char *help,
		      const struct metrics_histogram_snapshot *histogram)
{
	uint64_t cumulative = 0;
	family(text, name, "histogram", help);
	for (unsigned i = 0; i < METRICS_BUCKETS; i++) {
		cumulative += histogram->buckets[i];
		put(text, "%s_bucket{le=\"%g\"} %llu\n", name, metrics_bucket_bounds[i],
		    (unsigned long long)cumulative);
	}
	cumulative += histogram->buckets[METRICS_BUCKETS];
	put(text, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cumulative);
	put(text, "%s_sum %.9g\n", name, histogram->sum_seconds);
	put(text, "%s_count %llu\n", name, (unsigned long long)cumulative);
}

static void requests(struct text *text, const struct metrics_snapshot *snapshot)
{
	family(text, "musicd_http_requests_total", "counter",
	       "Requests answered on the main listener (499: the client left first), by status "
	       "code and method.");
	for (unsigned status = 0; status < METRICS_STATUS_SLOTS; status++) {
		for (unsigned method = 0; method < METRICS_METHOD_COUNT; method++) {
			uint64_t count = snapshot->requests[status][method];
			if (count != 0)
				put(text, "musicd_http_requests_total{code=\"%u\",method=\"%s\"} %llu\n",
				    status + METRICS_STATUS_MIN,
				    metrics_method_name((enum metrics_method)method),
				    (unsigned long long)count);
		}
	}
}

/* A counter family with one sample per value of its one label, each written (0 included). */
static void labelled_counter(struct text *text, const char *name, const char *help,
			     const char *label, const char *const *label_values,
			     const uint64_t *counts, unsigned count)
{
	family(text, name, "counter", help);
	for (unsigned i = 0; i < count; i++)
		put(text, "%s{%s=\"%s\"} %llu\n", name, label, label_values[i],
		    (unsigned long long)counts[i]);
}

static void lookup_errors(struct text *text, const struct metrics_snapshot *snapshot)
{
	labelled_counter(text, "musicd_lookup_errors_total",
			 "Lookups that gave no answer: unavailable (database unreachable), timeout "
			 "(past --lookup-timeout), error (any other database error), rejected (queue "
			 "full).",
			 "kind", lookup_error_names, snapshot->lookup_errors,
			 METRICS_LOOKUP_ERROR_COUNT);
}

static void url_refusals(struct text *text, const struct metrics_snapshot *snapshot)
{
	labelled_counter(text, "musicd_url_signing_refusals_total",
			 "Track requests answered 403 for their signed-URL token "
			 "(--url-signing-key-file), by reason.",
			 "reason", url_refusal_names, snapshot->url_refusals,
			 METRICS_URL_REFUSAL_COUNT);
}

static void cache(struct text *text, const char *prefix, const char *what,
		  const struct metrics_cache_snapshot *cache)
{
	char name[64], help[160];
	snprintf(name, sizeof(name), "%s_hits_total", prefix);
	snprintf(help, sizeof(help), "%s found in the cache.", what);
	counter(text, name, help, cache->hits);
	snprintf(name, sizeof(name), "%s_misses_total", prefix);
	snprintf(help, sizeof(help), "%s not found in the cache.", what);
	counter(text, name, help, cache->misses);
	snprintf(name, sizeof(name), "%s_evictions_total", prefix);
	snprintf(help, sizeof(help), "Entries dropped from the cache to make room.");
	counter(text, name, help, cache->evictions);
	snprintf(name, sizeof(name), "%s_entries", prefix);
	snprintf(help, sizeof(help), "Entries in the cache.");
	gauge(text, name, help, cache->entries);
}

/* Each limit beside the gauge it bounds in its name: musicd_connections_open, _limit. */
static void limits(struct text *text, const struct metrics_limits *limits)
{
	gauge(text, "musicd_connections_limit",
	      "Connections open at once on the main listener before new ones are closed at once "
	      "(--max-connections).",
	      limits->connections);
	gauge(text, "musicd_lookup_threads", "Threads running database lookups (--lookup-threads).",
	      limits->lookup_threads);
	gauge(text, "musicd_lookups_in_flight_limit",
	      "Lookups queued or running before new ones get 503 at once (--max-pending-lookups).",
	      limits->lookups_in_flight);
	gauge(text, "musicd_lookup_cache_entries_limit",
	      "Entries the lookup cache may hold (--lookup-cache-entries; 0: off).",
	      limits->lookup_cache_entries);
	gauge(text, "musicd_file_cache_entries_limit",
	      "Files the open-file cache may keep open (--open-file-cache-entries; 0: off).",
	      limits->file_cache_entries);
	gauge(text, "musicd_streams_per_client_limit",
	      "Answers with a body in flight one client may have before 429 "
	      "(--max-streams-per-client; 0: no cap).",
	      limits->streams_per_client);
	gauge(text, "musicd_limit_rate_bytes_per_second",
	      "Bytes per second each track's body is sent at once --limit-rate-after bytes went "
	      "out (--limit-rate; 0: off).",
	      limits->limit_rate);
	gauge(text, "musicd_disk_window_bytes",
	      "Bytes of a track read ahead per stream, and sent from the page cache at once "
	      "(--disk-window).",
	      limits->disk_window);
}

/* A label value as the text format writes it: backslash, double quote and newline escaped. */
static void label_value(struct text *text, const char *value)
{
	for (const char *c = value; *c != '\0'; c++) {
		if (*c == '\\' || *c == '"')
			put(text, "\\%c", *c);
		else if (*c == '\n')
			put(text, "\\n");
		else
			put(text, "%c", *c);
	}
}

/* The label value of disk lane index of lanes: root0 ... for the media roots, then spool, other. */
static void lane_sample(struct text *text, const char *name, unsigned index, unsigned lanes,
			uint64_t value)
{
	if (index + 2 == lanes)
		put(text, "%s{lane=\"spool\"} %llu\n", name, (unsigned long long)value);
	else if (index + 1 == lanes)
		put(text, "%s{lane=\"other\"} %llu\n", name, (unsigned long long)value);
	else
		put(text, "%s{lane=\"root%u\"} %llu\n", name, index, (unsigned long long)value);
}

static void disk(struct text *text, const struct metrics_disk_snapshot *disk)
{
	gauge(text, "musicd_disk_threads", "Threads of the disk pool (--disk-threads).",
	      disk->threads);
	gauge(text, "musicd_disk_threads_per_root",
	      "The most disk threads one lane may occupy at once (--disk-threads-per-root).",
	      disk->threads_per_root);
	gauge(text, "musicd_disk_queue_limit",
	      "Track starts one lane queues for a disk thread before they wait for room "
	      "(--disk-queue).",
	      disk->queue_limit);
	static const char *const names[] = {"musicd_disk_queued", "musicd_disk_waiting",
					    "musicd_disk_in_flight", "musicd_disk_tasks_total"};
	static const char *const types[] = {"gauge", "gauge", "gauge", "counter"};
	static const char *const helps[] = {
		"Disk work waiting for a thread, by lane (rootN: the Nth --media-root; spool: the "
		"GridFS copies; other: paths under no root as written).",
		"Track starts waiting for room in their lane's full queue, by lane.",
		"Disk work a thread is doing (reads, opens, stats, closes), by lane.",
		"Disk work done (opens, stats, reads, closes), by lane: a lane with work in flight "
		"and none done is waiting on its storage.",
	};
	for (unsigned figure = 0; figure < 4; figure++) {
		family(text, names[figure], types[figure], helps[figure]);
		for (unsigned i = 0; i < disk->lanes && i < METRICS_DISK_LANES_MAX; i++) {
			const struct metrics_disk_lane *lane = &disk->lane[i];
			uint64_t value = figure == 0   ? lane->queued
					 : figure == 1 ? lane->waiting
					 : figure == 2 ? lane->running
						       : lane->finished;
			lane_sample(text, names[figure], i, disk->lanes, value);
		}
	}
	histogram(text, "musicd_disk_wait_seconds",
		  "Time disk work waited for a thread (from its submit to a thread taking it).",
		  &disk->wait);
	counter(text, "musicd_disk_read_ahead_bytes_total",
		"Track bytes the disk pool brought into the page cache ahead of their send.",
		disk->read_ahead_bytes);
	counter(text, "musicd_disk_evicted_sends_total",
		"Windows read ahead, then found evicted from the page cache when their turn to be "
		"sent came (read again).",
		disk->evicted_sends);
	counter(text, "musicd_disk_copied_sends_total",
		"Windows evicted again and again before their send, then read into memory and sent "
		"from there (the loops never read a track's storage).",
		disk->copied_sends);
	counter(text, "musicd_disk_refused_total",
		"Track starts answered 503: no room in their lane's disk queue within "
		"--disk-queue-timeout.",
		disk->refused);
	counter(text, "musicd_disk_read_errors_total",
		"Read-aheads that failed (an I/O error): the answer was 500, or its connection cut.",
		disk->read_errors);
}

static void process(struct text *text, const struct metrics_process *process)
{
	family(text, "process_cpu_seconds_total", "counter",
	       "Total user and system CPU time spent in seconds.");
	put(text, "process_cpu_seconds_total %.6f\n", process->cpu_seconds);
	gauge(text, "process_resident_memory_bytes", "Resident memory size in bytes.",
	      process->resident_bytes);
	gauge(text, "process_open_fds", "Number of open file descriptors.", process->open_fds);
	gauge(text, "process_max_fds", "Maximum number of open file descriptors.",
	      process->max_fds);
	family(text, "process_start_time_seconds", "gauge",
	       "Start time of the process since unix epoch in seconds.");
	put(text, "process_start_time_seconds %.2f\n", process->start_time_seconds);
}

size_t metrics_text_format(const struct metrics_snapshot *snapshot, char *out, size_t size)
{
	struct text text = {.out = out, .size = size, .length = 0};
	if (size > 0)
		out[0] = '\0';

	requests(&text, snapshot);
	counter(&text, "musicd_http_response_bytes_total",
		"Response body bytes sent on the main listener (as the access log's size field).",
		snapshot->response_bytes);
	histogram(&text, "musicd_http_first_byte_seconds",
		  "Time from a request head read to its response head written.",
		  &snapshot->first_byte);
	histogram(&text, "musicd_lookup_duration_seconds",
		  "Database round trips, one per find command.", &snapshot->lookup_duration);
	gauge(&text, "musicd_lookups_in_flight", "Lookups queued or running.",
	      snapshot->lookups_in_flight);
	lookup_errors(&text, snapshot);
	cache(&text, "musicd_lookup_cache", "Ids", &snapshot->lookup_cache);
	cache(&text, "musicd_file_cache", "Files", &snapshot->file_cache);
	gauge(&text, "musicd_connections_open", "Connections open on the main listener.",
	      snapshot->connections_open);
	counter(&text, "musicd_connections_accepted_total",
		"Connections accepted on the main listener (the refused ones included).",
		snapshot->connections_accepted);
	counter(&text, "musicd_connections_refused_total",
		"Connections closed at once because --max-connections were open.",
		snapshot->connections_refused);
	/* Per-client limits. */
	gauge(&text, "musicd_client_streams",
	      "Answers with a body in flight that hold a place under --max-streams-per-client.",
	      snapshot->client_streams);
	counter(&text, "musicd_client_streams_refused_total",
		"Answers refused with 429 because their client had --max-streams-per-client in "
		"flight.",
		snapshot->streams_refused);
	counter(&text, "musicd_paced_responses_total",
		"Response bodies musicd sent at --limit-rate itself (not those handed to a proxy).",
		snapshot->paced);
	gauge(&text, "musicd_database_up",
	      "1 after a successful database round trip, 0 after an unavailable one.",
	      snapshot->database_up ? 1 : 0);
	url_refusals(&text, snapshot);
	static const char *const log_names[METRICS_LOG_COUNT] = {"access", "error"};
	labelled_counter(&text, "musicd_log_lines_dropped_total",
			 "Log lines dropped because the log's writer thread had not written the "
			 "earlier ones yet (a slow or hung disk under the log, or a pipe not read), "
			 "by log.",
			 "log", log_names, snapshot->log_lines_dropped, METRICS_LOG_COUNT);
	if (snapshot->disk.have)
		disk(&text, &snapshot->disk);
	limits(&text, &snapshot->limits);
	family(&text, "musicd_build_info", "gauge", "musicd's version; the value is always 1.");
	put(&text, "musicd_build_info{version=\"");
	label_value(&text, snapshot->version != NULL ? snapshot->version : "");
	put(&text, "\"} 1\n");
	if (snapshot->have_process)
		process(&text, &snapshot->process);
	return text.length;
}
