/*
 * health: GET /healthz, for load balancers and Varnish probes. 200 when a
 * lookup round trip to the database succeeds within the lookup deadline,
 * 503 otherwise.
 */
#ifndef MUSICD_HEALTH_H
#define MUSICD_HEALTH_H

#include "respond/request.h"
#include "respond/resources.h"
#include "wire/exchange.h"

void health_handle(struct exchange *exchange, const struct request *request,
		   const struct resources *resources);

#endif
