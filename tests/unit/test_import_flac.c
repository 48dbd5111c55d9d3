/*
 * Unit tests for import/flac.h's length facts: STREAMINFO, and the last frame
 * whole or cut (the frame built with its CRCs as an encoder writes them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "flac.h"

/* A fixed-block FLAC frame, number 3, 256 samples, with its CRC-8 and CRC-16. */
static const unsigned char flac_frame[] = {
	0xff, 0xf8, 0x89, 0x08, 0x03, 0x1a, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
	0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
	0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26,
	0x27, 0xf4, 0x0b};

/* ffmpeg's STREAMINFO of 3 s at 44.1 kHz: blocks of 4608, 132300 samples. */
static const unsigned char streaminfo[FLAC_STREAMINFO_SIZE] = {
	0x12, 0x00, 0x12, 0x00, 0x00, 0x08, 0xbe, 0x00, 0x0c, 0x9b, 0x0a, 0xc4,
	0x42, 0xf0, 0x00, 0x02, 0x04, 0xcc, 0x0e, 0x50, 0xe9, 0x93, 0x54, 0x9d,
	0xe9, 0xce, 0x10, 0x02, 0x26, 0x0c, 0xaf, 0x10, 0xe7, 0xe3};

static void test_streaminfo_gives_block_sizes_rate_and_samples(void **state)
{
	(void)state;
	struct flac_streaminfo info;
	assert_true(flac_parse_streaminfo(streaminfo, &info));
	assert_int_equal(info.min_block, 4608);
	assert_int_equal(info.max_block, 4608);
	assert_int_equal(info.sample_rate, 44100);
	assert_int_equal(info.total_samples, 132300);
	unsigned char zeros[FLAC_STREAMINFO_SIZE] = {0};
	assert_false(flac_parse_streaminfo(zeros, &info));
}

static void test_a_whole_last_frame_gives_where_it_ends(void **state)
{
	(void)state;
	struct flac_streaminfo info = {.min_block = 256, .max_block = 256, .sample_rate = 44100};
	unsigned char tail[300];
	memset(tail, 0x55, sizeof(tail)); /* the end of the frame before */
	memcpy(tail + sizeof(tail) - sizeof(flac_frame), flac_frame, sizeof(flac_frame));
	uint64_t end = 0;
	assert_int_equal(flac_last_frame(tail, sizeof(tail), &info, &end), FLAC_LAST_FRAME_WHOLE);
	assert_int_equal(end, 4 * 256); /* frame 3 of 256 samples each */
}

static void test_a_last_frame_cut_short_is_cut(void **state)
{
	(void)state;
	struct flac_streaminfo info = {.min_block = 256, .max_block = 256, .sample_rate = 44100};
	uint64_t end = 0;
	assert_int_equal(flac_last_frame(flac_frame, sizeof(flac_frame) - 1, &info, &end),
			 FLAC_LAST_FRAME_CUT);
	unsigned char damaged[sizeof(flac_frame)];
	memcpy(damaged, flac_frame, sizeof(damaged));
	damaged[20] ^= 1;
	assert_int_equal(flac_last_frame(damaged, sizeof(damaged), &info, &end), FLAC_LAST_FRAME_CUT);
}

static void test_no_frame_header_at_all(void **state)
{
	(void)state;
	struct flac_streaminfo info = {.min_block = 256, .max_block = 256, .sample_rate = 44100};
	unsigned char tail[64];
	memset(tail, 0, sizeof(tail));
	uint64_t end;
	assert_int_equal(flac_last_frame(tail, sizeof(tail), &info, &end), FLAC_NO_FRAME);
	assert_int_equal(flac_last_frame(tail, 0, &info, &end), FLAC_NO_FRAME);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_streaminfo_gives_block_sizes_rate_and_samples),
		cmocka_unit_test(test_a_whole_last_frame_gives_where_it_ends),
		cmocka_unit_test(test_a_last_frame_cut_short_is_cut),
		cmocka_unit_test(test_no_frame_header_at_all),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
