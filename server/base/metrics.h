/*
 * metrics: the counters behind /metrics, counted without a lock. Each thread
 * that counts owns one shard and is its only writer: a worker its
 * metrics_worker, a lookup thread its metrics_lookup_thread. A count is a
 * relaxed atomic load and store of the thread's own cache line, no
 * read-modify-write and no shared line; a scrape (metrics_collect, on any
 * thread) sums the shards, so a total it reads may be a few events behind,
 * never torn. Every function taking a shard accepts NULL (nothing counted),
 * for callers built without metrics, such as unit tests.
 */
#ifndef MUSICD_METRICS_H
#define MUSICD_METRICS_H

#include <stdint.h>

#include "base/metrics_text.h"

struct metrics;
struct metrics_worker;
struct metrics_lookup_thread;

/* Shards for worker_count workers and lookup_thread_count lookup threads; NULL if out of memory. */
struct metrics *metrics_new(unsigned worker_count, unsigned lookup_thread_count);
void metrics_free(struct metrics *metrics);

/* Worker index's shard (NULL when metrics is NULL or index is out of range). */
struct metrics_worker *metrics_worker(struct metrics *metrics, unsigned index);

/* Lookup thread index's shard (NULL when metrics is NULL or index is out of range). */
struct metrics_lookup_thread *metrics_lookup_thread(struct metrics *metrics, unsigned index);

/* --- Counted by a worker, on its own thread --- */

/* One request ended: its status (499 when the client left first) and the body bytes sent. */
void metrics_count_request(struct metrics_worker *worker, enum metrics_method method, int status,
			   uint64_t body_bytes);

/* One response head written, seconds after its request head was read. */
void metrics_observe_first_byte(struct metrics_worker *worker, double seconds);

/* One connection accepted; refused when it was closed at once for --max-connections. */
void metrics_count_connection(struct metrics_worker *worker, int refused);

/* An answer refused (429) because its client had --max-streams-per-client bodies in flight. */
void metrics_count_stream_refused(struct metrics_worker *worker);

/* A body musicd paces itself (--limit-rate) began. */
void metrics_count_paced(struct metrics_worker *worker);

/* A lookup was queued; metrics_lookup_finished follows once it is handed back. */
void metrics_lookup_started(struct metrics_worker *worker);

/* A queued lookup was handed back, with no error (-1) or an error kind. */
void metrics_lookup_finished(struct metrics_worker *worker, int error_kind);

/* A lookup that could not be queued (METRICS_LOOKUP_REJECTED) or another error outside the pool. */
void metrics_count_lookup_error(struct metrics_worker *worker, enum metrics_lookup_error kind);

/* A track request refused 403 for its signed-URL token, for this reason. */
void metrics_count_url_refusal(struct metrics_worker *worker, enum metrics_url_refusal reason);

/* --- Counted by a lookup thread --- */

/* One database round trip (a find command) took seconds. */
void metrics_observe_lookup(struct metrics_lookup_thread *thread, double seconds);

/* The database answered (up) or could not be reached (!up). From any thread. */
void metrics_set_database_up(struct metrics *metrics, int up);

/* --- Read by a scrape --- */

/*
 * Fills the snapshot's counted parts (requests, bytes, histograms, lookups,
 * connections accepted and refused, database_up, URL-signing refusals), summed over every shard;
 * the rest (caches, open connections, process, version) is left as it was.
 */
void metrics_collect(struct metrics *metrics, struct metrics_snapshot *snapshot);

#endif
