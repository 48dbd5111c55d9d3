/*
 * Unit tests for server/http/cond.h: the verdict of If-Match, If-Unmodified-Since,
 * If-None-Match and If-Modified-Since in RFC 9110's order (section 13.2.2),
 * entity-tag list matching (strong and weak comparison), and If-Range.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "http/cond.h"

/* The file's validators in every test. */
#define ETAG "\"2ebc98a1075bcd15-1000\""
#define OTHER_ETAG "\"2ebc98a1075bcd15-1001\""
#define LAST_MODIFIED 784111777 /* Sun, 06 Nov 1994 08:49:37 GMT */
#define DATE_EQUAL "Sun, 06 Nov 1994 08:49:37 GMT"
#define DATE_BEFORE "Sun, 06 Nov 1994 08:49:36 GMT" /* one second before Last-Modified */
#define DATE_AFTER "Sun, 06 Nov 1994 08:49:38 GMT"  /* one second after */
#define DATE_EQUAL_RFC850 "Sunday, 06-Nov-94 08:49:37 GMT"
#define DATE_EQUAL_ASCTIME "Sun Nov  6 08:49:37 1994"
#define DATE_INVALID "yesterday"

static const struct cond_validators validators = {.etag = ETAG, .last_modified = LAST_MODIFIED};

static const char *verdict_name(enum cond_verdict verdict)
{
	switch (verdict) {
	case COND_PROCEED:
		return "COND_PROCEED";
	case COND_NOT_MODIFIED:
		return "COND_NOT_MODIFIED";
	case COND_PRECONDITION_FAILED:
		return "COND_PRECONDITION_FAILED";
	}
	return "(unknown verdict)";
}

static const char *shown(const char *text)
{
	return text ? text : "(absent)";
}

/* Evaluates If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since (NULL: absent). */
static void expect(const char *if_match, const char *if_none_match, const char *if_modified_since,
		   const char *if_unmodified_since, enum cond_verdict expected)
{
	struct cond_request request = {
		.if_match = if_match,
		.if_none_match = if_none_match,
		.if_modified_since = if_modified_since,
		.if_unmodified_since = if_unmodified_since,
	};
	enum cond_verdict got = cond_evaluate(&request, &validators);
	if (got != expected)
		fail_msg("If-Match %s, If-None-Match %s, If-Modified-Since %s, "
			 "If-Unmodified-Since %s: %s, expected %s",
			 shown(if_match), shown(if_none_match), shown(if_modified_since),
			 shown(if_unmodified_since), verdict_name(got), verdict_name(expected));
}

static void expect_list(const char *list, const char *etag, bool strong, bool expected)
{
	if (cond_etag_list_matches(list, etag, strong) != expected)
		fail_msg("cond_etag_list_matches('%s', '%s', %s) should be %s", shown(list),
			 shown(etag), strong ? "strong" : "weak", expected ? "true" : "false");
}

static void expect_if_range(const char *if_range, bool expected)
{
	if (cond_if_range_allows(if_range, &validators) != expected)
		fail_msg("If-Range %s with ETag %s, Last-Modified %s should %s the range",
			 shown(if_range), ETAG, DATE_EQUAL, expected ? "allow" : "refuse");
}

/* No conditions */

static void test_no_conditions_proceed(void **state)
{
	(void)state;
	expect(NULL, NULL, NULL, NULL, COND_PROCEED);
}

/* If-Match (strong comparison) */

static void test_if_match_with_the_etag_proceeds(void **state)
{
	(void)state;
	expect(ETAG, NULL, NULL, NULL, COND_PROCEED);
}

static void test_if_match_with_another_etag_fails(void **state)
{
	(void)state;
	expect(OTHER_ETAG, NULL, NULL, NULL, COND_PRECONDITION_FAILED);
}

static void test_if_match_star_proceeds(void **state)
{
	(void)state;
	expect("*", NULL, NULL, NULL, COND_PROCEED);
}

static void test_if_match_list_holding_the_etag_proceeds(void **state)
{
	(void)state;
	expect(OTHER_ETAG ", " ETAG, NULL, NULL, NULL, COND_PROCEED);
	expect(ETAG "," OTHER_ETAG, NULL, NULL, NULL, COND_PROCEED);
}

static void test_if_match_list_without_the_etag_fails(void **state)
{
	(void)state;
	expect(OTHER_ETAG ", \"x\"", NULL, NULL, NULL, COND_PRECONDITION_FAILED);
}

static void test_if_match_weak_tag_never_matches(void **state)
{
	(void)state;
	expect("W/" ETAG, NULL, NULL, NULL, COND_PRECONDITION_FAILED);
	expect("W/" ETAG ", " OTHER_ETAG, NULL, NULL, NULL, COND_PRECONDITION_FAILED);
}

static void test_if_match_malformed_fails(void **state)
{
	(void)state;
	expect("2ebc98a1075bcd15-1000", NULL, NULL, NULL, COND_PRECONDITION_FAILED);
	expect("", NULL, NULL, NULL, COND_PRECONDITION_FAILED);
	expect("\"unterminated", NULL, NULL, NULL, COND_PRECONDITION_FAILED);
}

/* If-Unmodified-Since */

static void test_if_unmodified_since_before_last_modified_fails(void **state)
{
	(void)state;
	expect(NULL, NULL, NULL, DATE_BEFORE, COND_PRECONDITION_FAILED);
	expect(NULL, NULL, NULL, "Thu, 01 Jan 1970 00:00:00 GMT", COND_PRECONDITION_FAILED);
}

static void test_if_unmodified_since_equal_proceeds(void **state)
{
	(void)state;
	expect(NULL, NULL, NULL, DATE_EQUAL, COND_PROCEED);
	expect(NULL, NULL, NULL, DATE_EQUAL_RFC850, COND_PROCEED);
	expect(NULL, NULL, NULL, DATE_EQUAL_ASCTIME, COND_PROCEED);
}

static void test_if_unmodified_since_after_proceeds(void **state)
{
	(void)state;
	expect(NULL, NULL, NULL, DATE_AFTER, COND_PROCEED);
}

/* nginx answers 412 to an invalid If-Unmodified-Since; RFC 9110 says ignore it. */
static void test_if_unmodified_since_invalid_is_ignored(void **state)
{
	(void)state;
	expect(NULL, NULL, NULL, DATE_INVALID, COND_PROCEED);
	expect(NULL, NULL, NULL, "", COND_PROCEED);
	expect(NULL, NULL, NULL, "Sun, 06 Nov 1994 08:49:37", COND_PROCEED);
	expect(NULL, NULL, NULL, "784111777", COND_PROCEED);
}

static void test_if_match_wins_over_if_unmodified_since(void **state)
{
	(void)state;
	/* If-Match present: If-Unmodified-Since is not evaluated at all */
	expect(ETAG, NULL, NULL, DATE_BEFORE, COND_PROCEED);
	expect("*", NULL, NULL, DATE_BEFORE, COND_PROCEED);
	expect(OTHER_ETAG, NULL, NULL, DATE_AFTER, COND_PRECONDITION_FAILED);
}

/* If-None-Match (weak comparison) */

static void test_if_none_match_with_the_etag_is_not_modified(void **state)
{
	(void)state;
	expect(NULL, ETAG, NULL, NULL, COND_NOT_MODIFIED);
}

static void test_if_none_match_weak_form_is_not_modified(void **state)
{
	(void)state;
	expect(NULL, "W/" ETAG, NULL, NULL, COND_NOT_MODIFIED);
}

static void test_if_none_match_with_another_etag_proceeds(void **state)
{
	(void)state;
	expect(NULL, OTHER_ETAG, NULL, NULL, COND_PROCEED);
	expect(NULL, "W/" OTHER_ETAG, NULL, NULL, COND_PROCEED);
}

static void test_if_none_match_star_is_not_modified(void **state)
{
	(void)state;
	expect(NULL, "*", NULL, NULL, COND_NOT_MODIFIED);
}

static void test_if_none_match_list_holding_the_etag_is_not_modified(void **state)
{
	(void)state;
	expect(NULL, OTHER_ETAG ", " ETAG, NULL, NULL, COND_NOT_MODIFIED);
	expect(NULL, "\"a\",\"b\"," ETAG, NULL, NULL, COND_NOT_MODIFIED);
	expect(NULL, "\"a\" ,\t W/" ETAG " , \"b\"", NULL, NULL, COND_NOT_MODIFIED);
}

static void test_if_none_match_malformed_list_proceeds(void **state)
{
	(void)state;
	expect(NULL, "2ebc98a1075bcd15-1000", NULL, NULL, COND_PROCEED);
	expect(NULL, "garbage, " ETAG, NULL, NULL, COND_PROCEED);
	expect(NULL, ETAG "x", NULL, NULL, COND_PROCEED);
	expect(NULL, "", NULL, NULL, COND_PROCEED);
}

/* If-Modified-Since */

static void test_if_modified_since_equal_is_not_modified(void **state)
{
	(void)state;
	expect(NULL, NULL, DATE_EQUAL, NULL, COND_NOT_MODIFIED);
	expect(NULL, NULL, DATE_EQUAL_RFC850, NULL, COND_NOT_MODIFIED);
	expect(NULL, NULL, DATE_EQUAL_ASCTIME, NULL, COND_NOT_MODIFIED);
}

static void test_if_modified_since_after_is_not_modified(void **state)
{
	(void)state;
	expect(NULL, NULL, DATE_AFTER, NULL, COND_NOT_MODIFIED);
}

static void test_if_modified_since_before_proceeds(void **state)
{
	(void)state;
	expect(NULL, NULL, DATE_BEFORE, NULL, COND_PROCEED);
}

static void test_if_modified_since_invalid_is_ignored(void **state)
{
	(void)state;
	expect(NULL, NULL, DATE_INVALID, NULL, COND_PROCEED);
	expect(NULL, NULL, "", NULL, COND_PROCEED);
	expect(NULL, NULL, "Sun, 06 Nov 1994 08:49:37 GMT garbage", NULL, COND_PROCEED);
}

static void test_if_none_match_wins_over_if_modified_since(void **state)
{
	(void)state;
	/* If-None-Match present: If-Modified-Since is not evaluated at all */
	expect(NULL, OTHER_ETAG, DATE_AFTER, NULL, COND_PROCEED);
	expect(NULL, OTHER_ETAG, DATE_EQUAL, NULL, COND_PROCEED);
	expect(NULL, ETAG, DATE_BEFORE, NULL, COND_NOT_MODIFIED);
	expect(NULL, "*", DATE_BEFORE, NULL, COND_NOT_MODIFIED);
	expect(NULL, ETAG, DATE_INVALID, NULL, COND_NOT_MODIFIED);
}

/* 412 before 304 */

static void test_failed_if_match_wins_over_if_none_match(void **state)
{
	(void)state;
	expect(OTHER_ETAG, ETAG, NULL, NULL, COND_PRECONDITION_FAILED);
	expect(OTHER_ETAG, "*", NULL, NULL, COND_PRECONDITION_FAILED);
}

static void test_failed_if_unmodified_since_wins_over_if_modified_since(void **state)
{
	(void)state;
	expect(NULL, NULL, DATE_AFTER, DATE_BEFORE, COND_PRECONDITION_FAILED);
	expect(NULL, ETAG, NULL, DATE_BEFORE, COND_PRECONDITION_FAILED);
}

static void test_passed_preconditions_let_if_none_match_decide(void **state)
{
	(void)state;
	expect(ETAG, ETAG, NULL, NULL, COND_NOT_MODIFIED);
	expect("*", "*", NULL, NULL, COND_NOT_MODIFIED);
	expect(NULL, NULL, DATE_EQUAL, DATE_EQUAL, COND_NOT_MODIFIED);
	expect(ETAG, OTHER_ETAG, DATE_AFTER, DATE_BEFORE, COND_PROCEED);
}

static void test_all_four_matching_is_not_modified(void **state)
{
	(void)state;
	expect(ETAG, ETAG, DATE_AFTER, DATE_AFTER, COND_NOT_MODIFIED);
}

/* cond_etag_list_matches */

static void test_list_single_tag(void **state)
{
	(void)state;
	expect_list("\"a\"", "\"a\"", true, true);
	expect_list("\"a\"", "\"a\"", false, true);
	expect_list("\"a\"", "\"b\"", true, false);
	expect_list("\"a\"", "\"ab\"", false, false);
	expect_list("\"ab\"", "\"a\"", false, false);
}

static void test_list_star(void **state)
{
	(void)state;
	expect_list("*", "\"a\"", true, true);
	expect_list("*", "\"a\"", false, true);
	expect_list(" * ", "\"a\"", true, true);
}

static void test_list_star_among_tags_is_malformed(void **state)
{
	(void)state;
	expect_list("*, \"a\"", "\"a\"", false, false);
	expect_list("\"a\", *", "\"b\"", false, false);
	expect_list("**", "\"a\"", false, false);
}

static void test_list_with_spaces_tabs_and_commas(void **state)
{
	(void)state;
	expect_list("\"x\",\"a\"", "\"a\"", true, true);
	expect_list("\"x\" , \"a\"", "\"a\"", true, true);
	expect_list("\"x\",\t\"a\"", "\"a\"", true, true);
	expect_list(" , \"x\", ,\"a\" ,", "\"a\"", true, true);
	expect_list("\"x\", \"y\", \"z\"", "\"a\"", true, false);
}

static void test_list_opaque_tag_may_hold_a_comma(void **state)
{
	(void)state;
	expect_list("\"a,b\"", "\"a,b\"", true, true);
	expect_list("\"x\", \"a,b\"", "\"a,b\"", true, true);
	expect_list("\"a,b\"", "\"a\"", true, false);
	expect_list("\"a,b\"", "\"b\"", true, false);
}

static void test_list_strong_comparison_ignores_weak_tags(void **state)
{
	(void)state;
	expect_list("W/\"a\"", "\"a\"", true, false);
	expect_list("\"a\"", "W/\"a\"", true, false);
	expect_list("W/\"a\"", "W/\"a\"", true, false);
	expect_list("W/\"a\", \"a\"", "\"a\"", true, true);
}

static void test_list_weak_comparison_ignores_w_prefix(void **state)
{
	(void)state;
	expect_list("W/\"a\"", "\"a\"", false, true);
	expect_list("\"a\"", "W/\"a\"", false, true);
	expect_list("W/\"a\"", "W/\"a\"", false, true);
	expect_list("W/\"b\"", "\"a\"", false, false);
}

static void test_list_malformed_matches_nothing(void **state)
{
	(void)state;
	expect_list("a", "\"a\"", false, false);
	expect_list("\"a", "\"a\"", false, false);
	expect_list("\"a\"x", "\"a\"", false, false);
	expect_list("w/\"a\"", "\"a\"", false, false);
	expect_list("W/a", "\"a\"", false, false);
	expect_list("W/", "\"a\"", false, false);
	expect_list("\"a\", b", "\"a\"", false, false);
	expect_list("b, \"a\"", "\"a\"", false, false);
	expect_list("\"a\";q=1", "\"a\"", false, false);
}

static void test_list_empty_matches_nothing(void **state)
{
	(void)state;
	expect_list("", "\"a\"", false, false);
	expect_list(" , ,", "\"a\"", false, false);
	expect_list("\"\"", "\"a\"", false, false);
}

static void test_list_absent_matches_nothing(void **state)
{
	(void)state;
	expect_list(NULL, "\"a\"", false, false);
	expect_list(NULL, "\"a\"", true, false);
}

static void test_list_is_case_sensitive(void **state)
{
	(void)state;
	expect_list("\"ABC\"", "\"abc\"", false, false);
}

static void test_list_of_thousands_of_tags(void **state)
{
	(void)state;
	const int tags = 5000;
	size_t length = (size_t)tags * 12 + 32;
	char *list = malloc(length);
	assert_non_null(list);
	size_t used = 0;
	for (int i = 0; i < tags; i++)
		used += (size_t)snprintf(list + used, length - used, "%s\"t%d\"", i ? ", " : "",
					 i);
	expect_list(list, "\"t4999\"", true, true);
	expect_list(list, "\"t5000\"", true, false);
	free(list);
}

/* cond_if_range_allows */

static void test_if_range_absent_allows(void **state)
{
	(void)state;
	expect_if_range(NULL, true);
}

static void test_if_range_same_strong_etag_allows(void **state)
{
	(void)state;
	expect_if_range(ETAG, true);
}

static void test_if_range_weak_etag_refuses(void **state)
{
	(void)state;
	expect_if_range("W/" ETAG, false);
}

static void test_if_range_other_etag_refuses(void **state)
{
	(void)state;
	expect_if_range(OTHER_ETAG, false);
	expect_if_range("\"\"", false);
}

static void test_if_range_takes_one_etag_not_a_list(void **state)
{
	(void)state;
	expect_if_range(OTHER_ETAG ", " ETAG, false);
	expect_if_range(ETAG ", " ETAG, false);
	expect_if_range("*", false);
}

static void test_if_range_equal_date_allows(void **state)
{
	(void)state;
	expect_if_range(DATE_EQUAL, true);
	expect_if_range(DATE_EQUAL_RFC850, true);
	expect_if_range(DATE_EQUAL_ASCTIME, true);
}

static void test_if_range_other_date_refuses(void **state)
{
	(void)state;
	expect_if_range(DATE_BEFORE, false);
	expect_if_range(DATE_AFTER, false); /* only an exact match: RFC 9110 section 13.1.5 */
}

static void test_if_range_garbage_refuses(void **state)
{
	(void)state;
	expect_if_range(DATE_INVALID, false);
	expect_if_range("", false);
	expect_if_range("\"", false);
	expect_if_range("2ebc98a1075bcd15-1000", false);
	expect_if_range("784111777", false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_conditions_proceed),
		cmocka_unit_test(test_if_match_with_the_etag_proceeds),
		cmocka_unit_test(test_if_match_with_another_etag_fails),
		cmocka_unit_test(test_if_match_star_proceeds),
		cmocka_unit_test(test_if_match_list_holding_the_etag_proceeds),
		cmocka_unit_test(test_if_match_list_without_the_etag_fails),
		cmocka_unit_test(test_if_match_weak_tag_never_matches),
		cmocka_unit_test(test_if_match_malformed_fails),
		cmocka_unit_test(test_if_unmodified_since_before_last_modified_fails),
		cmocka_unit_test(test_if_unmodified_since_equal_proceeds),
		cmocka_unit_test(test_if_unmodified_since_after_proceeds),
		cmocka_unit_test(test_if_unmodified_since_invalid_is_ignored),
		cmocka_unit_test(test_if_match_wins_over_if_unmodified_since),
		cmocka_unit_test(test_if_none_match_with_the_etag_is_not_modified),
		cmocka_unit_test(test_if_none_match_weak_form_is_not_modified),
		cmocka_unit_test(test_if_none_match_with_another_etag_proceeds),
		cmocka_unit_test(test_if_none_match_star_is_not_modified),
		cmocka_unit_test(test_if_none_match_list_holding_the_etag_is_not_modified),
		cmocka_unit_test(test_if_none_match_malformed_list_proceeds),
		cmocka_unit_test(test_if_modified_since_equal_is_not_modified),
		cmocka_unit_test(test_if_modified_since_after_is_not_modified),
		cmocka_unit_test(test_if_modified_since_before_proceeds),
		cmocka_unit_test(test_if_modified_since_invalid_is_ignored),
		cmocka_unit_test(test_if_none_match_wins_over_if_modified_since),
		cmocka_unit_test(test_failed_if_match_wins_over_if_none_match),
		cmocka_unit_test(test_failed_if_unmodified_since_wins_over_if_modified_since),
		cmocka_unit_test(test_passed_preconditions_let_if_none_match_decide),
		cmocka_unit_test(test_all_four_matching_is_not_modified),
		cmocka_unit_test(test_list_single_tag),
		cmocka_unit_test(test_list_star),
		cmocka_unit_test(test_list_star_among_tags_is_malformed),
		cmocka_unit_test(test_list_with_spaces_tabs_and_commas),
		cmocka_unit_test(test_list_opaque_tag_may_hold_a_comma),
		cmocka_unit_test(test_list_strong_comparison_ignores_weak_tags),
		cmocka_unit_test(test_list_weak_comparison_ignores_w_prefix),
		cmocka_unit_test(test_list_malformed_matches_nothing),
		cmocka_unit_test(test_list_empty_matches_nothing),
		cmocka_unit_test(test_list_absent_matches_nothing),
		cmocka_unit_test(test_list_is_case_sensitive),
		cmocka_unit_test(test_list_of_thousands_of_tags),
		cmocka_unit_test(test_if_range_absent_allows),
		cmocka_unit_test(test_if_range_same_strong_etag_allows),
		cmocka_unit_test(test_if_range_weak_etag_refuses),
		cmocka_unit_test(test_if_range_other_etag_refuses),
		cmocka_unit_test(test_if_range_takes_one_etag_not_a_list),
		cmocka_unit_test(test_if_range_equal_date_allows),
		cmocka_unit_test(test_if_range_other_date_refuses),
		cmocka_unit_test(test_if_range_garbage_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
