/*
 * request: the exchange's getters, each called once, and the request fields
 * in one pass over the head (exchange_headers).
 */
#include "respond/request.h"

#include <string.h>

#include "http/cors.h"

void request_read(struct request *request, struct exchange *exchange)
{
	enum {
		IF_MATCH,
		IF_NONE_MATCH,
		IF_MODIFIED_SINCE,
		IF_UNMODIFIED_SINCE,
		RANGE,
		IF_RANGE,
		ORIGIN,
		REQUEST_METHOD,
		FIELDS
	};
	static const char *const names[FIELDS] = {
		[IF_MATCH] = "If-Match",
		[IF_NONE_MATCH] = "If-None-Match",
		[IF_MODIFIED_SINCE] = "If-Modified-Since",
		[IF_UNMODIFIED_SINCE] = "If-Unmodified-Since",
		[RANGE] = "Range",
		[IF_RANGE] = "If-Range",
		[ORIGIN] = "Origin",
		[REQUEST_METHOD] = "Access-Control-Request-Method",
	};
	const char *values[FIELDS];
	exchange_headers(exchange, names, values, FIELDS);
	const struct settings *settings = exchange_snapshot(exchange);
	const struct config *config = &settings->config;
	*request = (struct request){
		.method = exchange_method(exchange),
		.head = exchange_is_head(exchange),
		.route = route_parse(exchange_target(exchange)),
		.conditions = {
			.if_match = values[IF_MATCH],
			.if_none_match = values[IF_NONE_MATCH],
			.if_modified_since = values[IF_MODIFIED_SINCE],
			.if_unmodified_since = values[IF_UNMODIFIED_SINCE],
		},
		.range = values[RANGE],
		.if_range = values[IF_RANGE],
		.origin = values[ORIGIN],
		.access_control_request_method = values[REQUEST_METHOD],
		.settings = settings,
		.config = config,
		.metrics = exchange_metrics(exchange),
		.peer = exchange_peer(exchange),
		.client = exchange_client(exchange),
	};
	if (settings->url_keys.count > 0)
		request->token = route_query_find(&request->route, config->url_signing_parameter);
	enum route_kind kind = request->route.kind;
	request->cors = cors_mode(config->cors_origins, config->cors_origin_count) != CORS_OFF &&
			(kind == ROUTE_TRACK || kind == ROUTE_BAD_ID);
}

bool request_is_preflight(const struct request *request)
{
	return strcmp(request->method, "OPTIONS") == 0 && request->origin != NULL &&
	       request->access_control_request_method != NULL;
}
