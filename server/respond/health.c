/*
 * health: a probe is a real findById through the lookup pool (for an id no
 * document has), so it proves what a track request needs: the pool, the
 * connection, the collection and the deadline. It reads with the URI's read
 * preference, as lookups do (a secondary, with secondaryPreferred), and its
 * "no such document" is never asked of the primary again (lookup.c): the
 * probe answers for the members lookups read from.
 */
#include "respond/health.h"

#include "base/log.h"
#include "respond/response.h"

static void on_probe_result(struct exchange *exchange, void *arg)
{
	const struct lookup_job *job = exchange_job(exchange);
	(void)arg;
	if (!exchange_can_respond(exchange))
		return;
	if (job->status == LOOKUP_NOT_FOUND || job->status == LOOKUP_FOUND) {
		response_send_text(exchange, 200, "ok\n");
		return;
	}
	log_warn("healthz: %s: %s", lookup_status_describe(job->status), job->detail);
	response_send_error(exchange, 503);
}

static void on_probe_deadline(struct exchange *exchange, void *arg)
{
	(void)arg;
	log_warn("healthz: database did not answer in time");
	response_send_error(exchange, 503);
}

void health_handle(struct exchange *exchange)
{
	if (exchange_lookup(exchange, LOOKUP_PROBE, "", on_probe_result, on_probe_deadline, NULL) < 0)
		response_send_error(exchange, 503);
}
