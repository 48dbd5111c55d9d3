/*
 * Unit tests for server/http/framing.h: which requests are refused (400, then the
 * connection closed) because their body could be read two ways.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "http/framing.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static enum framing_verdict check(int body_is_read, const char *const *lengths, size_t length_count,
				  const char *const *encodings, size_t encoding_count)
{
	struct framing_request request = {body_is_read, lengths, length_count, encodings,
					  encoding_count};
	return framing_check(&request);
}

static void test_head_without_a_body_is_fine(void **state)
{
	(void)state;
	assert_int_equal(check(0, NULL, 0, NULL, 0), FRAMING_OK);
}

static void test_head_with_content_length_zero_is_fine(void **state)
{
	(void)state;
	const char *lengths[] = {"0"};
	assert_int_equal(check(0, lengths, 1, NULL, 0), FRAMING_OK);
	const char *padded[] = {"000"};
	assert_int_equal(check(0, padded, 1, NULL, 0), FRAMING_OK);
}

static void test_head_with_a_body_length_is_refused(void **state)
{
	(void)state;
	const char *lengths[] = {"93"};
	assert_int_equal(check(0, lengths, 1, NULL, 0), FRAMING_REFUSE);
}

static void test_head_with_a_malformed_or_empty_length_is_refused(void **state)
{
	(void)state;
	const char *values[] = {"", "-1", "0x10", "1e3", " 5", "0, 5"};
	for (size_t i = 0; i < COUNT(values); i++) {
		const char *lengths[] = {values[i]};
		assert_int_equal(check(0, lengths, 1, NULL, 0), FRAMING_REFUSE);
	}
}

static void test_head_with_a_second_nonzero_length_is_refused(void **state)
{
	(void)state;
	const char *lengths[] = {"0", "93"};
	assert_int_equal(check(0, lengths, COUNT(lengths), NULL, 0), FRAMING_REFUSE);
}

static void test_head_with_any_transfer_encoding_is_refused(void **state)
{
	(void)state;
	const char *values[] = {"chunked", "identity", "gzip, chunked", ""};
	for (size_t i = 0; i < COUNT(values); i++) {
		const char *encodings[] = {values[i]};
		assert_int_equal(check(0, NULL, 0, encodings, 1), FRAMING_REFUSE);
	}
}

static void test_get_with_a_length_is_fine(void **state)
{
	(void)state;
	const char *lengths[] = {"12"};
	assert_int_equal(check(1, lengths, 1, NULL, 0), FRAMING_OK);
}

static void test_get_with_chunked_in_any_case_is_fine(void **state)
{
	(void)state;
	const char *encodings[] = {"Chunked"};
	assert_int_equal(check(1, NULL, 0, encodings, 1), FRAMING_OK);
}

static void test_get_with_another_transfer_coding_is_refused(void **state)
{
	(void)state;
	const char *values[] = {"gzip", "gzip, chunked", "chunked, identity", "identity", "chunked "};
	for (size_t i = 0; i < COUNT(values); i++) {
		const char *encodings[] = {values[i]};
		assert_int_equal(check(1, NULL, 0, encodings, 1), FRAMING_REFUSE);
	}
}

static void test_get_with_two_transfer_encoding_lines_is_refused(void **state)
{
	(void)state;
	const char *encodings[] = {"chunked", "chunked"};
	assert_int_equal(check(1, NULL, 0, encodings, COUNT(encodings)), FRAMING_REFUSE);
}

static void test_get_with_both_length_and_coding_is_refused(void **state)
{
	(void)state;
	const char *lengths[] = {"5"};
	const char *encodings[] = {"chunked"};
	assert_int_equal(check(1, lengths, 1, encodings, 1), FRAMING_REFUSE);
}

static void test_get_with_differing_lengths_is_refused(void **state)
{
	(void)state;
	const char *lengths[] = {"5", "50"};
	assert_int_equal(check(1, lengths, COUNT(lengths), NULL, 0), FRAMING_REFUSE);
}

static void test_get_with_repeated_equal_lengths_is_fine(void **state)
{
	(void)state;
	const char *lengths[] = {"5", "5"};
	assert_int_equal(check(1, lengths, COUNT(lengths), NULL, 0), FRAMING_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_without_a_body_is_fine),
		cmocka_unit_test(test_head_with_content_length_zero_is_fine),
		cmocka_unit_test(test_head_with_a_body_length_is_refused),
		cmocka_unit_test(test_head_with_a_malformed_or_empty_length_is_refused),
		cmocka_unit_test(test_head_with_a_second_nonzero_length_is_refused),
		cmocka_unit_test(test_head_with_any_transfer_encoding_is_refused),
		cmocka_unit_test(test_get_with_a_length_is_fine),
		cmocka_unit_test(test_get_with_chunked_in_any_case_is_fine),
		cmocka_unit_test(test_get_with_another_transfer_coding_is_refused),
		cmocka_unit_test(test_get_with_two_transfer_encoding_lines_is_refused),
		cmocka_unit_test(test_get_with_both_length_and_coding_is_refused),
		cmocka_unit_test(test_get_with_differing_lengths_is_refused),
		cmocka_unit_test(test_get_with_repeated_equal_lengths_is_fine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
