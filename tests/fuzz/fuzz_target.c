/*
 * Fuzzes what a request target and a stored path go through: route_parse
 * (its spans inside the target) and route_query_find, objectid_is_valid,
 * containment, content types (from a path, or a document's media type) and
 * the X-Accel-Redirect encoding (whose output must never hold a byte that
 * could split a header), the ?download Content-Disposition value from :param
 * and the --cors-origin grammar (the same promise: nothing that could split
 * a header).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "media/containment.h"
#include "http/content_type.h"
#include "http/cors.h"
#include "http/disposition.h"
#include "http/response_head.h"
#include "http/offload.h"
#include "http/route.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = strndup((const char *)data, size);
	struct route route = route_parse(text);
	if (route.kind == ROUTE_TRACK && !objectid_is_valid(route.mid, strlen(route.mid)))
		abort();

	const char *roots[] = {"/srv/music", "/"};
	int root = containment_find_root(roots, 2, text);
	if (root >= 0 && !containment_is_canonical(text))
		abort();
	content_type_for_path(text);
	/* A document's media type is taken whole or not at all, and never splits a header. */
	char type[CONTENT_TYPE_FIELD_MAX];
	if (content_type_from_field(type, (const char *)data, size) == 0 &&
	    (size > CONTENT_TYPE_FIELD_VALUE_MAX || memcmp(type, data, size) != 0 ||
	     strlen(type) != size || !response_value_is_safe(type) || strchr(type, '/') == NULL))
		abort();

	char uri[4096];
	size_t length = offload_accel_uri("/protected/", "/srv/music", text, uri, sizeof(uri));
	if (length > 0 && (!offload_header_safe(uri) || strchr(uri, '?') || strchr(uri, ' ')))
		abort();

	/* The route's spans lie inside the target, the query's parameters inside the query. */
	const char *end = text + strlen(text);
	if ((route.param != NULL && (route.param < text || route.param + route.param_length > end)) ||
	    route.path_length > strlen(text) ||
	    (route.query != NULL && (route.query < text || route.query + route.query_length > end)))
		abort();
	struct query_parameter download = route_query_find(&route, "download");
	if ((download.presence != QUERY_ABSENT) != route.download ||
	    (download.presence == QUERY_ONCE &&
	     (download.value < route.query ||
	      download.value + download.length > route.query + route.query_length)))
		abort();

	static const char attachment[] = "attachment; filename=\"";
	char disposition[DISPOSITION_VALUE_MAX];
	length = disposition_value(route.param, route.param_length, "0123456789abcdef01234567", text,
				   disposition, sizeof(disposition));
	if (length == 0 || !response_value_is_safe(disposition) ||
	    strncmp(disposition, attachment, strlen(attachment)) != 0)
		abort();
	if (cors_origin_is_valid(text) && (!response_value_is_safe(text) || strchr(text, '/') == NULL))
		abort();
	free(text);
	return 0;
}
