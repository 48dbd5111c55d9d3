/*
 * routes: the route -> handler table of each listener.
 */
#include "respond/routes.h"

#include <string.h>

#include "http/route.h"
#include "respond/answer.h"
#include "respond/health.h"
#include "respond/metrics_page.h"
#include "respond/resources.h"
#include "respond/track.h"
#include "respond/url_signing.h"

/* A handler answers one route's GET or HEAD (now or later). */
typedef void (*route_handler)(struct exchange *exchange, const struct route *route,
			      const struct resources *resources);

static void handle_track(struct exchange *exchange, const struct route *route,
			 const struct resources *resources)
{
	/* The token before the lookup: a request it does not admit costs no database round trip. */
	if (url_signing_admits(exchange, route->mid))
		track_handle(exchange, route->mid, resources);
}

static void handle_healthz(struct exchange *exchange, const struct route *route,
			   const struct resources *resources)
{
	(void)route;
	health_handle(exchange, resources);
}

static void handle_bad_id(struct exchange *exchange, const struct route *route,
			  const struct resources *resources)
{
	(void)route;
	(void)resources;
	answer_bad_request(exchange, ROUTE_BAD_ID_WHY);
}

static const route_handler track_handlers[ROUTE_KINDS] = {
	[ROUTE_TRACK] = handle_track,
	[ROUTE_BAD_ID] = handle_bad_id,
	[ROUTE_HEALTHZ] = handle_healthz,
	[ROUTE_METRICS] = NULL,	  /* the metrics listener's */
	[ROUTE_NOT_FOUND] = NULL, /* 404 whatever the method */
};

/* A CORS preflight: an OPTIONS naming the page's origin and the method it means to use. */
static int is_preflight(const struct exchange *exchange)
{
	return exchange_header(exchange, "Origin") != NULL &&
	       exchange_header(exchange, "Access-Control-Request-Method") != NULL;
}

void routes_track(struct exchange *exchange, void *arg)
{
	const struct resources *resources = arg;
	struct route route = route_parse(exchange_target(exchange));
	route_handler handler = track_handlers[route.kind];
	if (handler == NULL)
		answer_error(exchange, 404);
	else if (strcmp(exchange_method(exchange), "OPTIONS") == 0 &&
		 answer_cors_applies(exchange))
		/* Answered from the route alone: a preflight costs no lookup. */
		answer_options(exchange, is_preflight(exchange));
	else if (route_check_method(exchange_method(exchange)) != ROUTE_METHOD_OK)
		answer_error(exchange, 405);
	else
		handler(exchange, &route, resources);
}

void routes_metrics(struct exchange *exchange, void *arg)
{
	struct metrics_page *page = arg;
	if (route_parse(exchange_target(exchange)).kind != ROUTE_METRICS)
		answer_error(exchange, 404);
	else if (strcmp(exchange_method(exchange), "GET") != 0)
		answer_error_with(exchange, 405, "Allow", "GET");
	else
		metrics_page_answer(exchange, page);
}
