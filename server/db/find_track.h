/*
 * find_track: the findById. A track_lookup is a db_pool job that finds the
 * document {_id: ObjectId(mid)}, projected to what a track's document is read
 * for (track_document.h), and says what it holds: a path to a file, a file
 * in GridFS (whose entry it reads too), or a data problem. A health probe is the same round trip for an id
 * no document has.
 *
 * Reads go where the URI's read preference sends them (readPreference,
 * maxStalenessSeconds, readPreferenceTags), with one exception: a track not
 * found (or whose GridFS entry is not found) on a member other than the
 * primary is looked for on the primary once more before it is believed, since
 * a track inserted a moment ago may not have reached the member read. Probes
 * are not asked again: /healthz answers for the members lookups read from.
 * A find that fails with a retryable error (read_retry.h) is tried once more
 * while half the deadline is left, probes too; if that fails as well the
 * lookup is LOOKUP_UNAVAILABLE (503), never LOOKUP_FAILED.
 *
 * The counters of lookups (musicd_lookups_in_flight, musicd_lookup_errors_total)
 * are kept here, on the worker that submits, by find_track_submit and
 * find_track_delivered.
 */
#ifndef MUSICD_FIND_TRACK_H
#define MUSICD_FIND_TRACK_H

#include "base/metrics.h"
#include "config/config.h"
#include "db/db_pool.h"
#include "db/track_document.h"
#include "http/route.h"

enum find_track_kind {
	FIND_TRACK, /* find {_id: ObjectId(mid)} */
	FIND_PROBE, /* the same round trip for an id that never exists: a health check */
};

/*
 * One lookup, owned by whoever submits it (a handler). Between
 * find_track_submit and the job's delivery only the pool touches it; the
 * document is valid once the delivery ran, when job.status is LOOKUP_FOUND
 * or LOOKUP_GRIDFS.
 */
struct track_lookup {
	struct db_job job; /* job.status: what was found */
	enum find_track_kind kind;
	char mid[OBJECTID_HEX_LENGTH + 1];
	const struct config *config; /* the fields to read; outlives the lookup */
	struct track_document document;
};

/*
 * Prepares lookup for mid (ignored for FIND_PROBE) with config's fields and a
 * deadline timeout_ms from now; job.delivery is the caller's to set.
 */
void find_track_prepare(struct track_lookup *lookup, enum find_track_kind kind, const char *mid,
			const struct config *config, unsigned timeout_ms);

/*
 * Queues the lookup, counted as in flight in metrics (the submitting
 * worker's shard; NULL: not counted). -1 when the pool refuses it (full or
 * stopping), counted as rejected: the caller answers 503 at once.
 */
int find_track_submit(struct db_pool *pool, struct track_lookup *lookup,
		      struct metrics_worker *metrics);

/* The deadline answered before the lookup ended: counted as a timeout now. */
void find_track_timed_out(struct metrics_worker *metrics);

/*
 * The lookup was handed back: no longer in flight, and its error (if any) is
 * counted, unless find_track_timed_out counted it already.
 */
void find_track_delivered(const struct track_lookup *lookup, struct metrics_worker *metrics,
			  int timed_out);

#endif
