/*
 * Unit tests for import/vorbis_comment.h on comment blocks built byte by
 * byte: comments that are UTF-8 pass, the first one that is not is named by
 * its field (or "?"), a block cut short and lying lengths are checked as
 * far as they hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vorbis_comment.h"

struct block {
	unsigned char bytes[2048];
	size_t length;
	size_t count_at;
	uint32_t count;
};

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static void begin(struct block *b, const char *vendor)
{
	memset(b, 0, sizeof(*b));
	put32(b->bytes, (uint32_t)strlen(vendor));
	memcpy(b->bytes + 4, vendor, strlen(vendor));
	b->count_at = 4 + strlen(vendor);
	b->length = b->count_at + 4;
}

static void comment(struct block *b, const char *text, size_t length)
{
	put32(b->bytes + b->length, (uint32_t)length);
	memcpy(b->bytes + b->length + 4, text, length);
	b->length += 4 + length;
	put32(b->bytes + b->count_at, ++b->count);
}

#define COMMENT(b, literal) comment(b, literal, sizeof(literal) - 1)

static void test_comments_that_are_utf8_pass(void **state)
{
	(void)state;
	struct block b;
	struct vorbis_comment_info info;
	begin(&b, "Lavf59.27.100");
	COMMENT(&b, "TITLE=V\xc3\xb6rbis");
	COMMENT(&b, "ALBUMARTIST=\xf0\x9f\x8e\xb5");
	COMMENT(&b, "no equals sign");
	COMMENT(&b, "DISCNUMBER=");
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length, &info), 0);
	assert_string_equal(info.invalid_field, "");
}

static void test_a_comment_that_is_not_utf8_is_named(void **state)
{
	(void)state;
	struct block b;
	struct vorbis_comment_info info;
	begin(&b, "x");
	COMMENT(&b, "TITLE=fine");
	COMMENT(&b, "COMMENT=caf\xe9");
	COMMENT(&b, "ARTIST=\xff");
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length, &info), 0);
	assert_string_equal(info.invalid_field, "COMMENT"); /* the first one */
}

static void test_a_name_that_is_not_text_is_shown_as_a_question_mark(void **state)
{
	(void)state;
	struct block b;
	struct vorbis_comment_info info;
	begin(&b, "x");
	COMMENT(&b, "\xff\xfe=value");
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length, &info), 0);
	assert_string_equal(info.invalid_field, "?");
	begin(&b, "x");
	COMMENT(&b, "A_VERY_LONG_NAME_OF_MORE_THAN_THIRTY_ONE_BYTES=\xff");
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length, &info), 0);
	assert_string_equal(info.invalid_field, "A_VERY_LONG_NAME_OF_MORE_THAN_T");
}

static void test_cut_short_or_lying_lengths_are_checked_as_far_as_they_hold(void **state)
{
	(void)state;
	struct block b;
	struct vorbis_comment_info info;
	begin(&b, "vendor");
	COMMENT(&b, "DISCNUMBER=5");
	COMMENT(&b, "ALBUMARTIST=Cut \xff");
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length, &info), 0);
	assert_string_equal(info.invalid_field, "ALBUMARTIST");
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length - 2, &info), 0);
	assert_string_equal(info.invalid_field, ""); /* the bad comment is cut off */

	put32(b.bytes, 0xFFFFFFF0u); /* a vendor length past the end */
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length, &info), 0);
	assert_string_equal(info.invalid_field, "");
	assert_int_equal(vorbis_comment_parse(b.bytes, 3, &info), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_comments_that_are_utf8_pass),
		cmocka_unit_test(test_a_comment_that_is_not_utf8_is_named),
		cmocka_unit_test(test_a_name_that_is_not_text_is_shown_as_a_question_mark),
		cmocka_unit_test(test_cut_short_or_lying_lengths_are_checked_as_far_as_they_hold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
