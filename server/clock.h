/*
 * clock: the times the request path reads. The Date header value, formatted
 * once a second per owner (each worker keeps its own, so no lock); monotonic
 * deadlines for lookups; elapsed seconds for the access log.
 */
#ifndef MUSICD_CLOCK_H
#define MUSICD_CLOCK_H

#include <time.h>

#include "validators.h"

/* The Date header as of the last call; one per thread that uses it. */
struct clock_date {
	time_t second; /* the second text shows */
	char text[HTTP_DATE_MAX];
};

/* The IMF-fixdate for now, formatted again only when the second changed. */
const char *clock_date(struct clock_date *date);

/* now + milliseconds, on CLOCK_MONOTONIC. */
struct timespec clock_deadline_after(unsigned milliseconds);

/* Milliseconds from now to deadline (negative once it passed). */
long clock_ms_until(const struct timespec *deadline);

/* CLOCK_MONOTONIC now. */
struct timespec clock_now(void);

/* Seconds from start (CLOCK_MONOTONIC) to now. */
double clock_seconds_since(const struct timespec *start);

#endif
