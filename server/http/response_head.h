/*
 * response_head: the status line and header block of a response, formatted
 * in one pass into one buffer. Pure. It is the one formatter of every head
 * musicd sends: a head that does not fit, or a value holding CR, LF or
 * another control byte, is refused whole (0), never cut or split into extra
 * lines. musicd writes its response heads itself instead of through evhttp's
 * header list (two allocations and a printf per header, and a date formatted
 * per response): the per-file part is precomputed once per open file
 * (response_head_file_lines), the date once per second per worker.
 */
#ifndef MUSICD_RESPONSE_HEAD_H
#define MUSICD_RESPONSE_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "http/etag.h"
#include "http/http_date.h"

/* Room for any head musicd sends (an X-Accel-Redirect URI can take three bytes a path byte). */
#define RESPONSE_HEAD_MAX (16 * 1024)

enum response_connection {
	RESPONSE_CONNECTION_NONE,	    /* nothing to say: the protocol's default applies */
	RESPONSE_CONNECTION_CLOSE,	    /* "Connection: close" */
	RESPONSE_CONNECTION_KEEP_ALIVE, /* "Connection: keep-alive", for an HTTP/1.0 client that asked */
};

/*
 * Fields a head carries besides the ones it names (Allow, Retry-After, offload headers ...):
 * an offloaded answer's Cache-Control, X-Accel-Redirect, Content-Disposition, three CORS
 * fields and the two that hand a rate on, with room.
 */
#define RESPONSE_FIELDS_MAX 12

struct response_field {
	const char *name;  /* "Allow" */
	const char *value; /* "GET, HEAD" */
};

struct response_head {
	int http_minor;		   /* answer in the request's HTTP/1.x */
	int status;
	const char *reason;
	const char *date;	   /* an IMF-fixdate */
	const char *content_type;  /* NULL: none */
	int has_length;		   /* 304 has no Content-Length */
	uint64_t content_length;
	const char *content_range; /* the value; NULL: none */
	const char *file_lines;	   /* from response_head_file_lines; NULL: none */
	int accept_ranges;
	struct response_field fields[RESPONSE_FIELDS_MAX]; /* in order, after the named ones */
	size_t field_count;
	enum response_connection connection;
};

/* Appends a field (name and value must outlive the head); -1 when RESPONSE_FIELDS_MAX are taken. */
int response_head_add(struct response_head *head, const char *name, const char *value);

/*
 * The length of value's leading part that can stand in a header field (no
 * control byte but a tab, no DEL): the whole length when all of it can.
 */
size_t response_value_safe_length(const char *value);

/* True when all of value can stand in a header field. */
int response_value_is_safe(const char *value);

/* The reason phrase for a status ("Not Found"); "Unknown" for one musicd never sends. */
const char *response_reason(int status);

/* The room an error body takes (response_error_body), its NUL included. */
#define RESPONSE_ERROR_BODY_SIZE 160

/*
 * The one line of an error's text/plain body into out (RESPONSE_ERROR_BODY_SIZE
 * bytes): "404 Not Found\n", or, with why (NULL: none), "400 Bad Request: the
 * track id must be 24 hexadecimal digits\n". why is a fixed text, never bytes a
 * client sent, and has no control byte. Returns the length; a why that does
 * not fit, or holds a control byte, is left out rather than cut.
 */
size_t response_error_body(char *out, int status, const char *why);

/* Formats head into out; returns its length, or 0 if it does not fit or a value is unsafe. */
size_t response_head_format(char *out, size_t out_size, const struct response_head *head);

/*
 * The room response_head_file_lines needs, its NUL included, for any date,
 * any ETag and a Cache-Control value of cache_control_length bytes: the one
 * formula for every buffer those lines are made in.
 */
#define RESPONSE_FILE_LINES_SIZE(cache_control_length)                                             \
	(sizeof("Last-Modified: \r\nETag: \r\nCache-Control: \r\n") + HTTP_DATE_MAX + ETAG_MAX + \
	 (size_t)(cache_control_length))

/*
 * "bytes first-last/size" (a Content-Range value) into out, NUL-terminated;
 * its length, or 0 if out_size is too small.
 */
size_t response_content_range(char *out, size_t out_size, uint64_t first, uint64_t last,
			      uint64_t size);

/*
 * The lines every answer about one file repeats: Last-Modified, ETag and
 * Cache-Control (NULL: none). Returns the length, or 0 if it does not fit
 * or a value is unsafe.
 */
size_t response_head_file_lines(char *out, size_t out_size, const char *last_modified, const char *etag,
		       const char *cache_control);

#endif
