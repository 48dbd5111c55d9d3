/*
 * Unit tests for import/mp4.h's length facts: box headers, and mvhd's duration
 * in both versions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mp4.h"

static void test_mp4_box_headers(void **state)
{
	(void)state;
	struct mp4_box box;
	const unsigned char mdat[] = {0x00, 0x01, 0x00, 0x00, 'm', 'd', 'a', 't'};
	assert_true(mp4_box_header(mdat, sizeof(mdat), &box));
	assert_string_equal(box.type, "mdat");
	assert_int_equal(box.size, 65536);
	assert_int_equal(box.header, 8);
	const unsigned char wide[] = {0, 0, 0, 1, 'm', 'd', 'a', 't', 0, 0, 0, 1, 0, 0, 0, 0};
	assert_true(mp4_box_header(wide, sizeof(wide), &box));
	assert_int_equal(box.size, 1ULL << 32);
	assert_int_equal(box.header, 16);
	assert_false(mp4_box_header(wide, 8, &box)); /* its 64-bit size is missing */
	const unsigned char too_small[] = {0, 0, 0, 4, 'f', 'r', 'e', 'e'};
	assert_false(mp4_box_header(too_small, sizeof(too_small), &box));
	const unsigned char binary[] = {0, 0, 0, 8, 0, 1, 2, 3};
	assert_false(mp4_box_header(binary, sizeof(binary), &box));
}

static void test_mvhd_duration_in_both_versions(void **state)
{
	(void)state;
	uint64_t ms;
	/* version 0: times, timescale 44100, duration 115233 (2.613 s) */
	const unsigned char v0[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
				    0x00, 0x00, 0xac, 0x44, 0x00, 0x01, 0xc2, 0x21};
	assert_true(mp4_mvhd_duration(v0, sizeof(v0), &ms));
	assert_int_equal(ms, 2613);
	const unsigned char v1[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
				    0x00, 0x00, 0x03, 0xe8, 0, 0, 0, 0, 0, 0, 0x0a, 0x35};
	assert_true(mp4_mvhd_duration(v1, sizeof(v1), &ms));
	assert_int_equal(ms, 2613);
	assert_false(mp4_mvhd_duration(v0, 12, &ms));
	const unsigned char no_timescale[20] = {0};
	assert_false(mp4_mvhd_duration(no_timescale, sizeof(no_timescale), &ms));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mp4_box_headers),
		cmocka_unit_test(test_mvhd_duration_in_both_versions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
