/*
 * head: the status line and header block of a response, formatted in one
 * pass into one buffer. Pure. It is the one formatter of every head musicd
 * sends: a head that does not fit, or a value holding CR, LF or another
 * control byte, is refused whole (0), never cut or split into extra lines. musicd writes its response heads itself instead
 * of through evhttp's header list (two allocations and a printf per header,
 * and a date formatted per response): the per-file part is precomputed once
 * per open file (head_file_lines), the date once per second per worker.
 */
#ifndef MUSICD_HEAD_H
#define MUSICD_HEAD_H

#include <stddef.h>
#include <stdint.h>

/* Room for any head musicd sends (an X-Accel-Redirect URI can take three bytes a path byte). */
#define HEAD_MAX (16 * 1024)

enum head_connection {
	HEAD_CONNECTION_NONE,	    /* nothing to say: the protocol's default applies */
	HEAD_CONNECTION_CLOSE,	    /* "Connection: close" */
	HEAD_CONNECTION_KEEP_ALIVE, /* "Connection: keep-alive", for an HTTP/1.0 client that asked */
};

/* Fields a head carries besides the ones it names (Allow, Retry-After, offload headers ...). */
#define HEAD_FIELDS_MAX 8

struct head_field {
	const char *name;  /* "Allow" */
	const char *value; /* "GET, HEAD" */
};

struct head {
	int http_minor;		   /* answer in the request's HTTP/1.x */
	int status;
	const char *reason;
	const char *date;	   /* an IMF-fixdate */
	const char *content_type;  /* NULL: none */
	int has_length;		   /* 304 has no Content-Length */
	uint64_t content_length;
	const char *content_range; /* the value; NULL: none */
	const char *file_lines;	   /* from head_file_lines; NULL: none */
	int accept_ranges;
	struct head_field fields[HEAD_FIELDS_MAX]; /* in order, after the named ones */
	size_t field_count;
	enum head_connection connection;
};

/* Appends a field (name and value must outlive the head); -1 when HEAD_FIELDS_MAX are taken. */
int head_add_field(struct head *head, const char *name, const char *value);

/*
 * The length of value's leading part that can stand in a header field (no
 * control byte but a tab, no DEL): the whole length when all of it can.
 */
size_t head_value_safe_length(const char *value);

/* True when all of value can stand in a header field. */
int head_value_is_safe(const char *value);

/* Formats head into out; returns its length, or 0 if it does not fit or a value is unsafe. */
size_t head_format(char *out, size_t out_size, const struct head *head);

/*
 * The lines every answer about one file repeats: Last-Modified, ETag and
 * Cache-Control (NULL: none). Returns the length, or 0 if it does not fit
 * or a value is unsafe.
 */
size_t head_file_lines(char *out, size_t out_size, const char *last_modified, const char *etag,
		       const char *cache_control);

#endif
