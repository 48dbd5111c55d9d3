/*
 * Unit tests for server/wire/pacing.h's pure part, as a specification of the
 * slice a paced body is fed by (a tenth of a second of the rate, and never
 * less than 16 KiB, so that a slow rate still wakes its response about once
 * a second rather than many times) and of nginx's allowance: the
 * --limit-rate-after bytes and a slice at once, then the rate since the
 * body began, whatever happened meanwhile.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "wire/pacing.h"

static void test_a_slice_is_a_tenth_of_a_second_of_the_rate(void **state)
{
	(void)state;
	assert_int_equal(pacing_slice(1024 * 1024), 1024 * 1024 / 10);
	assert_int_equal(pacing_slice((uint64_t)1 << 40), ((uint64_t)1 << 40) / 10);
}

static void test_a_slow_rate_still_gets_16_kib_slices(void **state)
{
	(void)state;
	assert_int_equal(pacing_slice(16000), PACING_SLICE_MIN);
	assert_int_equal(pacing_slice(128 * 1024), PACING_SLICE_MIN);
	assert_int_equal(pacing_slice(1), PACING_SLICE_MIN);
	assert_int_equal(PACING_SLICE_MIN, 16 * 1024);
}

static void test_at_the_start_the_free_bytes_and_a_slice_are_allowed(void **state)
{
	(void)state;
	assert_true(pacing_allowed(16000, 512 * 1024, 0) == 512 * 1024 + PACING_SLICE_MIN);
	assert_true(pacing_allowed(16000, 0, 0) == PACING_SLICE_MIN);
	assert_true(pacing_allowed(16000, 0, -1.0) == PACING_SLICE_MIN); /* a clock step back */
}

static void test_then_the_rate_since_the_start_is_added(void **state)
{
	(void)state;
	const uint64_t rate = 128 * 1024, after = 512 * 1024;
	const double start = pacing_allowed(rate, after, 0);
	assert_true(pacing_allowed(rate, after, 1.0) == start + rate);
	assert_true(pacing_allowed(rate, after, 26.0) == start + 26.0 * rate);
	/* A 4 MB body at 128 KiB/s after 512 KiB is allowed whole after (4 MB - 528 KiB) / rate. */
	const double whole = 4001400;
	double seconds = (whole - start) / (double)rate;
	assert_true(pacing_allowed(rate, after, seconds) >= whole - 1);
	assert_true(pacing_allowed(rate, after, seconds - 0.01) < whole);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_slice_is_a_tenth_of_a_second_of_the_rate),
		cmocka_unit_test(test_a_slow_rate_still_gets_16_kib_slices),
		cmocka_unit_test(test_at_the_start_the_free_bytes_and_a_slice_are_allowed),
		cmocka_unit_test(test_then_the_rate_since_the_start_is_added),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
