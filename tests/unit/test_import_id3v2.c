/*
 * Unit tests for import/id3v2.h on tags built byte by byte: the tag size
 * (with and without a footer, a bad header), valid text in each encoding,
 * versions 2.2, 2.3 and 2.4, unsynchronisation, extended headers,
 * compressed frames passed over, a tag cut short, and invalid text (UTF-8
 * bytes that are not UTF-8, lone UTF-16 surrogates, unknown encodings) named
 * by its frame.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "id3v2.h"

struct tag {
	unsigned char bytes[4096];
	size_t length;
	int version;
};

static void put_syncsafe(unsigned char *p, size_t n)
{
	p[0] = (unsigned char)((n >> 21) & 0x7F);
	p[1] = (unsigned char)((n >> 14) & 0x7F);
	p[2] = (unsigned char)((n >> 7) & 0x7F);
	p[3] = (unsigned char)(n & 0x7F);
}

static void begin(struct tag *tag, int version, unsigned char flags)
{
	memset(tag, 0, sizeof(*tag));
	memcpy(tag->bytes, "ID3", 3);
	tag->bytes[3] = (unsigned char)version;
	tag->bytes[5] = flags;
	tag->length = ID3V2_HEADER_SIZE;
	tag->version = version;
}

static void raw(struct tag *tag, const void *data, size_t length)
{
	memcpy(tag->bytes + tag->length, data, length);
	tag->length += length;
}

static void frame(struct tag *tag, const char *id, const void *payload, size_t length,
		  unsigned flags)
{
	unsigned char header[10] = {0};
	if (tag->version == 2) {
		memcpy(header, id, 3);
		header[3] = (unsigned char)(length >> 16);
		header[4] = (unsigned char)(length >> 8);
		header[5] = (unsigned char)length;
		raw(tag, header, 6);
	} else {
		memcpy(header, id, 4);
		if (tag->version == 4) {
			put_syncsafe(header + 4, length);
		} else {
			header[4] = (unsigned char)(length >> 24);
			header[5] = (unsigned char)(length >> 16);
			header[6] = (unsigned char)(length >> 8);
			header[7] = (unsigned char)length;
		}
		header[8] = (unsigned char)(flags >> 8);
		header[9] = (unsigned char)flags;
		raw(tag, header, 10);
	}
	raw(tag, payload, length);
}

#define FRAME(tag, id, literal) frame(tag, id, literal, sizeof(literal) - 1, 0)

static void end(struct tag *tag, size_t padding)
{
	memset(tag->bytes + tag->length, 0, padding);
	tag->length += padding;
	put_syncsafe(tag->bytes + 6, tag->length - ID3V2_HEADER_SIZE);
}

static void parse(const struct tag *tag, struct id3v2_info *info)
{
	assert_int_equal(id3v2_parse(tag->bytes, tag->length, info), 0);
}

static void test_tag_size_counts_header_body_and_footer(void **state)
{
	(void)state;
	unsigned char header[10] = {'I', 'D', '3', 4, 0, 0, 0, 0, 2, 0x24};
	assert_int_equal(id3v2_tag_size(header), 10 + 292);
	header[5] = 0x10; /* footer present */
	assert_int_equal(id3v2_tag_size(header), 10 + 292 + 10);
	header[3] = 3; /* v2.3 has no footer */
	assert_int_equal(id3v2_tag_size(header), 10 + 292);
}

static void test_tag_size_refuses_what_is_not_a_header(void **state)
{
	(void)state;
	unsigned char not_id3[10] = {'T', 'A', 'G', 4, 0, 0, 0, 0, 0, 1};
	unsigned char version_5[10] = {'I', 'D', '3', 5, 0, 0, 0, 0, 0, 1};
	unsigned char not_syncsafe[10] = {'I', 'D', '3', 4, 0, 0, 0, 0, 0x80, 1};
	assert_int_equal(id3v2_tag_size(not_id3), 0);
	assert_int_equal(id3v2_tag_size(version_5), 0);
	assert_int_equal(id3v2_tag_size(not_syncsafe), 0);
}

/* The invalid frame the checker names in tag (NUL-terminated; "" when all is valid). */
static const char *named(const struct tag *tag, struct id3v2_info *info)
{
	parse(tag, info);
	return info->invalid_frame;
}

static void test_valid_text_in_every_encoding_passes(void **state)
{
	(void)state;
	struct tag tag;
	struct id3v2_info info;
	begin(&tag, 4, 0);
	FRAME(&tag, "TIT2", "\x03Title \xc3\x81lbum");		     /* UTF-8 */
	FRAME(&tag, "TPE1", "\x00" "B\xe4nd");			     /* Latin-1: any byte */
	FRAME(&tag, "TPE2", "\x01\xff\xfe" "B\0\xe4\0n\0d\0\0\0"); /* UTF-16LE, BOM */
	FRAME(&tag, "TPOS", "\x01\xfe\xff\0" "7");		     /* UTF-16BE, BOM */
	FRAME(&tag, "TALB", "\x02\xd8\x3c\xdf\xb5");		     /* a surrogate pair */
	FRAME(&tag, "TCON", "\x03");				     /* empty */
	end(&tag, 64);
	assert_string_equal(named(&tag, &info), "");
}

static void test_v22_three_letter_frames(void **state)
{
	(void)state;
	struct tag tag;
	struct id3v2_info info;
	begin(&tag, 2, 0);
	FRAME(&tag, "TT2", "\x00Title");
	FRAME(&tag, "TP2", "\x03" "Bad \xff");
	end(&tag, 0);
	assert_string_equal(named(&tag, &info), "TP2");
}

/* Each structure below is read right only if the invalid frame after it is found. */
static void test_v23_unsynchronised_tag(void **state)
{
	(void)state;
	struct tag tag;
	struct id3v2_info info;
	begin(&tag, 3, 0x80);
	/* The frame size counts the resynchronised bytes: "\x00" "A\xff" "B" is 4 bytes. */
	raw(&tag, "TPE2\0\0\0\x04\0\0", 10);
	raw(&tag, "\x00" "A\xff\x00" "B", 5);
	FRAME(&tag, "TIT2", "\x03\xc3");
	end(&tag, 0);
	assert_string_equal(named(&tag, &info), "TIT2");
}

static void test_v24_frame_flags_unsync_and_data_length(void **state)
{
	(void)state;
	struct tag tag;
	struct id3v2_info info;
	begin(&tag, 4, 0);
	/* data length indicator (4 bytes) + unsynchronised content: "\x03\xff" is not UTF-8 */
	frame(&tag, "TPE2", "\0\0\0\x02\x03\xff\x00", 7, 0x0003);
	end(&tag, 0);
	assert_string_equal(named(&tag, &info), "TPE2");
	begin(&tag, 4, 0);
	frame(&tag, "TPE2", "\0\0\0\x02\x00\xff\x00", 7, 0x0003); /* Latin-1: valid */
	end(&tag, 0);
	assert_string_equal(named(&tag, &info), "");
}

static void test_compressed_frames_are_passed_over(void **state)
{
	(void)state;
	struct tag tag;
	struct id3v2_info info;
	begin(&tag, 4, 0);
	frame(&tag, "TPE2", "\0\0\0\x05\x03\xff\xfe!!", 9, 0x0009);
	FRAME(&tag, "TPOS", "\x03" "3");
	end(&tag, 0);
	assert_string_equal(named(&tag, &info), "");
}

static void test_extended_header_is_skipped(void **state)
{
	(void)state;
	struct tag tag;
	struct id3v2_info info;
	begin(&tag, 3, 0x40);
	raw(&tag, "\0\0\0\x06\0\0\0\0\0\0", 10); /* v2.3: size excludes itself */
	FRAME(&tag, "TPOS", "\x03" "9\xff");
	end(&tag, 0);
	assert_string_equal(named(&tag, &info), "TPOS");
}

static void test_a_tag_cut_short_is_checked_as_far_as_it_holds(void **state)
{
	(void)state;
	struct tag tag;
	struct id3v2_info info;
	begin(&tag, 4, 0);
	FRAME(&tag, "TPOS", "\x03" "5");
	FRAME(&tag, "TPE2", "\x03" "Cut \xff");
	end(&tag, 0);
	assert_string_equal(named(&tag, &info), "TPE2");
	assert_int_equal(id3v2_parse(tag.bytes, tag.length - 3, &info), 0);
	assert_string_equal(info.invalid_frame, ""); /* the bad frame is past the cut */
	assert_int_equal(id3v2_parse(tag.bytes, 5, &info), 0); /* not even a header */
	assert_string_equal(info.invalid_frame, "");
}

static void assert_invalid(const char *payload, size_t length, const char *id)
{
	struct tag tag;
	struct id3v2_info info;
	begin(&tag, 4, 0);
	FRAME(&tag, "TPE1", "\x03" "fine");
	frame(&tag, id, payload, length, 0);
	FRAME(&tag, "TALB", "\x03" "also fine");
	end(&tag, 0);
	parse(&tag, &info);
	assert_string_equal(info.invalid_frame, id);
}

static void test_invalid_text_is_named_by_its_frame(void **state)
{
	(void)state;
	assert_invalid("\x03" "Bad \xff\xfe", 7, "TIT2");		 /* not UTF-8 */
	assert_invalid("\x03" "ok\0\xc3\x28", 6, "TCON");		 /* a second value */
	assert_invalid("\x01\xff\xfe" "a\0\0\xd8", 7, "TIT2");	 /* high surrogate alone */
	assert_invalid("\x02\xdc\x00" "\0a", 5, "TPE2");		 /* low surrogate first */
	assert_invalid("\x09" "what encoding", 14, "TIT2");		 /* no such encoding */
	assert_invalid("\x03" "eng" "desc\0\xff", 10, "COMM");	 /* the comment's text */
	assert_invalid("\x03" "desc\0\xc0\xaf", 8, "TXXX");		 /* overlong */
}

static void test_other_frames_are_not_checked(void **state)
{
	(void)state;
	struct tag tag;
	struct id3v2_info info;
	begin(&tag, 4, 0);
	FRAME(&tag, "APIC", "\x03image/png\0\x03\0\xff\xd8\xff\xe0");
	FRAME(&tag, "PRIV", "owner\0\xff\xff");
	end(&tag, 0);
	parse(&tag, &info);
	assert_string_equal(info.invalid_frame, "");
}

static void test_a_frame_id_that_is_not_one_ends_the_tag(void **state)
{
	(void)state;
	struct tag tag;
	struct id3v2_info info;
	begin(&tag, 3, 0);
	FRAME(&tag, "T\xc4\xff\x01", "\x03\xff"); /* its id would reach a terminal */
	FRAME(&tag, "TIT2", "\x03\xff");
	end(&tag, 0);
	assert_string_equal(named(&tag, &info), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tag_size_counts_header_body_and_footer),
		cmocka_unit_test(test_tag_size_refuses_what_is_not_a_header),
		cmocka_unit_test(test_valid_text_in_every_encoding_passes),
		cmocka_unit_test(test_v22_three_letter_frames),
		cmocka_unit_test(test_v23_unsynchronised_tag),
		cmocka_unit_test(test_v24_frame_flags_unsync_and_data_length),
		cmocka_unit_test(test_compressed_frames_are_passed_over),
		cmocka_unit_test(test_extended_header_is_skipped),
		cmocka_unit_test(test_a_tag_cut_short_is_checked_as_far_as_it_holds),
		cmocka_unit_test(test_invalid_text_is_named_by_its_frame),
		cmocka_unit_test(test_other_frames_are_not_checked),
		cmocka_unit_test(test_a_frame_id_that_is_not_one_ends_the_tag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
