/*
 * route: what a request target asks for, read once, before any I/O. Pure.
 *
 *   /musicdb/:mid/:param   a track; :mid must be an ObjectId, :param is only
 *                          the name the player sees (and a download's name)
 *   /healthz               the health probe
 *   /metrics               the scrape (answered on the metrics listener only)
 *   anything else          not found
 *
 * The query is kept beside the route for what it may carry (?download, a
 * signed URL's token: route_query_find), the fragment is ignored. An
 * ObjectId's textual form (24 hexadecimal digits) is checked here, the only
 * gate between a URL and a database query. Every other module reads the
 * target through struct route, never the target's bytes.
 */
#ifndef MUSICD_ROUTE_H
#define MUSICD_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#define OBJECTID_HEX_LENGTH 24
/* What a 400 for ROUTE_BAD_ID says. */
#define ROUTE_BAD_ID_WHY "the track id must be 24 hexadecimal digits"
/* The path every track's target starts with: /musicdb/:mid/:param. */
#define ROUTE_TRACK_PREFIX "/musicdb/"

/* True when text[0..length) is exactly 24 hexadecimal digits (either case). */
bool objectid_is_valid(const char *text, size_t length);

enum route_kind {
	ROUTE_TRACK,	 /* mid holds the ObjectId, lower-cased; param is set */
	ROUTE_BAD_ID,	 /* the track route with a :mid that is not an ObjectId: 400 */
	ROUTE_HEALTHZ,
	ROUTE_METRICS,
	ROUTE_NOT_FOUND, /* 404 */
	ROUTE_KINDS
};

/* A target read; the pointers are into the target, valid as long as it is. */
struct route {
	enum route_kind kind;
	char mid[OBJECTID_HEX_LENGTH + 1];
	const char *param;  /* ROUTE_TRACK and ROUTE_BAD_ID: :param as sent (not decoded); else NULL */
	size_t param_length;
	size_t path_length; /* the target's path: its bytes before the query or fragment */
	const char *query;  /* after the path's '?', up to '#' or the end; NULL: no '?' */
	size_t query_length;
	bool download;	    /* the query names a "download" parameter, with any value or none */
};

/* Reads an origin-form request target ("/path?query#fragment"); NULL is not found. */
struct route route_parse(const char *target);

/* What the query says of one parameter, compared byte for byte (nothing is decoded). */
enum query_presence {
	QUERY_ABSENT,
	QUERY_ONCE,  /* value, length: its value as sent ("" for "name" and "name=") */
	QUERY_TWICE, /* given more than once */
};

struct query_parameter {
	enum query_presence presence;
	const char *value;
	size_t length;
};

/* Finds parameter name in route's query (parameters separated by '&', "name[=value]"). */
struct query_parameter route_query_find(const struct route *route, const char *name);

/* What a method may do on a route. */
enum route_method_verdict {
	ROUTE_METHOD_OK,
	ROUTE_METHOD_NOT_ALLOWED, /* 405 with "Allow: GET, HEAD" */
};

/* GET and HEAD are the only methods any route answers. */
enum route_method_verdict route_check_method(const char *method);

#define ROUTE_ALLOWED_METHODS "GET, HEAD"

#endif
