/*
 * Unit tests for server/http/etag.h: the strong ETag built from a file's mtime
 * and size, and the one taken from a document's field (--etag-field).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "http/etag.h"

/* RFC 9110's example instant: Sun, 06 Nov 1994 08:49:37 GMT. */
#define EXAMPLE_TIME 784111777

static void format_etag(char out[ETAG_MAX], time_t seconds, long nanoseconds, uint64_t size)
{
	struct timespec mtime = {.tv_sec = seconds, .tv_nsec = nanoseconds};
	etag_format(out, mtime, size);
}

/* etag_format */

static void test_etag_is_seconds_nanoseconds_and_size_in_hex(void **state)
{
	(void)state;
	char etag[ETAG_MAX];
	format_etag(etag, EXAMPLE_TIME, 123456789, 4096);
	assert_string_equal(etag, "\"2ebc98a1075bcd15-1000\"");
}

static void test_etag_pads_nanoseconds_to_eight_digits(void **state)
{
	(void)state;
	char etag[ETAG_MAX];
	format_etag(etag, EXAMPLE_TIME, 0, 0);
	assert_string_equal(etag, "\"2ebc98a100000000-0\"");
	format_etag(etag, 1, 1, 1);
	assert_string_equal(etag, "\"100000001-1\"");
}

static void test_etag_is_quoted_and_strong(void **state)
{
	(void)state;
	char etag[ETAG_MAX];
	format_etag(etag, EXAMPLE_TIME, 5, 10);
	size_t length = strlen(etag);
	assert_true(length >= 2);
	assert_int_equal(etag[0], '"');
	assert_int_equal(etag[length - 1], '"');
	assert_null(strstr(etag, "W/"));
	assert_null(memchr(etag + 1, '"', length - 2));
}

static void test_etag_differs_when_nanoseconds_differ(void **state)
{
	(void)state;
	char a[ETAG_MAX], b[ETAG_MAX];
	format_etag(a, EXAMPLE_TIME, 1, 4096);
	format_etag(b, EXAMPLE_TIME, 2, 4096);
	assert_string_not_equal(a, b);
}

static void test_etag_differs_when_seconds_differ(void **state)
{
	(void)state;
	char a[ETAG_MAX], b[ETAG_MAX];
	format_etag(a, EXAMPLE_TIME, 0, 4096);
	format_etag(b, EXAMPLE_TIME + 1, 0, 4096);
	assert_string_not_equal(a, b);
}

static void test_etag_differs_when_size_differs(void **state)
{
	(void)state;
	char a[ETAG_MAX], b[ETAG_MAX];
	format_etag(a, EXAMPLE_TIME, 0, 4096);
	format_etag(b, EXAMPLE_TIME, 0, 4097);
	assert_string_not_equal(a, b);
}

static void test_etag_does_not_confuse_seconds_with_nanoseconds(void **state)
{
	(void)state;
	char a[ETAG_MAX], b[ETAG_MAX];
	format_etag(a, 0x1, 0x10, 7);
	format_etag(b, 0x10, 0x1, 7);
	assert_string_not_equal(a, b);
}

static void test_etag_of_the_largest_values_fits(void **state)
{
	(void)state;
	char *etag = malloc(ETAG_MAX);
	assert_non_null(etag);
	format_etag(etag, INT64_MAX, 999999999, UINT64_MAX);
	assert_string_equal(etag, "\"7fffffffffffffff3b9ac9ff-ffffffffffffffff\"");
	free(etag);
}

/* etag_from_field */

#define SHA256_HEX "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define UNTOUCHED "untouched"

/* etag_from_field into exactly ETAG_MAX heap bytes (ASan sees an overrun); returns its result. */
static int field_etag(const char *value, size_t length, char *copy_out)
{
	char *out = malloc(ETAG_MAX);
	assert_non_null(out);
	strcpy(out, UNTOUCHED);
	int result = etag_from_field(out, value, length);
	strcpy(copy_out, out);
	free(out);
	return result;
}

static void assert_field_refused(const char *value, size_t length)
{
	char etag[ETAG_MAX];
	assert_int_equal(field_etag(value, length, etag), -1);
	assert_string_equal(etag, UNTOUCHED);
}

static void test_field_etag_is_the_content_hash_quoted(void **state)
{
	(void)state;
	char etag[ETAG_MAX];
	assert_int_equal(field_etag(SHA256_HEX, strlen(SHA256_HEX), etag), 0);
	assert_string_equal(etag, "\"" SHA256_HEX "\"");
}

static void test_field_etag_takes_base64_and_prefixed_forms(void **state)
{
	(void)state;
	const char *values[] = {"n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCg8=",
				"n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCg8", "sha256:" SHA256_HEX,
				"v1.2~x", "0"};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		char etag[ETAG_MAX], expected[ETAG_MAX];
		snprintf(expected, sizeof(expected), "\"%s\"", values[i]);
		assert_int_equal(field_etag(values[i], strlen(values[i]), etag), 0);
		assert_string_equal(etag, expected);
	}
}

static void test_field_etag_takes_the_longest_value_and_refuses_one_more_byte(void **state)
{
	(void)state;
	char value[ETAG_FIELD_VALUE_MAX + 2], etag[ETAG_MAX];
	memset(value, 'a', sizeof(value) - 1);
	value[sizeof(value) - 1] = '\0';
	assert_int_equal(field_etag(value, ETAG_FIELD_VALUE_MAX, etag), 0);
	assert_int_equal(strlen(etag), ETAG_FIELD_VALUE_MAX + 2);
	assert_int_equal(etag[0], '"');
	assert_int_equal(etag[ETAG_FIELD_VALUE_MAX + 1], '"');
	assert_field_refused(value, ETAG_FIELD_VALUE_MAX + 1);
}

static void test_field_etag_refuses_an_empty_or_missing_value(void **state)
{
	(void)state;
	assert_field_refused("", 0);
	assert_field_refused(NULL, 0);
}

static void test_field_etag_refuses_bytes_that_would_need_escaping(void **state)
{
	(void)state;
	/* Each would break the quoted form or an If-None-Match list, or smuggle a header. */
	const char *values[] = {"ab\"cd", "ab cd", "ab,cd", "ab\\cd", "ab\r\nSet-Cookie:x",
				"ab\tcd", "ab\x7f", "caf\xc3\xa9", "W/\"x\"", "ab;cd", "*"};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		assert_field_refused(values[i], strlen(values[i]));
}

static void test_field_etag_refuses_a_nul_inside_the_value(void **state)
{
	(void)state;
	/* A BSON string may hold NUL; the length is the string's, not strlen's. */
	assert_field_refused("abc\0def", 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_etag_is_seconds_nanoseconds_and_size_in_hex),
		cmocka_unit_test(test_etag_pads_nanoseconds_to_eight_digits),
		cmocka_unit_test(test_etag_is_quoted_and_strong),
		cmocka_unit_test(test_etag_differs_when_nanoseconds_differ),
		cmocka_unit_test(test_etag_differs_when_seconds_differ),
		cmocka_unit_test(test_etag_differs_when_size_differs),
		cmocka_unit_test(test_etag_does_not_confuse_seconds_with_nanoseconds),
		cmocka_unit_test(test_etag_of_the_largest_values_fits),
		cmocka_unit_test(test_field_etag_is_the_content_hash_quoted),
		cmocka_unit_test(test_field_etag_takes_base64_and_prefixed_forms),
		cmocka_unit_test(test_field_etag_takes_the_longest_value_and_refuses_one_more_byte),
		cmocka_unit_test(test_field_etag_refuses_an_empty_or_missing_value),
		cmocka_unit_test(test_field_etag_refuses_bytes_that_would_need_escaping),
		cmocka_unit_test(test_field_etag_refuses_a_nul_inside_the_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
