/*
 * Unit tests for objectid_is_valid (server/http/route.h): accepts exactly 24
 * hexadecimal digits of either case in text[0..length), and nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http/route.h"

#define VALID_ID "507f1f77bcf86cd799439011"

static bool is_valid(const char *text)
{
	return objectid_is_valid(text, strlen(text));
}

static void test_accepts_24_lower_case_hex_digits(void **state)
{
	(void)state;
	assert_true(is_valid(VALID_ID));
}

static void test_accepts_24_upper_case_hex_digits(void **state)
{
	(void)state;
	assert_true(is_valid("507F1F77BCF86CD799439011"));
}

static void test_accepts_mixed_case_hex_digits(void **state)
{
	(void)state;
	assert_true(is_valid("aBcDeF0123456789AbCdEf01"));
}

static void test_accepts_every_hex_digit(void **state)
{
	(void)state;
	assert_true(is_valid("0123456789abcdefABCDEF00"));
}

static void test_rejects_23_digits(void **state)
{
	(void)state;
	assert_false(is_valid("507f1f77bcf86cd79943901"));
}

static void test_rejects_25_digits(void **state)
{
	(void)state;
	assert_false(is_valid("507f1f77bcf86cd7994390112"));
}

static void test_rejects_empty_text(void **state)
{
	(void)state;
	assert_false(objectid_is_valid("", 0));
}

static void test_looks_only_at_the_first_length_characters(void **state)
{
	(void)state;
	assert_true(objectid_is_valid(VALID_ID "/track.mp3", OBJECTID_HEX_LENGTH));
}

static void test_rejects_a_non_hex_letter(void **state)
{
	(void)state;
	assert_false(is_valid("507f1f77bcf86cd79943901g"));
	assert_false(is_valid("G07f1f77bcf86cd799439011"));
}

static void test_rejects_punctuation_and_spaces(void **state)
{
	(void)state;
	assert_false(is_valid("507f1f77-bcf86cd79943901"));
	assert_false(is_valid(" 507f1f77bcf86cd79943901"));
	assert_false(is_valid("507f1f77bcf86cd79943901 "));
	assert_false(is_valid("507f1f77bcf86cd7994390x1"));
}

static void test_rejects_a_byte_above_ascii(void **state)
{
	(void)state;
	assert_false(is_valid("507f1f77bcf86cd79943901\xff"));
}

static void test_rejects_an_embedded_nul(void **state)
{
	(void)state;
	const char text[] = "507f1f77bcf86cd7\0" "9943901";
	assert_int_equal(sizeof(text) - 1, OBJECTID_HEX_LENGTH);
	assert_false(objectid_is_valid(text, sizeof(text) - 1));
}

static void test_rejects_null(void **state)
{
	(void)state;
	assert_false(objectid_is_valid(NULL, OBJECTID_HEX_LENGTH));
	assert_false(objectid_is_valid(NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepts_24_lower_case_hex_digits),
		cmocka_unit_test(test_accepts_24_upper_case_hex_digits),
		cmocka_unit_test(test_accepts_mixed_case_hex_digits),
		cmocka_unit_test(test_accepts_every_hex_digit),
		cmocka_unit_test(test_rejects_23_digits),
		cmocka_unit_test(test_rejects_25_digits),
		cmocka_unit_test(test_rejects_empty_text),
		cmocka_unit_test(test_looks_only_at_the_first_length_characters),
		cmocka_unit_test(test_rejects_a_non_hex_letter),
		cmocka_unit_test(test_rejects_punctuation_and_spaces),
		cmocka_unit_test(test_rejects_a_byte_above_ascii),
		cmocka_unit_test(test_rejects_an_embedded_nul),
		cmocka_unit_test(test_rejects_null),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
