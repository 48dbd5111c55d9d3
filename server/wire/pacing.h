/*
 * pacing: a response body sent at --limit-rate after its first
 * --limit-rate-after bytes (exchange_pace), as nginx's limit_rate does,
 * still by sendfile. Inside wire/ only (exchange.h is the face).
 *
 * The body is not put on the connection's output at once: it is recorded
 * (texts copied, file segments as ranges with a reference each) and fed to
 * the output a slice at a time, when the client's credit allows and the
 * socket took the slice before. A file segment cannot be cut once it is on
 * an output: libevent 2.1.12's evbuffer_write_atmost ignores its limit for
 * a sendfile chain (evbuffer_write_sendfile sends the whole chain, as much
 * as the socket takes), and evbuffer_remove_buffer cannot split one. So
 * each slice is a segment of its own, and no write can send more than the
 * slice on the output. bufferevent_set_rate_limit is not used for the same
 * reason: its bucket only learns afterwards what sendfile wrote.
 *
 * What may have gone out by a moment is nginx's limit_rate allowance: the
 * --limit-rate-after bytes and one slice at once (nginx sends a second's
 * worth), then the rate from the start of the body on (pacing_allowed). So
 * a late timer on a loaded loop, or a body source that stalled (a GridFS
 * read), is caught up with, and the body's average never exceeds the rate;
 * a client that stalled gets what it missed as one burst, as from nginx.
 * One timer per paced response, armed only while it waits.
 *
 * Ownership: the pacing is its exchange's (exchange->pacing), freed when the
 * request side ends (the last byte written, or the client gone); it holds
 * a reference to each segment it still has to send. What the wire's other
 * files call is in wire_state.h; this header holds the pure part.
 */
#ifndef MUSICD_PACING_H
#define MUSICD_PACING_H

#include <stdint.h>

/*
 * What a feed waits for once the allowance is steady: PACING_INTERVAL_MS of
 * the rate, at least PACING_SLICE_MIN (a slow rate still wakes its response
 * about once a second, not ten times).
 */
#define PACING_SLICE_MIN (16 * 1024)
#define PACING_INTERVAL_MS 100

/* The slice for rate (bytes per second). Pure. */
uint64_t pacing_slice(uint64_t rate);

/*
 * The body bytes that may have gone out seconds after the body began, at
 * rate bytes a second after the first after bytes. Pure.
 */
double pacing_allowed(uint64_t rate, uint64_t after, double seconds);

#endif
