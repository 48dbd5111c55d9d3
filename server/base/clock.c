/*
 * clock: thin wrappers over clock_gettime(CLOCK_MONOTONIC).
 */
#include "base/clock.h"

struct timespec clock_now(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now;
}

struct timespec clock_deadline_after(unsigned milliseconds)
{
	struct timespec t = clock_now();
	t.tv_sec += milliseconds / 1000;
	t.tv_nsec += (long)(milliseconds % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

long clock_ms_until(const struct timespec *deadline)
{
	struct timespec now = clock_now();
	return (long)(deadline->tv_sec - now.tv_sec) * 1000L +
	       (deadline->tv_nsec - now.tv_nsec) / 1000000L;
}

double clock_seconds_since(const struct timespec *start)
{
	struct timespec now = clock_now();
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

unsigned long long clock_now_ms(void)
{
	struct timespec now = clock_now();
	return (unsigned long long)now.tv_sec * 1000ULL + (unsigned long long)now.tv_nsec / 1000000ULL;
}

unsigned long long clock_now_us(void)
{
	struct timespec now = clock_now();
	return (unsigned long long)now.tv_sec * 1000000ULL + (unsigned long long)now.tv_nsec / 1000ULL;
}

int64_t clock_coarse_seconds(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	return (int64_t)now.tv_sec;
}

void clock_condattr_monotonic(pthread_condattr_t *attributes)
{
	pthread_condattr_setclock(attributes, CLOCK_MONOTONIC);
}
