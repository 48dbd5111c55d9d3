/*
 * health: a probe is a real findById through the database pool (for an id no
 * document has), so it proves what a track request needs: the pool, the
 * connection, the collection and the deadline. It reads with the URI's read
 * preference, as lookups do (a secondary, with secondaryPreferred), and its
 * "no such document" is never asked of the primary again (find_track.c): the
 * probe answers for the members lookups read from. Every failure is 503, the
 * answer a load balancer reads as "take me out".
 */
#include "respond/health.h"

#include <stdlib.h>

#include "base/log.h"
#include "respond/answer.h"
#include "respond/lookup_wait.h"

/* A probe and the request it answers. */
struct probe {
	struct lookup_wait wait; /* first: the pool hands back its job */
	struct request request;
};

/* A probe counts as a lookup (musicd_lookups_in_flight, musicd_lookup_errors_total). */
static void on_probe_result(struct exchange *exchange, void *arg)
{
	struct probe *probe = arg;
	enum lookup_status status = probe->wait.lookup.job.status;
	lookup_wait_delivered(&probe->wait);
	if (exchange_can_respond(exchange)) {
		if (status == LOOKUP_NOT_FOUND || status == LOOKUP_FOUND) {
			answer_text(exchange, &probe->request, 200, "ok\n");
		} else {
			log_warn("healthz: %s: %s", lookup_status_describe(status),
				 probe->wait.lookup.job.detail);
			answer_error(exchange, &probe->request, 503);
		}
	}
	free(probe);
}

static void on_probe_deadline(struct exchange *exchange, void *arg)
{
	struct probe *probe = arg;
	lookup_wait_timed_out(&probe->wait);
	log_warn("healthz: database did not answer in time");
	answer_error(exchange, &probe->request, 503);
}

void health_handle(struct exchange *exchange, const struct request *request,
		   const struct resources *resources)
{
	struct probe *probe = calloc(1, sizeof(*probe));
	if (probe != NULL)
		probe->request = *request;
	if (probe == NULL || lookup_wait_start(exchange, request, resources->db, &probe->wait,
					       FIND_PROBE, on_probe_result, on_probe_deadline,
					       probe) < 0) {
		free(probe);
		answer_error(exchange, request, 503);
	}
}
