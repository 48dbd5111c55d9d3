/*
 * cors: which CORS headers an answer on the track route carries, for the
 * configured origins (--cors-origin) and the request's Origin. Pure: it
 * reads strings and returns header fields, so the decision is unit-tested
 * apart from the wire (tests/unit/test_cors.c).
 *
 *   no origin, or "off"   CORS is off: no header, OPTIONS stays 405
 *   "*"                   Access-Control-Allow-Origin: * on every answer
 *   a list of origins     the request's Origin echoed when it is exactly one of
 *                         them (the configured string is what is sent), and
 *                         Vary: Origin on every answer, matching or not, since
 *                         the answer depends on it
 *
 * Access-Control-Allow-Credentials is never sent: tracks are public and a
 * page gets no cookies or authentication through musicd.
 */
#ifndef MUSICD_CORS_H
#define MUSICD_CORS_H

#include <stddef.h>

#include "http/response_head.h"

/* What the track route answers with CORS on: OPTIONS is accepted (Allow and preflights). */
#define CORS_ALLOW_METHODS "GET, HEAD, OPTIONS"
/* The request headers a page may send: ranges and conditional requests. */
#define CORS_ALLOW_HEADERS                                                                        \
	"Range, If-Range, If-None-Match, If-Modified-Since, If-Match, If-Unmodified-Since"
/* The response headers a page may read besides the CORS-safelisted ones. */
#define CORS_EXPOSE_HEADERS                                                                       \
	"Content-Range, Accept-Ranges, Content-Length, ETag, Last-Modified, Content-Disposition"
/* Seconds a browser may reuse a preflight (Chromium caps it at 7200). */
#define CORS_MAX_AGE "7200"
/* The most fields cors_fields writes. */
#define CORS_FIELDS_MAX 5

enum cors_mode {
	CORS_OFF,
	CORS_ANY,  /* "*" */
	CORS_LIST, /* exact origins */
};

enum cors_answer {
	CORS_ACTUAL,	/* a GET, HEAD or plain OPTIONS answer, errors included */
	CORS_PREFLIGHT, /* OPTIONS with Origin and Access-Control-Request-Method */
};

/*
 * True when text is an origin as browsers send it: a lower-case scheme, "://",
 * a lower-case host name, IPv4 or [IPv6] address, and an optional :port
 * (1-65535, no leading zero); no path, no trailing slash, nothing else.
 */
int cors_origin_is_valid(const char *text);

/*
 * Checks the --cors-origin values: each an origin, or "*" or "off" given
 * alone. -1 with a message in error (naming the value) when not.
 */
int cors_check_origins(char *const *origins, size_t count, char *error, size_t error_size);

/* The mode a checked list of --cors-origin values sets. */
enum cors_mode cors_mode(char *const *origins, size_t count);

/*
 * Writes to out the CORS fields of an answer of this kind given the request's
 * Origin (NULL when it sent none); returns how many (0 when off). The values
 * point at constants or at the configured origins, never at the request.
 */
size_t cors_fields(char *const *origins, size_t count, const char *request_origin,
		   enum cors_answer kind, struct response_field out[CORS_FIELDS_MAX]);

#endif
