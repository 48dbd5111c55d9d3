/*
 * routes: the route -> handler table of each listener. The request is read
 * here, once (request.h), and handed to the handler with the exchange.
 */
#include "respond/routes.h"

#include <string.h>

#include "respond/answer.h"
#include "respond/health.h"
#include "respond/metrics_page.h"
#include "respond/request.h"
#include "respond/resources.h"
#include "respond/track.h"
#include "respond/url_signing.h"

/* A handler answers one route's GET or HEAD (now or later). */
typedef void (*route_handler)(struct exchange *exchange, const struct request *request,
			      const struct resources *resources);

static void handle_track(struct exchange *exchange, const struct request *request,
			 const struct resources *resources)
{
	/* The token before the lookup: a request it does not admit costs no database round trip. */
	if (url_signing_admits(exchange, request))
		track_handle(exchange, request, resources);
}

static void handle_healthz(struct exchange *exchange, const struct request *request,
			   const struct resources *resources)
{
	health_handle(exchange, request, resources);
}

static void handle_bad_id(struct exchange *exchange, const struct request *request,
			  const struct resources *resources)
{
	(void)resources;
	answer_bad_request(exchange, request, ROUTE_BAD_ID_WHY);
}

static const route_handler track_handlers[ROUTE_KINDS] = {
	[ROUTE_TRACK] = handle_track,
	[ROUTE_BAD_ID] = handle_bad_id,
	[ROUTE_HEALTHZ] = handle_healthz,
	[ROUTE_METRICS] = NULL,	  /* the metrics listener's */
	[ROUTE_NOT_FOUND] = NULL, /* 404 whatever the method */
};

void routes_track(struct exchange *exchange, void *arg)
{
	const struct resources *resources = arg;
	struct request request;
	request_read(&request, exchange);
	route_handler handler = track_handlers[request.route.kind];
	if (handler == NULL)
		answer_error(exchange, &request, 404);
	else if (strcmp(request.method, "OPTIONS") == 0 && request.cors)
		/* Answered from the route alone: a preflight costs no lookup. */
		answer_options(exchange, &request);
	else if (route_check_method(request.method) != ROUTE_METHOD_OK)
		answer_error(exchange, &request, 405);
	else
		handler(exchange, &request, resources);
}

void routes_metrics(struct exchange *exchange, void *arg)
{
	struct metrics_page *page = arg;
	struct request request;
	request_read(&request, exchange);
	if (request.route.kind != ROUTE_METRICS)
		answer_error(exchange, &request, 404);
	else if (strcmp(request.method, "GET") != 0)
		answer_error_with(exchange, &request, 405, "Allow", "GET");
	else
		metrics_page_answer(exchange, &request, page);
}
