/*
 * route: classifies request targets. Only the target's path is looked at; it
 * is never turned into a file name, so it needs no decoding.
 */
#include "http/route.h"

#include "http/chars.h"

#include <ctype.h>
#include <string.h>

#define TRACK_PREFIX "/musicdb/"
#define HEALTHZ_PATH "/healthz"

/* Length of the path part of a target: up to '?' or '#'. */
static size_t path_length(const char *target)
{
	return strcspn(target, "?#");
}

struct route route_parse(const char *target)
{
	struct route route = {.kind = ROUTE_NOT_FOUND};
	if (target == NULL)
		return route;

	size_t length = path_length(target);
	size_t prefix_length = strlen(TRACK_PREFIX);

	if (length == strlen(HEALTHZ_PATH) && memcmp(target, HEALTHZ_PATH, length) == 0) {
		route.kind = ROUTE_HEALTHZ;
		return route;
	}
	if (length <= prefix_length || memcmp(target, TRACK_PREFIX, prefix_length) != 0)
		return route;

	/* Exactly two segments after the prefix, both non-empty: /musicdb/:mid/:param */
	const char *mid = target + prefix_length;
	const char *end = target + length;
	const char *slash = memchr(mid, '/', (size_t)(end - mid));
	if (slash == NULL || slash == mid)
		return route;
	const char *param = slash + 1;
	if (param == end || memchr(param, '/', (size_t)(end - param)) != NULL)
		return route;

	size_t mid_length = (size_t)(slash - mid);
	if (!objectid_is_valid(mid, mid_length)) {
		route.kind = ROUTE_BAD_ID;
		return route;
	}
	for (size_t i = 0; i < mid_length; i++)
		route.mid[i] = (char)tolower((unsigned char)mid[i]);
	route.mid[mid_length] = '\0';
	route.kind = ROUTE_TRACK;
	return route;
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
