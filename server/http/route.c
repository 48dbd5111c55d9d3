/*
 * route: reads request targets. Only the target's path and query are looked
 * at; the path is never turned into a file name, so it needs no decoding.
 */
#include "http/route.h"

#include "http/chars.h"

#include <ctype.h>
#include <string.h>

#define HEALTHZ_PATH "/healthz"
#define METRICS_PATH "/metrics"
#define DOWNLOAD_PARAMETER "download"

static bool path_is(const char *target, size_t length, const char *path)
{
	return length == strlen(path) && memcmp(target, path, length) == 0;
}

/* The track route's :mid and :param, when the path is /musicdb/:mid/:param. */
static void read_track(const char *target, struct route *route)
{
	size_t prefix_length = strlen(ROUTE_TRACK_PREFIX);
	if (route->path_length <= prefix_length ||
	    memcmp(target, ROUTE_TRACK_PREFIX, prefix_length) != 0)
		return;

	/* Exactly two segments after the prefix, both non-empty. */
	const char *mid = target + prefix_length;
	const char *end = target + route->path_length;
	const char *slash = memchr(mid, '/', (size_t)(end - mid));
	if (slash == NULL || slash == mid)
		return;
	const char *param = slash + 1;
	if (param == end || memchr(param, '/', (size_t)(end - param)) != NULL)
		return;

	route->param = param;
	route->param_length = (size_t)(end - param);
	size_t mid_length = (size_t)(slash - mid);
	if (!objectid_is_valid(mid, mid_length)) {
		route->kind = ROUTE_BAD_ID;
		return;
	}
	for (size_t i = 0; i < mid_length; i++)
		route->mid[i] = (char)tolower((unsigned char)mid[i]);
	route->mid[mid_length] = '\0';
	route->kind = ROUTE_TRACK;
}

struct route route_parse(const char *target)
{
	struct route route = {.kind = ROUTE_NOT_FOUND};
	if (target == NULL)
		return route;

	route.path_length = strcspn(target, "?#");
	if (target[route.path_length] == '?') {
		route.query = target + route.path_length + 1;
		route.query_length = strcspn(route.query, "#");
		route.download = route_query_find(&route, DOWNLOAD_PARAMETER).presence != QUERY_ABSENT;
	}
	if (path_is(target, route.path_length, HEALTHZ_PATH))
		route.kind = ROUTE_HEALTHZ;
	else if (path_is(target, route.path_length, METRICS_PATH))
		route.kind = ROUTE_METRICS;
	else
		read_track(target, &route);
	return route;
}

struct query_parameter route_query_find(const struct route *route, const char *name)
{
	struct query_parameter found = {.presence = QUERY_ABSENT};
	if (route->query == NULL)
		return found;
	const char *query = route->query;
	size_t name_length = strlen(name);
	for (size_t at = 0; at <= route->query_length;) {
		const char *parameter = query + at;
		const char *end = memchr(parameter, '&', route->query_length - at);
		size_t length = end != NULL ? (size_t)(end - parameter) : route->query_length - at;
		const char *equals = memchr(parameter, '=', length);
		size_t key_length = equals != NULL ? (size_t)(equals - parameter) : length;
		if (key_length == name_length && memcmp(parameter, name, name_length) == 0) {
			if (found.presence == QUERY_ONCE)
				return (struct query_parameter){.presence = QUERY_TWICE};
			found.presence = QUERY_ONCE;
			found.value = equals != NULL ? equals + 1 : parameter + length;
			found.length = equals != NULL ? length - key_length - 1 : 0;
		}
		at += length + 1;
	}
	return found;
}

enum route_method_verdict route_check_method(const char *method)
{
	if (method != NULL && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0))
		return ROUTE_METHOD_OK;
	return ROUTE_METHOD_NOT_ALLOWED;
}

bool objectid_is_valid(const char *text, size_t length)
{
	if (text == NULL || length != OBJECTID_HEX_LENGTH)
		return false;
	for (size_t i = 0; i < length; i++) {
		if (chars_hex_value((unsigned char)text[i]) < 0)
			return false;
	}
	return true;
}
