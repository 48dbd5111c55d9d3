/*
 * pacing: the slice and the allowance, pure (feed.c applies them).
 */
#include "wire/pacing.h"

uint64_t pacing_slice(uint64_t rate)
{
	uint64_t slice = rate / (1000 / PACING_INTERVAL_MS);
	return slice > PACING_SLICE_MIN ? slice : PACING_SLICE_MIN;
}

double pacing_allowed(uint64_t rate, uint64_t after, double seconds)
{
	return (double)after + (double)pacing_slice(rate) + (double)rate * (seconds > 0 ? seconds : 0);
}
