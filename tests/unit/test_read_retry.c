/*
 * Unit tests for server/db/read_retry.h: network errors and the server errors
 * of a stepdown, a recovering member or a shutdown are retried; a failed
 * server selection is unavailable without a retry; every other error fails;
 * a retry fits only while half of the deadline is left.
 */
#include <mongoc/mongoc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "db/read_retry.h"

static enum read_failure server_error(uint32_t code)
{
	return read_retry_classify(MONGOC_ERROR_SERVER, code);
}

static void test_the_stepdown_and_not_primary_errors_are_retryable(void **state)
{
	(void)state;
	const uint32_t codes[] = {10107, 13435, 11602, 189, 91};
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		assert_int_equal(server_error(codes[i]), READ_RETRYABLE);
}

static void test_the_other_errors_the_retryable_reads_specification_lists_are_retryable(void **state)
{
	(void)state;
	const uint32_t codes[] = {6, 7, 89, 134, 262, 9001, 11600, 13436};
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		assert_int_equal(server_error(codes[i]), READ_RETRYABLE);
}

static void test_a_connection_error_is_retryable(void **state)
{
	(void)state;
	assert_int_equal(read_retry_classify(MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_SOCKET),
			 READ_RETRYABLE);
	assert_int_equal(read_retry_classify(MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_CONNECT),
			 READ_RETRYABLE);
}

static void test_a_retryable_code_is_also_read_from_the_legacy_query_domain(void **state)
{
	(void)state;
	assert_int_equal(read_retry_classify(MONGOC_ERROR_QUERY, 10107), READ_RETRYABLE);
}

static void test_no_server_selected_is_unavailable_and_not_retried(void **state)
{
	(void)state;
	assert_int_equal(read_retry_classify(MONGOC_ERROR_SERVER_SELECTION,
					     MONGOC_ERROR_SERVER_SELECTION_FAILURE),
			 READ_UNAVAILABLE);
}

static void test_other_server_errors_fail(void **state)
{
	(void)state;
	assert_int_equal(server_error(2), READ_FAILED);	    /* BadValue */
	assert_int_equal(server_error(13), READ_FAILED);    /* Unauthorized */
	assert_int_equal(server_error(26), READ_FAILED);    /* NamespaceNotFound */
	assert_int_equal(server_error(10108), READ_FAILED); /* next to NotWritablePrimary */
}

static void test_a_client_side_error_fails(void **state)
{
	(void)state;
	assert_int_equal(read_retry_classify(MONGOC_ERROR_BSON, MONGOC_ERROR_BSON_INVALID),
			 READ_FAILED);
	assert_int_equal(read_retry_classify(MONGOC_ERROR_COMMAND, 10107), READ_FAILED);
}

static void test_a_retry_fits_while_half_the_deadline_is_left(void **state)
{
	(void)state;
	assert_true(read_retry_fits(2000, 2000));
	assert_true(read_retry_fits(1000, 2000));
	assert_false(read_retry_fits(999, 2000));
	assert_true(read_retry_fits(501, 1001));
	assert_false(read_retry_fits(500, 1001));
}

static void test_no_retry_fits_once_the_deadline_has_passed(void **state)
{
	(void)state;
	assert_false(read_retry_fits(0, 2000));
	assert_false(read_retry_fits(-5, 2000));
	assert_false(read_retry_fits(0, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_stepdown_and_not_primary_errors_are_retryable),
		cmocka_unit_test(test_the_other_errors_the_retryable_reads_specification_lists_are_retryable),
		cmocka_unit_test(test_a_connection_error_is_retryable),
		cmocka_unit_test(test_a_retryable_code_is_also_read_from_the_legacy_query_domain),
		cmocka_unit_test(test_no_server_selected_is_unavailable_and_not_retried),
		cmocka_unit_test(test_other_server_errors_fail),
		cmocka_unit_test(test_a_client_side_error_fails),
		cmocka_unit_test(test_a_retry_fits_while_half_the_deadline_is_left),
		cmocka_unit_test(test_no_retry_fits_once_the_deadline_has_passed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
