/*
 * Unit tests for server/http/route.h: route_parse classifies a request target as a
 * track (/musicdb/<ObjectId>/<param>, mid lower-cased, :param kept as sent), a
 * bad id, the health probe, the scrape or not found, whatever the query and
 * fragment; the query's parameters (?download, route_query_find); route_check_method
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

/* route_parse: the scrape */

static void test_metrics_is_the_scrape_with_any_query(void **state)
{
	(void)state;
	assert_kind("/metrics", ROUTE_METRICS);
	assert_kind("/metrics?name[]=up", ROUTE_METRICS);
	assert_kind("/metrics/", ROUTE_NOT_FOUND);
	assert_kind("/metricsx", ROUTE_NOT_FOUND);
	assert_kind("/Metrics", ROUTE_NOT_FOUND);
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

/* route_parse: the query's parameters */

#define TRACK(param) "/musicdb/" ID "/" param

static bool asks_download(const char *target)
{
	return route_parse(target).download;
}

static void test_download_parameter_with_any_value_or_none(void **state)
{
	(void)state;
	assert_true(asks_download(TRACK("a.mp3?download")));
	assert_true(asks_download(TRACK("a.mp3?download=")));
	assert_true(asks_download(TRACK("a.mp3?download=1")));
	assert_true(asks_download(TRACK("a.mp3?download=no")));
	assert_true(asks_download(TRACK("a.mp3?x=1&download")));
	assert_true(asks_download(TRACK("a.mp3?x=1&download&y=2")));
	assert_true(asks_download(TRACK("a.mp3?&download")));
}

static void test_no_download_parameter_no_attachment(void **state)
{
	(void)state;
	assert_false(asks_download(TRACK("a.mp3")));
	assert_false(asks_download(TRACK("a.mp3?")));
	assert_false(asks_download(TRACK("download")));
	assert_false(asks_download(TRACK("a.mp3?downloads")));
	assert_false(asks_download(TRACK("a.mp3?x=download")));
	assert_false(asks_download(TRACK("a.mp3?xdownload=1")));
	assert_false(asks_download(TRACK("a.mp3?Download")));
	assert_false(asks_download(TRACK("a.mp3?%64ownload")));
	assert_false(asks_download(TRACK("a.mp3#download")));
	assert_false(asks_download(TRACK("a.mp3?x#download")));
}

static void test_a_track_keeps_its_param_as_sent(void **state)
{
	(void)state;
	struct route route = route_parse(TRACK("a%20b.mp3?download#x"));
	assert_int_equal(route.kind, ROUTE_TRACK);
	assert_int_equal(route.param_length, strlen("a%20b.mp3"));
	assert_memory_equal(route.param, "a%20b.mp3", route.param_length);
	route = route_parse("/musicdb/not-an-id/song.mp3");
	assert_int_equal(route.kind, ROUTE_BAD_ID);
	assert_memory_equal(route.param, "song.mp3", route.param_length);
	assert_null(route_parse("/other/x").param);
}

static void test_the_query_ends_at_a_fragment(void **state)
{
	(void)state;
	struct route route = route_parse(TRACK("a.mp3?x=1&y#z"));
	assert_int_equal(route.query_length, strlen("x=1&y"));
	assert_memory_equal(route.query, "x=1&y", route.query_length);
	assert_int_equal(route.path_length, strlen(TRACK("a.mp3")));
	assert_null(route_parse(TRACK("a.mp3#x?y")).query);
	route = route_parse(TRACK("a.mp3?"));
	assert_non_null(route.query);
	assert_int_equal(route.query_length, 0);
}

/* What route_query_find says of name in target's query: its presence, and the value when once. */
static void assert_parameter(const char *target, const char *name, enum query_presence presence,
			     const char *value)
{
	struct route route = route_parse(target);
	struct query_parameter found = route_query_find(&route, name);
	if (found.presence != presence)
		fail_msg("%s in \"%s\": presence %d, expected %d", name, target, found.presence,
			 presence);
	if (presence == QUERY_ONCE) {
		assert_int_equal(found.length, strlen(value));
		assert_memory_equal(found.value, value, found.length);
	}
}

static void test_a_parameter_is_found_with_its_value_as_sent(void **state)
{
	(void)state;
	assert_parameter(TRACK("a?t=abc"), "t", QUERY_ONCE, "abc");
	assert_parameter(TRACK("a?x=1&t=a%20b~c&y"), "t", QUERY_ONCE, "a%20b~c");
	assert_parameter(TRACK("a?t=a=b"), "t", QUERY_ONCE, "a=b");
	assert_parameter(TRACK("a?t"), "t", QUERY_ONCE, "");
	assert_parameter(TRACK("a?t="), "t", QUERY_ONCE, "");
	assert_parameter(TRACK("a?t=1#t=2"), "t", QUERY_ONCE, "1");
}

static void test_a_parameter_named_otherwise_or_twice(void **state)
{
	(void)state;
	assert_parameter(TRACK("a"), "t", QUERY_ABSENT, NULL);
	assert_parameter(TRACK("a?"), "t", QUERY_ABSENT, NULL);
	assert_parameter(TRACK("a?tt=1&T=1&x=t"), "t", QUERY_ABSENT, NULL);
	assert_parameter(TRACK("a?%74=1"), "t", QUERY_ABSENT, NULL);
	assert_parameter(TRACK("a#?t=1"), "t", QUERY_ABSENT, NULL);
	assert_parameter(TRACK("a?t=1&t=1"), "t", QUERY_TWICE, NULL);
	assert_parameter(TRACK("a?t&x&t="), "t", QUERY_TWICE, NULL);
	assert_parameter("/healthz?t=1", "t", QUERY_ONCE, "1");
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
		cmocka_unit_test(test_metrics_is_the_scrape_with_any_query),
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
		cmocka_unit_test(test_download_parameter_with_any_value_or_none),
		cmocka_unit_test(test_no_download_parameter_no_attachment),
		cmocka_unit_test(test_a_track_keeps_its_param_as_sent),
		cmocka_unit_test(test_the_query_ends_at_a_fragment),
		cmocka_unit_test(test_a_parameter_is_found_with_its_value_as_sent),
		cmocka_unit_test(test_a_parameter_named_otherwise_or_twice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
