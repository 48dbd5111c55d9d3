/*
 * framing: whether a request's body framing is one musicd can answer safely
 * on a kept-alive connection. Pure.
 *
 * evhttp (libevent 2.1.12, evhttp_method_may_have_body) reads no body on HEAD
 * and TRACE: a body sent with one would stay in the connection's input and be
 * parsed as the next request, which through a keep-alive front server is
 * another client's (request smuggling). On the methods whose body it reads, it
 * frames by the first Content-Length line and honours Transfer-Encoding only
 * when it is exactly "chunked"; a front server may read the same bytes
 * differently. Every such ambiguity is refused: 400 and the connection closed
 * (RFC 9112 section 6.1, 6.3). Debian's build (2.1.12-stable-8+deb12u1, the
 * fix for CVE-2026-63382) already refuses both Content-Length and
 * Transfer-Encoding, and repeated Content-Length lines, before musicd sees the
 * request; these rules do not depend on that.
 */
#ifndef MUSICD_FRAMING_H
#define MUSICD_FRAMING_H

#include <stddef.h>

struct framing_request {
	int body_is_read;			/* the server reads a body for this method */
	const char *const *content_lengths;	/* every Content-Length line's value */
	size_t content_length_count;
	const char *const *transfer_encodings;	/* every Transfer-Encoding line's value */
	size_t transfer_encoding_count;
};

enum framing_verdict {
	FRAMING_OK,
	FRAMING_REFUSE, /* 400, then close the connection */
};

enum framing_verdict framing_check(const struct framing_request *request);

/*
 * Whether the Connection lines (values[0..count)) ask to close the connection
 * after this answer: they are one comma-separated list of options (RFC 9110
 * section 7.6.1, lines and elements alike), and any "close" among them, in
 * any case, closes it.
 */
int framing_closes(const char *const *values, size_t count);

#endif
