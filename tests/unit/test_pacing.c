/*
 * Unit tests for server/wire/pacing.h's pure part, as a specification of the
 * slice a paced body is fed by: a tenth of a second of the rate, and never
 * less than 16 KiB, so that a slow rate still wakes its response about once
 * a second rather than many times.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_slice_is_a_tenth_of_a_second_of_the_rate),
		cmocka_unit_test(test_a_slow_rate_still_gets_16_kib_slices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
