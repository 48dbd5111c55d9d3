/*
 * Unit tests for import/vorbis_comment.h on comment blocks built byte by
 * byte: ALBUMARTIST (any case, or "ALBUM ARTIST") and DISCNUMBER, the first
 * one kept, a block cut short, lying lengths, and a comment that is not
 * UTF-8 named by its field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
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

static void test_album_artist_and_disc_number(void **state)
{
	(void)state;
	struct block b;
	struct vorbis_comment_info info;
	begin(&b, "Lavf59.27.100");
	COMMENT(&b, "TITLE=V\xc3\xb6rbis");
	COMMENT(&b, "albumartist=Ogg Album Artist");
	COMMENT(&b, "DISCNUMBER=3/4");
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length, &info), 0);
	assert_string_equal(info.album_artist, "Ogg Album Artist");
	assert_int_equal(info.disc, 3);
	assert_string_equal(info.invalid_field, "");
	free(info.album_artist);
}

static void test_album_artist_spelled_with_a_space_and_first_one_kept(void **state)
{
	(void)state;
	struct block b;
	struct vorbis_comment_info info;
	begin(&b, "");
	COMMENT(&b, "ALBUM ARTIST=First");
	COMMENT(&b, "ALBUMARTIST=Second");
	COMMENT(&b, "DISCNUMBER=");
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length, &info), 0);
	assert_string_equal(info.album_artist, "First");
	assert_int_equal(info.disc, 0);
	free(info.album_artist);
}

static void test_names_must_match_whole(void **state)
{
	(void)state;
	struct block b;
	struct vorbis_comment_info info;
	begin(&b, "x");
	COMMENT(&b, "ALBUMARTISTSORT=Sorted");
	COMMENT(&b, "DISC=2");
	COMMENT(&b, "no equals sign");
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length, &info), 0);
	assert_null(info.album_artist);
	assert_int_equal(info.disc, 0);
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
	assert_string_equal(info.invalid_field, "COMMENT");
	free(info.album_artist);
}

static void test_cut_short_or_lying_lengths_give_what_is_there(void **state)
{
	(void)state;
	struct block b;
	struct vorbis_comment_info info;
	begin(&b, "vendor");
	COMMENT(&b, "DISCNUMBER=5");
	COMMENT(&b, "ALBUMARTIST=Cut");
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length - 2, &info), 0);
	assert_int_equal(info.disc, 5);
	assert_null(info.album_artist);

	put32(b.bytes, 0xFFFFFFF0u); /* a vendor length past the end */
	assert_int_equal(vorbis_comment_parse(b.bytes, b.length, &info), 0);
	assert_int_equal(info.disc, 0);
	assert_int_equal(vorbis_comment_parse(b.bytes, 3, &info), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_album_artist_and_disc_number),
		cmocka_unit_test(test_album_artist_spelled_with_a_space_and_first_one_kept),
		cmocka_unit_test(test_names_must_match_whole),
		cmocka_unit_test(test_a_comment_that_is_not_utf8_is_named),
		cmocka_unit_test(test_cut_short_or_lying_lengths_give_what_is_there),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
