/*
 * Unit tests for server/http/route.h: route_parse classifies a request target as a
 * track (/musicdb/<ObjectId>/<param>, mid lower-cased), a bad id, the health
 * probe or not found, ignoring the query and fragment; route_check_method
 * allows GET and HEAD only; objectid_is_valid accepts exactly 24 hexadecimal
 * digits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http/route.h"

#define ID "507f1f77bcf86cd799439011"

static void assert_kind(const char *target, enum route_kind expected)
{
	struct route route = route_parse(target);
	if (route.kind != expected)
		fail_msg("route_parse(\"%s\"): kind %d, expected %d", target ? target : "(null)",
			 route.kind, expected);
}

static void assert_track(const char *target, const char *expected_mid)
{
	struct route route = route_parse(target);
	if (route.kind != ROUTE_TRACK)
		fail_msg("route_parse(\"%s\"): kind %d, expected ROUTE_TRACK", target, route.kind);
	assert_string_equal(route.mid, expected_mid);
}

/* route_parse: tracks */

static void test_track_target_gives_its_mid(void **state)
{
	(void)state;
	assert_track("/musicdb/" ID "/song.mp3", ID);
}

static void test_track_mid_is_lower_cased(void **state)
{
	(void)state;
	assert_track("/musicdb/507F1F77BCF86CD799439011/song.mp3", ID);
	assert_track("/musicdb/507f1F77bCF86cD799439011/x", ID);
}

static void test_track_param_may_be_any_single_segment(void **state)
{
	(void)state;
	assert_track("/musicdb/" ID "/x", ID);
	assert_track("/musicdb/" ID "/a%2Fb.mp3", ID);
	assert_track("/musicdb/" ID "/..", ID);
}

static void test_track_query_string_is_ignored(void **state)
{
	(void)state;
	assert_track("/musicdb/" ID "/song.mp3?start=10", ID);
	assert_track("/musicdb/" ID "/song.mp3?a=/b/c", ID);
	assert_track("/musicdb/" ID "/song.mp3?", ID);
}

static void test_track_fragment_is_ignored(void **state)
{
	(void)state;
	assert_track("/musicdb/" ID "/song.mp3#t=10", ID);
	assert_track("/musicdb/" ID "/song.mp3#/x/y", ID);
}

/* route_parse: bad ids */

static void test_non_objectid_mid_with_a_param_is_a_bad_id(void **state)
{
	(void)state;
	assert_kind("/musicdb/not-an-id/song.mp3", ROUTE_BAD_ID);
	assert_kind("/musicdb/507f1f77bcf86cd79943901g/song.mp3", ROUTE_BAD_ID);
}

static void test_mid_of_wrong_length_is_a_bad_id(void **state)
{
	(void)state;
	assert_kind("/musicdb/507f1f77bcf86cd79943901/song.mp3", ROUTE_BAD_ID);
	assert_kind("/musicdb/507f1f77bcf86cd7994390112/song.mp3", ROUTE_BAD_ID);
}

static void test_bad_id_with_a_query_is_still_a_bad_id(void **state)
{
	(void)state;
	assert_kind("/musicdb/xyz/song.mp3?a=b", ROUTE_BAD_ID);
}

/* route_parse: not found */

static void test_musicdb_without_mid_is_not_found(void **state)
{
	(void)state;
	assert_kind("/musicdb", ROUTE_NOT_FOUND);
	assert_kind("/musicdb/", ROUTE_NOT_FOUND);
}

static void test_mid_without_param_is_not_found(void **state)
{
	(void)state;
	assert_kind("/musicdb/" ID, ROUTE_NOT_FOUND);
	assert_kind("/musicdb/" ID "/", ROUTE_NOT_FOUND);
	assert_kind("/musicdb/" ID "/?x=1", ROUTE_NOT_FOUND);
}

static void test_param_with_two_segments_is_not_found(void **state)
{
	(void)state;
	assert_kind("/musicdb/" ID "/a/b", ROUTE_NOT_FOUND);
	assert_kind("/musicdb/" ID "/a/", ROUTE_NOT_FOUND);
}

static void test_other_paths_are_not_found(void **state)
{
	(void)state;
	assert_kind("/other", ROUTE_NOT_FOUND);
	assert_kind("/", ROUTE_NOT_FOUND);
	assert_kind("/musicdbx/" ID "/song.mp3", ROUTE_NOT_FOUND);
	assert_kind("/MUSICDB/" ID "/song.mp3", ROUTE_NOT_FOUND);
}

static void test_empty_target_is_not_found(void **state)
{
	(void)state;
	assert_kind("", ROUTE_NOT_FOUND);
}

static void test_null_target_is_not_found(void **state)
{
	(void)state;
	assert_kind(NULL, ROUTE_NOT_FOUND);
}

static void test_double_leading_slash_is_not_found(void **state)
{
	(void)state;
	assert_kind("//musicdb/" ID "/song.mp3", ROUTE_NOT_FOUND);
}

static void test_track_prefix_only_in_the_query_is_not_found(void **state)
{
	(void)state;
	assert_kind("/x?/musicdb/" ID "/song.mp3", ROUTE_NOT_FOUND);
}

/* route_parse: health probe */

static void test_healthz_is_the_health_probe(void **state)
{
	(void)state;
	assert_kind("/healthz", ROUTE_HEALTHZ);
}

static void test_healthz_with_a_query_is_the_health_probe(void **state)
{
	(void)state;
	assert_kind("/healthz?x", ROUTE_HEALTHZ);
	assert_kind("/healthz?verbose=1", ROUTE_HEALTHZ);
}

static void test_healthz_with_a_trailing_slash_is_not_found(void **state)
{
	(void)state;
	assert_kind("/healthz/", ROUTE_NOT_FOUND);
}

static void test_healthz_look_alikes_are_not_found(void **state)
{
	(void)state;
	assert_kind("/healthzz", ROUTE_NOT_FOUND);
	assert_kind("/health", ROUTE_NOT_FOUND);
	assert_kind("/HEALTHZ", ROUTE_NOT_FOUND);
}

/* route_check_method */

static void test_get_and_head_are_allowed(void **state)
{
	(void)state;
	assert_int_equal(route_check_method("GET"), ROUTE_METHOD_OK);
	assert_int_equal(route_check_method("HEAD"), ROUTE_METHOD_OK);
}

static void test_other_methods_are_not_allowed(void **state)
{
	(void)state;
	const char *const methods[] = {"POST",	  "PUT",   "DELETE", "PATCH",
				       "OPTIONS", "TRACE", "CONNECT"};
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		assert_int_equal(route_check_method(methods[i]), ROUTE_METHOD_NOT_ALLOWED);
}

static void test_methods_are_case_sensitive(void **state)
{
	(void)state;
	assert_int_equal(route_check_method("get"), ROUTE_METHOD_NOT_ALLOWED);
	assert_int_equal(route_check_method("Head"), ROUTE_METHOD_NOT_ALLOWED);
}

static void test_method_prefixes_and_extensions_are_not_allowed(void **state)
{
	(void)state;
	assert_int_equal(route_check_method("GE"), ROUTE_METHOD_NOT_ALLOWED);
	assert_int_equal(route_check_method("GETS"), ROUTE_METHOD_NOT_ALLOWED);
	assert_int_equal(route_check_method("HEAD "), ROUTE_METHOD_NOT_ALLOWED);
}

static void test_empty_and_null_methods_are_not_allowed(void **state)
{
	(void)state;
	assert_int_equal(route_check_method(""), ROUTE_METHOD_NOT_ALLOWED);
	assert_int_equal(route_check_method(NULL), ROUTE_METHOD_NOT_ALLOWED);
}

static void test_allow_header_lists_get_and_head(void **state)
{
	(void)state;
	assert_string_equal(ROUTE_ALLOWED_METHODS, "GET, HEAD");
}

/* objectid_is_valid: exactly 24 hexadecimal digits of either case in text[0..length) */

#define VALID_ID "507f1f77bcf86cd799439011"

static bool is_valid(const char *text)
{
	return objectid_is_valid(text, strlen(text));
}

static void test_objectid_accepts_24_lower_case_hex_digits(void **state)
{
	(void)state;
	assert_true(is_valid(VALID_ID));
}

static void test_objectid_accepts_24_upper_case_hex_digits(void **state)
{
	(void)state;
	assert_true(is_valid("507F1F77BCF86CD799439011"));
}

static void test_objectid_accepts_mixed_case_hex_digits(void **state)
{
	(void)state;
	assert_true(is_valid("aBcDeF0123456789AbCdEf01"));
}

static void test_objectid_accepts_every_hex_digit(void **state)
{
	(void)state;
	assert_true(is_valid("0123456789abcdefABCDEF00"));
}

static void test_objectid_rejects_23_digits(void **state)
{
	(void)state;
	assert_false(is_valid("507f1f77bcf86cd79943901"));
}

static void test_objectid_rejects_25_digits(void **state)
{
	(void)state;
	assert_false(is_valid("507f1f77bcf86cd7994390112"));
}

static void test_objectid_rejects_empty_text(void **state)
{
	(void)state;
	assert_false(objectid_is_valid("", 0));
}

static void test_objectid_looks_only_at_the_first_length_characters(void **state)
{
	(void)state;
	assert_true(objectid_is_valid(VALID_ID "/track.mp3", OBJECTID_HEX_LENGTH));
}

static void test_objectid_rejects_a_non_hex_letter(void **state)
{
	(void)state;
	assert_false(is_valid("507f1f77bcf86cd79943901g"));
	assert_false(is_valid("G07f1f77bcf86cd799439011"));
}

static void test_objectid_rejects_punctuation_and_spaces(void **state)
{
	(void)state;
	assert_false(is_valid("507f1f77-bcf86cd79943901"));
	assert_false(is_valid(" 507f1f77bcf86cd79943901"));
	assert_false(is_valid("507f1f77bcf86cd79943901 "));
	assert_false(is_valid("507f1f77bcf86cd7994390x1"));
}

static void test_objectid_rejects_a_byte_above_ascii(void **state)
{
	(void)state;
	assert_false(is_valid("507f1f77bcf86cd79943901\xff"));
}

static void test_objectid_rejects_an_embedded_nul(void **state)
{
	(void)state;
	const char text[] = "507f1f77bcf86cd7\0" "9943901";
	assert_int_equal(sizeof(text) - 1, OBJECTID_HEX_LENGTH);
	assert_false(objectid_is_valid(text, sizeof(text) - 1));
}

static void test_objectid_rejects_null(void **state)
{
	(void)state;
	assert_false(objectid_is_valid(NULL, OBJECTID_HEX_LENGTH));
	assert_false(objectid_is_valid(NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_track_target_gives_its_mid),
		cmocka_unit_test(test_track_mid_is_lower_cased),
		cmocka_unit_test(test_track_param_may_be_any_single_segment),
		cmocka_unit_test(test_track_query_string_is_ignored),
		cmocka_unit_test(test_track_fragment_is_ignored),
		cmocka_unit_test(test_non_objectid_mid_with_a_param_is_a_bad_id),
		cmocka_unit_test(test_mid_of_wrong_length_is_a_bad_id),
		cmocka_unit_test(test_bad_id_with_a_query_is_still_a_bad_id),
		cmocka_unit_test(test_musicdb_without_mid_is_not_found),
		cmocka_unit_test(test_mid_without_param_is_not_found),
		cmocka_unit_test(test_param_with_two_segments_is_not_found),
		cmocka_unit_test(test_other_paths_are_not_found),
		cmocka_unit_test(test_empty_target_is_not_found),
		cmocka_unit_test(test_null_target_is_not_found),
		cmocka_unit_test(test_double_leading_slash_is_not_found),
		cmocka_unit_test(test_track_prefix_only_in_the_query_is_not_found),
		cmocka_unit_test(test_healthz_is_the_health_probe),
		cmocka_unit_test(test_healthz_with_a_query_is_the_health_probe),
		cmocka_unit_test(test_healthz_with_a_trailing_slash_is_not_found),
		cmocka_unit_test(test_healthz_look_alikes_are_not_found),
		cmocka_unit_test(test_get_and_head_are_allowed),
		cmocka_unit_test(test_other_methods_are_not_allowed),
		cmocka_unit_test(test_methods_are_case_sensitive),
		cmocka_unit_test(test_method_prefixes_and_extensions_are_not_allowed),
		cmocka_unit_test(test_empty_and_null_methods_are_not_allowed),
		cmocka_unit_test(test_allow_header_lists_get_and_head),
		cmocka_unit_test(test_objectid_accepts_24_lower_case_hex_digits),
		cmocka_unit_test(test_objectid_accepts_24_upper_case_hex_digits),
		cmocka_unit_test(test_objectid_accepts_mixed_case_hex_digits),
		cmocka_unit_test(test_objectid_accepts_every_hex_digit),
		cmocka_unit_test(test_objectid_rejects_23_digits),
		cmocka_unit_test(test_objectid_rejects_25_digits),
		cmocka_unit_test(test_objectid_rejects_empty_text),
		cmocka_unit_test(test_objectid_looks_only_at_the_first_length_characters),
		cmocka_unit_test(test_objectid_rejects_a_non_hex_letter),
		cmocka_unit_test(test_objectid_rejects_punctuation_and_spaces),
		cmocka_unit_test(test_objectid_rejects_a_byte_above_ascii),
		cmocka_unit_test(test_objectid_rejects_an_embedded_nul),
		cmocka_unit_test(test_objectid_rejects_null),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
