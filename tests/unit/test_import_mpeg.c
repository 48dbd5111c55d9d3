/*
 * Unit tests for import/mpeg.h: Layer III header checks, and the audio byte
 * count of a Xing/Info frame as LAME and FFmpeg write it (MPEG-1 stereo and
 * mono, MPEG-2), only when their encoder name follows, and with the fields
 * an encoder left out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mpeg.h"

#define FRAME_SIZE 417

static unsigned char frame[FRAME_SIZE];

/* header: 4 bytes; the Xing tag at tag_at with flags, frames, bytes, (toc), (quality), encoder */
static void make(const unsigned char header[4], size_t tag_at, const char *tag, uint32_t flags,
		 uint32_t bytes, const char *encoder)
{
	memset(frame, 0, sizeof(frame));
	memcpy(frame, header, 4);
	unsigned char *p = frame + tag_at;
	memcpy(p, tag, 4);
	p[7] = (unsigned char)flags;
	p += 8;
	if (flags & 1) {
		p[3] = 78;
		p += 4;
	}
	if (flags & 2) {
		p[0] = (unsigned char)(bytes >> 24);
		p[1] = (unsigned char)(bytes >> 16);
		p[2] = (unsigned char)(bytes >> 8);
		p[3] = (unsigned char)bytes;
		p += 4;
	}
	if (flags & 4)
		p += 100;
	if (flags & 8)
		p += 4;
	memcpy(p, encoder, strlen(encoder));
}

static const unsigned char mpeg1_stereo[4] = {0xFF, 0xFB, 0x90, 0x64};
static const unsigned char mpeg1_mono[4] = {0xFF, 0xFB, 0x90, 0xC4};
static const unsigned char mpeg2_stereo[4] = {0xFF, 0xF3, 0x90, 0x64};

static void test_layer3_headers(void **state)
{
	(void)state;
	assert_true(mpeg_is_layer3_header(mpeg1_stereo));
	assert_true(mpeg_is_layer3_header(mpeg2_stereo));
	const unsigned char layer2[4] = {0xFF, 0xFD, 0x90, 0x64};
	const unsigned char bad_rate[4] = {0xFF, 0xFB, 0x9C, 0x64};
	const unsigned char free_bitrate[4] = {0xFF, 0xFB, 0x00, 0x64};
	const unsigned char reserved_version[4] = {0xFF, 0xEB, 0x90, 0x64};
	const unsigned char no_sync[4] = {0xFF, 0x1B, 0x90, 0x64};
	assert_false(mpeg_is_layer3_header(layer2));
	assert_false(mpeg_is_layer3_header(bad_rate));
	assert_false(mpeg_is_layer3_header(free_bitrate));
	assert_false(mpeg_is_layer3_header(reserved_version));
	assert_false(mpeg_is_layer3_header(no_sync));
}

static void test_lame_info_frame_mpeg1_stereo(void **state)
{
	(void)state;
	uint32_t bytes = 0;
	make(mpeg1_stereo, 36, "Info", 0x0F, 33017, "LAME3.100");
	assert_true(mpeg_stream_bytes(frame, sizeof(frame), &bytes));
	assert_int_equal(bytes, 33017);
}

static void test_side_info_sizes_of_mono_and_mpeg2(void **state)
{
	(void)state;
	uint32_t bytes = 0;
	make(mpeg1_mono, 21, "Xing", 0x0F, 1234, "LAME3.99r");
	assert_true(mpeg_stream_bytes(frame, sizeof(frame), &bytes));
	assert_int_equal(bytes, 1234);
	make(mpeg2_stereo, 21, "Info", 0x0F, 999, "Lavc59.37");
	assert_true(mpeg_stream_bytes(frame, sizeof(frame), &bytes));
	assert_int_equal(bytes, 999);
	make(mpeg1_stereo, 21, "Info", 0x0F, 999, "LAME"); /* tag where mono's would be */
	assert_false(mpeg_stream_bytes(frame, sizeof(frame), &bytes));
}

static void test_fields_left_out_move_the_encoder_name(void **state)
{
	(void)state;
	uint32_t bytes = 0;
	make(mpeg1_stereo, 36, "Xing", 0x02, 4321, "Lavf");
	assert_true(mpeg_stream_bytes(frame, sizeof(frame), &bytes));
	assert_int_equal(bytes, 4321);
	make(mpeg1_stereo, 36, "Xing", 0x0D, 4321, "LAME"); /* no byte count */
	assert_false(mpeg_stream_bytes(frame, sizeof(frame), &bytes));
}

static void test_other_encoders_counts_are_not_trusted(void **state)
{
	(void)state;
	uint32_t bytes = 0;
	make(mpeg1_stereo, 36, "Xing", 0x0F, 33017, "");
	assert_false(mpeg_stream_bytes(frame, sizeof(frame), &bytes));
	make(mpeg1_stereo, 36, "Xing", 0x0F, 33017, "GOGO");
	assert_false(mpeg_stream_bytes(frame, sizeof(frame), &bytes));
}

static void test_a_frame_cut_short(void **state)
{
	(void)state;
	uint32_t bytes = 0;
	make(mpeg1_stereo, 36, "Info", 0x0F, 33017, "LAME3.100");
	assert_false(mpeg_stream_bytes(frame, 36 + 8 + 4 + 4 + 100 + 4 + 2, &bytes));
	assert_false(mpeg_stream_bytes(frame, 3, &bytes));
}

static void test_playing_samples_leave_out_the_encoders_delay_and_padding(void **state)
{
	(void)state;
	make(mpeg1_stereo, 36, "Info", 3, 1000, "LAME3.100");
	unsigned char *gapless = frame + 36 + 8 + 4 + 4 + 21; /* 576 and 756 samples */
	gapless[0] = 0x24;
	gapless[1] = 0x02;
	gapless[2] = 0xF4;
	uint64_t samples;
	unsigned rate;
	assert_true(mpeg_playing_samples(frame, sizeof(frame), &samples, &rate));
	assert_int_equal(samples, 78 * 1152 - 576 - 756);
	assert_int_equal(rate, 44100);
	make(mpeg2_stereo, 21, "Xing", 1, 0, "Lavc59.37");
	assert_true(mpeg_playing_samples(frame, sizeof(frame), &samples, &rate));
	assert_int_equal(samples, 78 * 576);
	assert_int_equal(rate, 22050);
}

static void test_playing_samples_need_a_frame_count_and_a_known_encoder(void **state)
{
	(void)state;
	uint64_t samples;
	unsigned rate;
	make(mpeg1_stereo, 36, "Info", 2, 1000, "LAME3.100"); /* bytes, no frames */
	assert_false(mpeg_playing_samples(frame, sizeof(frame), &samples, &rate));
	make(mpeg1_stereo, 36, "Info", 3, 1000, "GOGO");
	assert_false(mpeg_playing_samples(frame, sizeof(frame), &samples, &rate));
	make(mpeg1_stereo, 36, "Info", 3, 1000, "LAME3.100");
	assert_false(mpeg_playing_samples(frame, 36 + 8 + 4 + 4 + 21, &samples, &rate)); /* cut */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layer3_headers),
		cmocka_unit_test(test_lame_info_frame_mpeg1_stereo),
		cmocka_unit_test(test_side_info_sizes_of_mono_and_mpeg2),
		cmocka_unit_test(test_fields_left_out_move_the_encoder_name),
		cmocka_unit_test(test_other_encoders_counts_are_not_trusted),
		cmocka_unit_test(test_a_frame_cut_short),
		cmocka_unit_test(test_playing_samples_leave_out_the_encoders_delay_and_padding),
		cmocka_unit_test(test_playing_samples_need_a_frame_count_and_a_known_encoder),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
