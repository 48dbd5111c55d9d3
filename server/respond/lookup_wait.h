/*
 * lookup_wait: a findById asked by a handler. The lookup runs in the database
 * pool, the exchange waits for it (the client watched, the lookup deadline
 * kept), and its counters are kept on the way (find_track.h): the one way a
 * handler (track, health) looks a document up.
 */
#ifndef MUSICD_LOOKUP_WAIT_H
#define MUSICD_LOOKUP_WAIT_H

#include "db/db_pool.h"
#include "db/find_track.h"
#include "respond/request.h"
#include "wire/exchange.h"
#include "wire/wait.h"

/* A lookup and whether its deadline answered first. The handler's: it embeds one, first. */
struct lookup_wait {
	struct track_lookup lookup;	/* first: the pool hands back its job */
	struct metrics_worker *metrics; /* the submitting worker's */
	int timed_out;
};

/*
 * Starts looking request's track up (kind FIND_PROBE: no track) in pool with
 * the request's settings: on_done(exchange, arg) runs when it ends, always;
 * on_deadline when the deadline passes first (lookup_wait_timed_out must be
 * its first call). 0, or -1 when it cannot be queued: nothing runs, the
 * caller answers 503.
 */
int lookup_wait_start(struct exchange *exchange, const struct request *request,
		      struct db_pool *pool, struct lookup_wait *wait, enum find_track_kind kind,
		      exchange_wait_cb on_done, exchange_wait_cb on_deadline, void *arg);

/* From on_deadline: the deadline answered first (counted as a timeout). */
void lookup_wait_timed_out(struct lookup_wait *wait);

/* From on_done: counted as delivered. The result is the handler's to read, then to release. */
void lookup_wait_delivered(struct lookup_wait *wait);

#endif
