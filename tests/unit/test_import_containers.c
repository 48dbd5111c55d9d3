/*
 * Unit tests for the containers' length facts: import/flac.h (STREAMINFO,
 * the last frame whole or cut), import/ogg.h's last page (whole and
 * end-of-stream, whole without it, cut), import/mp4.h (box headers, mvhd's
 * duration). The frames and pages are built with their CRCs as an encoder
 * writes them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "flac.h"
#include "mp4.h"
#include "ogg.h"

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

/* An Ogg page flagged end-of-stream, granule position 115233, one 10-byte packet. */
static const unsigned char last_page[] = {
	0x4f, 0x67, 0x67, 0x53, 0x00, 0x04, 0x21, 0xc2, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x34, 0x12, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0xad, 0x73, 0xc8, 0x3b, 0x01, 0x0a,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09};

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

static void test_an_ogg_file_ending_with_its_end_of_stream_page(void **state)
{
	(void)state;
	unsigned char tail[100];
	memset(tail, 0xAA, sizeof(tail));
	memcpy(tail + sizeof(tail) - sizeof(last_page), last_page, sizeof(last_page));
	uint64_t granule = 0;
	assert_int_equal(ogg_last_page(tail, sizeof(tail), &granule), OGG_END_WHOLE);
	assert_int_equal(granule, 115233);
}

static void test_an_ogg_file_cut_at_a_page_boundary_has_no_end_of_stream(void **state)
{
	(void)state;
	unsigned char page[sizeof(last_page)];
	memcpy(page, last_page, sizeof(page));
	page[5] = 0; /* the same page, not flagged end-of-stream, with its own CRC */
	memcpy(page + 22, "\xbb\x94\x48\x9f", 4);
	uint64_t granule;
	assert_int_equal(ogg_last_page(page, sizeof(page), &granule), OGG_END_NO_EOS);
	assert_int_equal(granule, 115233);
	page[30] ^= 1; /* damaged: no whole page left */
	assert_int_equal(ogg_last_page(page, sizeof(page), &granule), OGG_END_NONE);
}

static void test_an_ogg_page_cut_short_or_followed_by_bytes_is_cut(void **state)
{
	(void)state;
	uint64_t granule;
	assert_int_equal(ogg_last_page(last_page, sizeof(last_page) - 3, &granule), OGG_END_CUT);
	unsigned char longer[sizeof(last_page) + 2];
	memcpy(longer, last_page, sizeof(last_page));
	longer[sizeof(last_page)] = 'O';
	longer[sizeof(last_page) + 1] = 'g';
	assert_int_equal(ogg_last_page(longer, sizeof(longer), &granule), OGG_END_CUT);
}

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
		cmocka_unit_test(test_streaminfo_gives_block_sizes_rate_and_samples),
		cmocka_unit_test(test_a_whole_last_frame_gives_where_it_ends),
		cmocka_unit_test(test_a_last_frame_cut_short_is_cut),
		cmocka_unit_test(test_no_frame_header_at_all),
		cmocka_unit_test(test_an_ogg_file_ending_with_its_end_of_stream_page),
		cmocka_unit_test(test_an_ogg_file_cut_at_a_page_boundary_has_no_end_of_stream),
		cmocka_unit_test(test_an_ogg_page_cut_short_or_followed_by_bytes_is_cut),
		cmocka_unit_test(test_mp4_box_headers),
		cmocka_unit_test(test_mvhd_duration_in_both_versions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
