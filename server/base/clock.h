/*
 * clock: the one reader of monotonic time (CLOCK_MONOTONIC): deadlines for
 * lookups, elapsed seconds for the access log and the metrics, and the
 * coarse clock caches' expiry reads. Every other module asks here, so a
 * test (or a change of clock) has one place to look.
 */
#ifndef MUSICD_CLOCK_H
#define MUSICD_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* now + milliseconds, on CLOCK_MONOTONIC. */
struct timespec clock_deadline_after(unsigned milliseconds);

/* Milliseconds from now to deadline (negative once it passed). */
long clock_ms_until(const struct timespec *deadline);

/* CLOCK_MONOTONIC now. */
struct timespec clock_now(void);

/* Seconds from start (CLOCK_MONOTONIC) to now. */
double clock_seconds_since(const struct timespec *start);

/* Milliseconds since an arbitrary start (CLOCK_MONOTONIC): for ticks. */
unsigned long long clock_now_ms(void);

/* Microseconds since an arbitrary start (CLOCK_MONOTONIC), as systemd's MONOTONIC_USEC wants. */
unsigned long long clock_now_us(void);

/*
 * Whole seconds of CLOCK_MONOTONIC_COARSE (a clock tick old at most, read
 * without a system call): what the caches' expiry compares.
 */
int64_t clock_coarse_seconds(void);

/* Makes a condition's timed waits measure clock_deadline_after's deadlines (CLOCK_MONOTONIC). */
void clock_condattr_monotonic(pthread_condattr_t *attributes);

#endif
