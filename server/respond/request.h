/*
 * request: what a request asks, read from its exchange once, when routes.c
 * has its head, and handed down to the handlers and the answers, which never
 * ask the exchange for it again (as nginx's modules read r->headers_in, not
 * the bytes): the route (the target read by http/route.h: :mid, :param, the
 * query), the method, the request fields the answers weigh, the settings
 * snapshot the request runs with, its worker's counters and who the client
 * is. The exchange goes beside it only where something is sent or waited for.
 *
 * A plain value: a copy is as good as the original, so work that answers
 * later keeps one. Its texts (the method, the fields, the route's spans, the
 * addresses) are the exchange's, valid while the request side is there
 * (exchange_can_respond): read them only then. The snapshot stays valid while
 * the exchange does (work in flight holds it).
 */
#ifndef MUSICD_REQUEST_H
#define MUSICD_REQUEST_H

#include <stdbool.h>

#include "base/metrics.h"
#include "config/settings.h"
#include "http/cond.h"
#include "http/route.h"
#include "wire/exchange.h"

struct request {
	const char *method; /* as written ("GET", "HEAD" ...) */
	bool head;	    /* HEAD: its answer carries headers only */
	struct route route;
	struct query_parameter token; /* the signed-URL token's parameter, with signing on (url_signing.h) */

	/* The request fields the answers weigh; NULL when absent. */
	struct cond_request conditions;	   /* If-Match and its kin (cond.h) */
	const char *range, *if_range;
	const char *origin;		   /* CORS */
	const char *access_control_request_method;
	bool cors; /* its answers carry CORS fields: --cors-origin is on, and the route a track's */

	const struct settings *settings;  /* the snapshot the request runs with */
	const struct config *config;	  /* the snapshot's */
	struct metrics_worker *metrics;	  /* its worker's counters; NULL: none */
	const char *peer;		  /* the peer's address ("-" when not known) */
	const char *client;		  /* the client as the access log names it (proxy_trust.h) */
};

/* Reads what exchange's request asks into request: once, when its head is complete. */
void request_read(struct request *request, struct exchange *exchange);

/* A CORS preflight: an OPTIONS naming the page's origin and the method it means to use. */
bool request_is_preflight(const struct request *request);

#endif
