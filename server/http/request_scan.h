/*
 * request_scan: every byte a client sends, checked as it arrives and before
 * evhttp parses it (RFC 9112). Pure: it is fed bytes and reports what they
 * are; the wire (wire/exchange.c) decides what to do.
 *
 * evhttp parses leniently (libevent 2.1.12): it reads "HTTP/-1.1" as a
 * version, takes "Content-Length : 5" for an unknown field (so the body
 * becomes the next request), cuts a field value at a NUL, reads chunk sizes
 * with strtoll ("0x5", "+5"), accepts bare LF in chunk lines, and answers
 * what it cannot parse itself with HTML. The scan refuses all of that first,
 * with the status RFC 9112 and nginx give, so that evhttp only ever parses
 * messages the scan accepted, and a refused message is answered by musicd:
 *
 *   400  a request line, field line or chunk line that breaks the grammar;
 *        a field name that is not a token (whitespace before the colon, an
 *        empty name); NUL or a bare CR; obs-fold; an HTTP/1.1 request with no
 *        Host or two; a Host that is no authority; a body that could be read
 *        two ways (framing.c)
 *   413  a body longer than limits.max_body
 *   414  a request line longer than limits.max_head
 *   417  an Expect other than 100-continue, on a request with a body
 *   431  a head longer than limits.max_head
 *   501  a method evhttp does not know
 *   505  a version other than HTTP/1.x (HTTP/0.x is 400, as nginx answers it)
 *
 * Heads may end their lines with CRLF or a bare LF (RFC 9112 section 2.2,
 * as evhttp and nginx read them); chunk lines must end with CRLF. A chunk
 * extension ("5;a=b") is accepted and ignored: evhttp would refuse it, so
 * the scan's output drops it (request_scan_rewrites), leaving "5\r\n".
 *
 * One scan per connection, fed in arrival order; a refusal is final.
 * Between requests a connection need not keep one (request_scan_idle).
 */
#ifndef MUSICD_REQUEST_SCAN_H
#define MUSICD_REQUEST_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* The start of a method kept for a refused request's access-log line. */
#define SCAN_METHOD_MAX 16
/* The start of a target kept likewise, and to check an absolute-form authority. */
#define SCAN_TARGET_KEEP 128
/* Content-Length or Transfer-Encoding lines kept per message; another is refused. */
#define SCAN_FRAMING_LINES_MAX 2
/* Of each such line's value: longer ones cannot be valid and are kept as "?". */
#define SCAN_FRAMING_VALUE_MAX 24

struct request_scan_limits {
	size_t max_head;   /* request line and fields, line ends included */
	uint64_t max_body; /* Content-Length, or the chunks' data together */
};

enum scan_event {
	SCAN_NONE,	    /* everything given was scanned */
	SCAN_MESSAGE_BEGAN, /* its first byte was the next request's first */
	SCAN_HEAD_DONE,	    /* a request head is complete and valid */
	SCAN_REFUSED,	    /* the request is invalid: answer scan->refusal and close */
};

/* What a fed piece ended with. */
struct scan_step {
	size_t consumed;      /* input bytes scanned, up to and including the event's */
	size_t produced;      /* bytes written to out, when out was given */
	enum scan_event event;
};

/* One connection's scan. Zeroed by request_scan_init; its fields are read-only outside. */
struct request_scan {
	struct request_scan_limits limits;
	int state;
	unsigned messages; /* requests begun, this one included */

	/* The current message. */
	uint64_t head_bytes;
	char method[SCAN_METHOD_MAX + 1]; /* as much as fits */
	size_t method_length;
	char target[SCAN_TARGET_KEEP + 1]; /* as much as fits (an absolute-form authority must) */
	size_t target_length;
	int http_major, http_minor; /* -1 until read */
	int refusal;		    /* the status, once refused */
	const char *refusal_reason; /* a fixed line: the debug log's, and a 400's body's */

	/* The field line being read. */
	unsigned field;	    /* which kept field it is, or 0 */
	size_t name_length; /* of the field name read so far */
	char name[24];	    /* its first bytes, lower-cased, to tell the kept fields */
	size_t value_length;
	char value[SCAN_FRAMING_VALUE_MAX + 1]; /* also the version, while the request line ends */
	int value_seen_text; /* past the OWS before the value */
	size_t value_trailing_ows;

	/* What the head said. */
	unsigned host_lines;
	int host_valid;
	int expect_other; /* an Expect that is not 100-continue */
	size_t content_length_count, transfer_encoding_count;
	char content_lengths[SCAN_FRAMING_LINES_MAX][SCAN_FRAMING_VALUE_MAX + 1];
	char transfer_encodings[SCAN_FRAMING_LINES_MAX][SCAN_FRAMING_VALUE_MAX + 1];

	/* The body. */
	uint64_t body_left;  /* of a Content-Length body, or of the current chunk's data */
	uint64_t body_total; /* chunk data so far */
	unsigned chunk_digits;
	uint64_t chunk_size;
};

void request_scan_init(struct request_scan *scan, const struct request_scan_limits *limits);

/*
 * Scans in[0..length) until an event: the step says how many bytes were
 * consumed and which event ended it (SCAN_NONE: all of them, no event). With
 * out (room for length bytes), the bytes to hand on are written there: the
 * same bytes, except the chunk extensions dropped while
 * request_scan_rewrites. After SCAN_REFUSED, nothing more is consumed.
 */
struct scan_step request_scan_feed(struct request_scan *scan, const char *in, size_t length,
				   char *out);

/* True while the bytes fed may be rewritten (inside a chunked body): pass out then. */
int request_scan_rewrites(const struct request_scan *scan);

/* True between a message's first byte and the end of its head. */
int request_scan_in_head(const struct request_scan *scan);

/*
 * True between messages: the last one's head and body are all scanned and
 * nothing was refused. A scan then holds nothing but its limits and its
 * message count, so it may be let go and a fresh one (request_scan_init,
 * the same limits) reads on exactly as it would have, messages counting
 * from 0 again.
 */
int request_scan_idle(const struct request_scan *scan);

#endif
