/*
 * Unit tests for import/reply.h: what a bulk write's reply says of each
 * operation. Replies are written as libmongoc returns them (extended JSON).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "reply.h"

#define OPS 4

static void read_json(const char *json, enum reply_kind kind, size_t count,
		      struct op_result *results, struct reply_summary *summary)
{
	bson_error_t error;
	bson_t *reply = bson_new_from_json((const uint8_t *)json, -1, &error);
	assert_non_null(reply);
	reply_read(reply, kind, count, results, summary);
	bson_destroy(reply);
}

static void test_counts_that_add_up_mean_every_insert_was_written(void **state)
{
	(void)state;
	struct op_result results[OPS];
	struct reply_summary summary;
	read_json("{\"nInserted\": 4, \"nMatched\": 0, \"nUpserted\": 0, \"writeErrors\": []}",
		  REPLY_INSERTS, OPS, results, &summary);
	for (int i = 0; i < OPS; i++)
		assert_int_equal(results[i].outcome, OP_WRITTEN);
	assert_int_equal(summary.written, 4);
	assert_int_equal(summary.unknown, 0);
}

static void test_an_empty_write_errors_array_with_nothing_counted_leaves_all_unknown(void **state)
{
	(void)state;
	struct op_result results[OPS];
	struct reply_summary summary;
	/* What libmongoc returns when the connection drops or it refuses the bulk itself. */
	read_json("{\"nInserted\": 0, \"nMatched\": 0, \"writeErrors\": []}", REPLY_INSERTS, OPS,
		  results, &summary);
	for (int i = 0; i < OPS; i++)
		assert_int_equal(results[i].outcome, OP_UNKNOWN);
	assert_int_equal(summary.unknown, OPS);
}

static void test_an_empty_reply_says_nothing_was_written(void **state)
{
	(void)state;
	struct op_result results[OPS];
	struct reply_summary summary;
	read_json("{}", REPLY_UPSERTS, OPS, results, &summary);
	assert_int_equal(summary.unknown, OPS);
	assert_int_equal(results[0].outcome, OP_UNKNOWN);
}

static void test_write_errors_name_their_operations_and_the_rest_are_written(void **state)
{
	(void)state;
	struct op_result results[OPS];
	struct reply_summary summary;
	read_json("{\"nInserted\": 2, \"writeErrors\": ["
		  "{\"index\": 1, \"code\": 11000, \"errmsg\": \"E11000 duplicate key\"},"
		  "{\"index\": 3, \"code\": 121, \"errmsg\": \"Document failed validation\"}]}",
		  REPLY_INSERTS, OPS, results, &summary);
	assert_int_equal(results[0].outcome, OP_WRITTEN);
	assert_int_equal(results[1].outcome, OP_DUPLICATE);
	assert_int_equal(results[2].outcome, OP_WRITTEN);
	assert_int_equal(results[3].outcome, OP_REFUSED);
	assert_string_equal(results[3].message, "Document failed validation (code 121)");
	assert_int_equal(summary.duplicates, 1);
	assert_int_equal(summary.refused, 1);
	assert_int_equal(summary.unknown, 0);
}

static void test_write_errors_and_too_few_counted_leave_the_others_unknown(void **state)
{
	(void)state;
	struct op_result results[OPS];
	struct reply_summary summary;
	read_json("{\"nInserted\": 1, \"writeErrors\": [{\"index\": 0, \"code\": 2, "
		  "\"errmsg\": \"bad\"}]}",
		  REPLY_INSERTS, OPS, results, &summary);
	assert_int_equal(results[0].outcome, OP_REFUSED);
	for (int i = 1; i < OPS; i++)
		assert_int_equal(results[i].outcome, OP_UNKNOWN);
	assert_int_equal(summary.unknown, 3);
}

static void test_upserts_count_matched_and_upserted(void **state)
{
	(void)state;
	struct op_result results[OPS];
	struct reply_summary summary;
	read_json("{\"nInserted\": 0, \"nMatched\": 3, \"nModified\": 1, \"nUpserted\": 1, "
		  "\"upserted\": [{\"index\": 2, \"_id\": 1}]}",
		  REPLY_UPSERTS, OPS, results, &summary);
	for (int i = 0; i < OPS; i++)
		assert_int_equal(results[i].outcome, OP_WRITTEN);
	/* nInserted is not what upserts are counted by */
	read_json("{\"nInserted\": 4, \"nMatched\": 0}", REPLY_UPSERTS, OPS, results, &summary);
	assert_int_equal(summary.unknown, OPS);
}

static void test_a_write_concern_error_is_said(void **state)
{
	(void)state;
	struct op_result results[OPS];
	struct reply_summary summary;
	read_json("{\"nInserted\": 4, \"writeConcernErrors\": [{\"code\": 64, "
		  "\"errmsg\": \"waiting for replication timed out\"}]}",
		  REPLY_INSERTS, OPS, results, &summary);
	assert_true(summary.write_concern_failed);
	assert_string_equal(summary.write_concern, "waiting for replication timed out (code 64)");
	assert_int_equal(results[3].outcome, OP_WRITTEN); /* applied, not replicated as asked */
}

static void test_an_error_of_an_index_out_of_range_is_not_ours(void **state)
{
	(void)state;
	struct op_result results[OPS];
	struct reply_summary summary;
	read_json("{\"nInserted\": 3, \"writeErrors\": [{\"index\": 9, \"code\": 2}, "
		  "{\"index\": -1, \"code\": 2}]}",
		  REPLY_INSERTS, OPS, results, &summary);
	assert_int_equal(summary.unknown, OPS);
	assert_int_equal(summary.refused, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_that_add_up_mean_every_insert_was_written),
		cmocka_unit_test(test_an_empty_write_errors_array_with_nothing_counted_leaves_all_unknown),
		cmocka_unit_test(test_an_empty_reply_says_nothing_was_written),
		cmocka_unit_test(test_write_errors_name_their_operations_and_the_rest_are_written),
		cmocka_unit_test(test_write_errors_and_too_few_counted_leave_the_others_unknown),
		cmocka_unit_test(test_upserts_count_matched_and_upserted),
		cmocka_unit_test(test_a_write_concern_error_is_said),
		cmocka_unit_test(test_an_error_of_an_index_out_of_range_is_not_ours),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
