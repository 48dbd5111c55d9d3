/*
 * Unit tests for server/http/multipart.h: the exact text around each part of a
 * multipart/byteranges body (RFC 9110 section 14.6, laid out as nginx does),
 * the closing delimiter, the Content-Type value, and a body length that equals
 * the sum of the pieces actually sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/multipart.h"

#define BOUNDARY "00000000000000000001"
#define TYPE "audio/mpeg"

/* Writes into a heap buffer of exactly size bytes (ASan sees overruns); returns the text. */
static char *part_header(size_t size, const char *boundary, const char *type,
			 struct byte_range part, uint64_t file_size, size_t *length)
{
	char *out = malloc(size);
	assert_non_null(out);
	*length = multipart_part_header(out, size, boundary, type, &part, file_size);
	return out;
}

static void test_part_header_exact_bytes(void **state)
{
	(void)state;
	size_t length;
	char *text = part_header(MULTIPART_HEADER_MAX, BOUNDARY, TYPE,
				 (struct byte_range){0, 499}, 1000, &length);
	const char *expected = "\r\n--" BOUNDARY "\r\n"
			       "Content-Type: " TYPE "\r\n"
			       "Content-Range: bytes 0-499/1000\r\n"
			       "\r\n";
	assert_string_equal(text, expected);
	assert_int_equal(length, strlen(expected));
	free(text);
}

static void test_part_header_of_one_byte(void **state)
{
	(void)state;
	size_t length;
	char *text = part_header(MULTIPART_HEADER_MAX, "b", "application/octet-stream",
				 (struct byte_range){999, 999}, 1000, &length);
	const char *expected = "\r\n--b\r\n"
			       "Content-Type: application/octet-stream\r\n"
			       "Content-Range: bytes 999-999/1000\r\n"
			       "\r\n";
	assert_string_equal(text, expected);
	assert_int_equal(length, strlen(expected));
	free(text);
}

static void test_part_header_with_offsets_past_32_bits(void **state)
{
	(void)state;
	size_t length;
	char *text = part_header(MULTIPART_HEADER_MAX, BOUNDARY, TYPE,
				 (struct byte_range){4294967296ULL, 18446744073709551613ULL},
				 18446744073709551615ULL, &length);
	const char *expected = "\r\n--" BOUNDARY "\r\n"
			       "Content-Type: " TYPE "\r\n"
			       "Content-Range: bytes 4294967296-18446744073709551613/"
			       "18446744073709551615\r\n"
			       "\r\n";
	assert_string_equal(text, expected);
	assert_int_equal(length, strlen(expected));
	free(text);
}

static void test_part_header_fits_exactly(void **state)
{
	(void)state;
	const char *expected = "\r\n--" BOUNDARY "\r\nContent-Type: " TYPE
			       "\r\nContent-Range: bytes 0-0/1\r\n\r\n";
	size_t length;
	char *text = part_header(strlen(expected) + 1, BOUNDARY, TYPE, (struct byte_range){0, 0},
				 1, &length);
	assert_int_equal(length, strlen(expected));
	assert_string_equal(text, expected);
	free(text);
}

static void test_part_header_that_does_not_fit_returns_zero(void **state)
{
	(void)state;
	const char *expected = "\r\n--" BOUNDARY "\r\nContent-Type: " TYPE
			       "\r\nContent-Range: bytes 0-0/1\r\n\r\n";
	size_t length = 99;
	/* one byte short: no room for the terminating NUL */
	char *text = part_header(strlen(expected), BOUNDARY, TYPE, (struct byte_range){0, 0}, 1,
				 &length);
	assert_int_equal(length, 0);
	free(text);
	text = part_header(1, BOUNDARY, TYPE, (struct byte_range){0, 0}, 1, &length);
	assert_int_equal(length, 0);
	free(text);
}

static void test_closing_exact_bytes(void **state)
{
	(void)state;
	char *out = malloc(MULTIPART_HEADER_MAX);
	assert_non_null(out);
	size_t length = multipart_closing(out, MULTIPART_HEADER_MAX, BOUNDARY);
	assert_string_equal(out, "\r\n--" BOUNDARY "--\r\n");
	assert_int_equal(length, strlen("\r\n--" BOUNDARY "--\r\n"));
	free(out);
}

static void test_closing_that_does_not_fit_returns_zero(void **state)
{
	(void)state;
	size_t need = strlen("\r\n--" BOUNDARY "--\r\n") + 1;
	char *out = malloc(need - 1);
	assert_non_null(out);
	assert_int_equal(multipart_closing(out, need - 1, BOUNDARY), 0);
	free(out);
}

static void test_content_type_names_the_boundary(void **state)
{
	(void)state;
	char out[MULTIPART_BOUNDARY_MAX + 64];
	size_t length = multipart_content_type(out, sizeof(out), BOUNDARY);
	assert_string_equal(out, "multipart/byteranges; boundary=" BOUNDARY);
	assert_int_equal(length, strlen("multipart/byteranges; boundary=" BOUNDARY));
}

/* Builds the body the way a sender would, from the header/closing texts and the parts. */
static uint64_t assembled_length(const char *boundary, const char *type,
				 const struct byte_range *parts, size_t count, uint64_t file_size)
{
	char text[MULTIPART_HEADER_MAX];
	uint64_t length = 0;
	for (size_t i = 0; i < count; i++) {
		size_t header = multipart_part_header(text, sizeof(text), boundary, type, &parts[i],
						      file_size);
		assert_true(header > 0);
		length += header + (parts[i].last - parts[i].first + 1);
	}
	return length + multipart_closing(text, sizeof(text), boundary);
}

static void test_body_length_of_two_parts_is_exact(void **state)
{
	(void)state;
	const struct byte_range parts[] = {{0, 99}, {900, 999}};
	/* counted by hand: CRLF "--" boundary CRLF (26), Content-Type line (26), Content-Range
	 * line (32 or 35), CRLF (2); closing CRLF "--" boundary "--" CRLF (28) */
	const char *first = "\r\n--" BOUNDARY "\r\nContent-Type: " TYPE
			    "\r\nContent-Range: bytes 0-99/1000\r\n\r\n";
	const char *second = "\r\n--" BOUNDARY "\r\nContent-Type: " TYPE
			     "\r\nContent-Range: bytes 900-999/1000\r\n\r\n";
	const char *closing = "\r\n--" BOUNDARY "--\r\n";
	uint64_t expected = strlen(first) + 100 + strlen(second) + 100 + strlen(closing);
	assert_int_equal(multipart_body_length(BOUNDARY, TYPE, parts, 2, 1000), expected);
	assert_int_equal(expected, 86 + 100 + 89 + 100 + 28);
}

static void test_body_length_equals_the_sum_of_the_pieces(void **state)
{
	(void)state;
	const struct byte_range parts[] = {{0, 0},	 {5, 9},	    {100, 199},
					   {999, 999}, {0, 999},	    {123, 4567},
					   {1, 1},	 {9999999, 99999999}};
	const uint64_t file_size = 100000000;
	for (size_t count = 0; count <= sizeof(parts) / sizeof(parts[0]); count++)
		assert_int_equal(multipart_body_length(BOUNDARY, TYPE, parts, count, file_size),
				 assembled_length(BOUNDARY, TYPE, parts, count, file_size));
}

static void test_body_length_of_no_parts_is_the_closing(void **state)
{
	(void)state;
	assert_int_equal(multipart_body_length(BOUNDARY, TYPE, NULL, 0, 1000),
			 strlen("\r\n--" BOUNDARY "--\r\n"));
}

static void test_body_length_of_the_most_parts(void **state)
{
	(void)state;
	struct byte_range *parts = calloc(RANGE_MAX_PARTS_LIMIT, sizeof(*parts));
	assert_non_null(parts);
	for (size_t i = 0; i < RANGE_MAX_PARTS_LIMIT; i++)
		parts[i] = (struct byte_range){i * 1000, i * 1000 + 499};
	const uint64_t file_size = RANGE_MAX_PARTS_LIMIT * 1000;
	assert_int_equal(
		multipart_body_length(BOUNDARY, TYPE, parts, RANGE_MAX_PARTS_LIMIT, file_size),
		assembled_length(BOUNDARY, TYPE, parts, RANGE_MAX_PARTS_LIMIT, file_size));
	free(parts);
}

static void test_body_length_depends_on_the_content_type(void **state)
{
	(void)state;
	const struct byte_range parts[] = {{0, 9}, {20, 29}};
	uint64_t short_type = multipart_body_length(BOUNDARY, "a/b", parts, 2, 100);
	uint64_t long_type = multipart_body_length(BOUNDARY, "a/bcd", parts, 2, 100);
	assert_int_equal(long_type - short_type, 2 * 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_part_header_exact_bytes),
		cmocka_unit_test(test_part_header_of_one_byte),
		cmocka_unit_test(test_part_header_with_offsets_past_32_bits),
		cmocka_unit_test(test_part_header_fits_exactly),
		cmocka_unit_test(test_part_header_that_does_not_fit_returns_zero),
		cmocka_unit_test(test_closing_exact_bytes),
		cmocka_unit_test(test_closing_that_does_not_fit_returns_zero),
		cmocka_unit_test(test_content_type_names_the_boundary),
		cmocka_unit_test(test_body_length_of_two_parts_is_exact),
		cmocka_unit_test(test_body_length_equals_the_sum_of_the_pieces),
		cmocka_unit_test(test_body_length_of_no_parts_is_the_closing),
		cmocka_unit_test(test_body_length_of_the_most_parts),
		cmocka_unit_test(test_body_length_depends_on_the_content_type),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
