/*
 * pacing: a response body sent at --limit-rate after its first
 * --limit-rate-after bytes (exchange_pace), as nginx's limit_rate does,
 * still by sendfile: the pure part, what may have gone out by a moment
 * (feed.h moves the body to the output by it).
 *
 * What may have gone out by a moment is nginx's limit_rate allowance: the
 * --limit-rate-after bytes and one slice at once (nginx sends a second's
 * worth), then the rate from the start of the body on (pacing_allowed). So
 * a late timer on a loaded loop, or a body source that stalled (a GridFS
 * read, a disk), is caught up with, and the body's average never exceeds the
 * rate; a client that stalled gets what it missed as one burst, as from
 * nginx. One timer per paced response, armed only while it waits.
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
