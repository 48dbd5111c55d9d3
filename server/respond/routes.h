/*
 * routes: what each listener answers, as an exchange_request_cb for its
 * exchange server. The track listener (--listen): /musicdb/:mid/:param and
 * /healthz; the metrics listener (--metrics-listen): /metrics. Every other
 * path is 404. (A request the wire refused never gets here: it answers it.)
 */
#ifndef MUSICD_ROUTES_H
#define MUSICD_ROUTES_H

#include "wire/exchange.h"

/* The track listener's requests; arg is the workers' struct resources. */
void routes_track(struct exchange *exchange, void *arg);

/*
 * The metrics listener's requests; arg is its struct metrics_page. GET
 * /metrics, with any query (Prometheus may add one); another method on it is
 * 405 with "Allow: GET".
 */
void routes_metrics(struct exchange *exchange, void *arg);

#endif
