/*
 * metrics_text: the Prometheus text exposition format (version 0.0.4) of one
 * snapshot of musicd's metrics. Pure: a snapshot in, text out; the counters
 * behind it live in metrics.c, the process figures come from
 * metrics_process.c, the limits from the settings, and metrics_page.c
 * serves the text.
 *
 * Names follow Prometheus' conventions: base units (seconds, bytes), _total
 * on counters, a HELP and a TYPE line for each family, and label values from
 * small fixed sets (status codes, METRICS_METHOD_* names, error kinds), never
 * an id or a path.
 */
#ifndef MUSICD_METRICS_TEXT_H
#define MUSICD_METRICS_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* The Content-Type of the text metrics_text_format writes. */
#define METRICS_TEXT_CONTENT_TYPE "text/plain; version=0.0.4"

/* Status codes counted one by one; anything outside is counted as METRICS_STATUS_MAX. */
#define METRICS_STATUS_MIN 100
#define METRICS_STATUS_MAX 599
#define METRICS_STATUS_SLOTS (METRICS_STATUS_MAX - METRICS_STATUS_MIN + 1)

/* Request methods as label values; anything else is "other", so the label stays bounded. */
enum metrics_method {
	METRICS_METHOD_GET,
	METRICS_METHOD_HEAD,
	METRICS_METHOD_POST,
	METRICS_METHOD_PUT,
	METRICS_METHOD_DELETE,
	METRICS_METHOD_OPTIONS,
	METRICS_METHOD_TRACE,
	METRICS_METHOD_CONNECT,
	METRICS_METHOD_PATCH,
	METRICS_METHOD_OTHER,
	METRICS_METHOD_COUNT
};

/* Why a lookup did not give an answer (musicd_lookup_errors_total{kind}). */
enum metrics_lookup_error {
	METRICS_LOOKUP_UNAVAILABLE, /* the database could not be reached: 503 */
	METRICS_LOOKUP_TIMEOUT,	    /* the lookup deadline passed first: 503 */
	METRICS_LOOKUP_ERROR,	    /* any other database error: 500 */
	METRICS_LOOKUP_REJECTED,    /* the lookup queue was full: 503 at once */
	METRICS_LOOKUP_ERROR_COUNT
};

/* Why a track request was refused 403 for its signed-URL token (musicd_url_signing_refusals_total{reason}). */
enum metrics_url_refusal {
	METRICS_URL_MISSING,
	METRICS_URL_MALFORMED,
	METRICS_URL_BAD_SIGNATURE,
	METRICS_URL_EXPIRED,
	METRICS_URL_NOT_YET_VALID,
	METRICS_URL_WRONG_TRACK,
	METRICS_URL_REFUSAL_COUNT
};

/* The histograms' upper bounds in seconds (the last bucket, +Inf, is implicit). */
#define METRICS_BUCKETS 14
extern const double metrics_bucket_bounds[METRICS_BUCKETS];

/* A histogram as counted: per bucket (not cumulative; [METRICS_BUCKETS] is beyond the last bound). */
struct metrics_histogram_snapshot {
	uint64_t buckets[METRICS_BUCKETS + 1];
	double sum_seconds;
};

struct metrics_cache_snapshot {
	uint64_t hits, misses, evictions, entries;
};

/*
 * The limits musicd's gauges run into, as the settings a scrape reads say
 * now (a reload changes the live ones), so that an alerting rule compares a
 * gauge with its limit instead of a number written into the rule. The
 * descriptor limit is process_max_fds.
 */
struct metrics_limits {
	uint64_t connections;		/* --max-connections, as settled at start */
	uint64_t lookup_threads;	/* --lookup-threads */
	uint64_t lookups_in_flight;	/* --max-pending-lookups */
	uint64_t lookup_cache_entries;	/* --lookup-cache-entries; 0: the cache is off */
	uint64_t file_cache_entries;	/* --open-file-cache-entries; 0: the cache is off */
	uint64_t streams_per_client;	/* --max-streams-per-client; 0: no cap */
	uint64_t limit_rate;		/* --limit-rate, bytes per second; 0: off */
	uint64_t disk_window;		/* --disk-window, bytes */
};

/* The process_* metrics; have_process in the snapshot says whether they were read. */
struct metrics_process {
	double cpu_seconds;
	uint64_t resident_bytes;
	uint64_t open_fds, max_fds;
	double start_time_seconds; /* since the Unix epoch */
};

/* The lanes of the disk pool a scrape shows at most (media roots, the spool's, the other). */
#define METRICS_DISK_LANES_MAX 40

/* A disk lane's figures at one moment. */
struct metrics_disk_lane {
	uint64_t queued;  /* starts and continuations waiting for a thread */
	uint64_t waiting; /* starts waiting for room in the queue */
	uint64_t running; /* work a thread is doing */
	uint64_t finished; /* work done (or skipped), all along */
};

/* The disk pool's figures (media/disk_io.h); have is 0 where there is none. */
struct metrics_disk_snapshot {
	int have;
	uint64_t threads, threads_per_root, queue_limit; /* the limits */
	unsigned lanes;					 /* media roots, then spool and other */
	struct metrics_disk_lane lane[METRICS_DISK_LANES_MAX];
	struct metrics_histogram_snapshot wait; /* from submit until a thread took it */
	uint64_t read_ahead_bytes, evicted_sends, copied_sends, refused, read_errors;
};

/* The logs whose dropped lines a scrape counts (base/log_writer.h). */
enum metrics_log { METRICS_LOG_ACCESS, METRICS_LOG_ERROR, METRICS_LOG_COUNT };

/* Everything one scrape shows. */
struct metrics_snapshot {
	const char *version;
	uint64_t requests[METRICS_STATUS_SLOTS][METRICS_METHOD_COUNT]; /* [status - MIN][method] */
	uint64_t response_bytes;
	struct metrics_histogram_snapshot first_byte;
	struct metrics_histogram_snapshot lookup_duration;
	uint64_t lookups_in_flight;
	uint64_t lookup_errors[METRICS_LOOKUP_ERROR_COUNT];
	struct metrics_cache_snapshot lookup_cache, file_cache;
	uint64_t connections_open, connections_accepted, connections_refused;
	uint64_t client_streams, streams_refused, paced; /* per-client limits */
	int database_up;
	uint64_t url_refusals[METRICS_URL_REFUSAL_COUNT];
	struct metrics_disk_snapshot disk;
	uint64_t log_lines_dropped[METRICS_LOG_COUNT]; /* by metrics_log_names */
	struct metrics_limits limits;
	int have_process;
	struct metrics_process process;
};

/* The label value of a method ("GET" ... "other"). */
const char *metrics_method_name(enum metrics_method method);

/* The method named as on the request line; METRICS_METHOD_OTHER for any other text. */
enum metrics_method metrics_method_of(const char *name);

/* The label value of an error kind ("unavailable", "timeout", "error", "rejected"). */
const char *metrics_lookup_error_name(enum metrics_lookup_error kind);

/* The label value of a refusal reason ("missing", "bad_signature" ...). */
const char *metrics_url_refusal_name(enum metrics_url_refusal reason);

/* The bucket index a duration falls in (METRICS_BUCKETS when beyond the last bound). */
unsigned metrics_bucket_of(double seconds);

/*
 * Writes the snapshot's text into out (size bytes, NUL-terminated) and
 * returns its length. As snprintf: a return value >= size means it did not
 * fit, nothing beyond size was written, and a buffer of return + 1 bytes will do.
 */
size_t metrics_text_format(const struct metrics_snapshot *snapshot, char *out, size_t size);

#endif
