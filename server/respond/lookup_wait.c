/*
 * lookup_wait: the wait made first, so the pool always has the event to
 * hand the job back by.
 */
#include "respond/lookup_wait.h"

int lookup_wait_start(struct exchange *exchange, const struct request *request,
		      struct db_pool *pool, struct lookup_wait *wait, enum find_track_kind kind,
		      exchange_wait_cb on_done, exchange_wait_cb on_deadline, void *arg)
{
	const struct config *config = request->config;
	struct track_lookup *lookup = &wait->lookup;
	wait->metrics = request->metrics;
	wait->timed_out = 0;
	find_track_prepare(lookup, kind, request->route.mid, config, config->lookup_timeout_ms);
	lookup->job.delivery =
		exchange_wait(exchange, config->lookup_timeout_ms, on_done, on_deadline, arg);
	if (lookup->job.delivery == NULL)
		return -1;
	if (find_track_submit(pool, lookup, wait->metrics) < 0) {
		exchange_wait_cancel(exchange);
		return -1;
	}
	return 0;
}

void lookup_wait_timed_out(struct lookup_wait *wait)
{
	wait->timed_out = 1;
	find_track_timed_out(wait->metrics);
}

void lookup_wait_delivered(struct lookup_wait *wait)
{
	find_track_delivered(&wait->lookup, wait->metrics, wait->timed_out);
}
