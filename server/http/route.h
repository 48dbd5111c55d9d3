/*
 * route: decides what a request target asks for, before any I/O. Pure.
 *
 *   /musicdb/:mid/:param   a track; :mid must be an ObjectId, :param is only
 *                          the name the player sees
 *   /healthz               the health probe
 *   anything else          not found
 *
 * An ObjectId's textual form (24 hexadecimal digits) is checked here, the only
 * gate between a URL and a database query.
 */
#ifndef MUSICD_ROUTE_H
#define MUSICD_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#define OBJECTID_HEX_LENGTH 24
/* What a 400 for ROUTE_BAD_ID says. */
#define ROUTE_BAD_ID_WHY "the track id must be 24 hexadecimal digits"

/* True when text[0..length) is exactly 24 hexadecimal digits (either case). */
bool objectid_is_valid(const char *text, size_t length);

enum route_kind {
	ROUTE_TRACK,	 /* mid holds the ObjectId, lower-cased */
	ROUTE_BAD_ID,	 /* the track route with a :mid that is not an ObjectId: 400 */
	ROUTE_HEALTHZ,
	ROUTE_NOT_FOUND, /* 404 */
};

struct route {
	enum route_kind kind;
	char mid[OBJECTID_HEX_LENGTH + 1];
};

/* Classifies an origin-form request target ("/path?query"); the query is ignored. */
struct route route_parse(const char *target);

/* What a method may do on a route. */
enum route_method_verdict {
	ROUTE_METHOD_OK,
	ROUTE_METHOD_NOT_ALLOWED, /* 405 with "Allow: GET, HEAD" */
};

/* GET and HEAD are the only methods any route answers. */
enum route_method_verdict route_check_method(const char *method);

#define ROUTE_ALLOWED_METHODS "GET, HEAD"

#endif
