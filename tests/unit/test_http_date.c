/*
 * Unit tests for server/http/http_date.h: the IMF-fixdate formatter, and the
 * parser for the three HTTP-date forms of RFC 9110 section 5.6.7
 * (IMF-fixdate, RFC 850, asctime).
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

#include "http/http_date.h"

/* RFC 9110's example instant: Sun, 06 Nov 1994 08:49:37 GMT. */
#define EXAMPLE_TIME 784111777
/* The last second an IMF-fixdate's four-digit year can carry. */
#define LAST_SECOND_OF_9999 253402300799LL

static void assert_date_formats_as(time_t t, const char *expected)
{
	/* Exactly HTTP_DATE_MAX bytes on the heap, so ASan sees any overrun. */
	char *out = malloc(HTTP_DATE_MAX);
	assert_non_null(out);
	http_date_format(out, t);
	assert_string_equal(out, expected);
	free(out);
}

static void assert_date_parses_to(const char *text, time_t expected)
{
	time_t parsed = -12345;
	if (http_date_parse(text, &parsed) != 0)
		fail_msg("http_date_parse(\"%s\") failed, expected %lld", text,
			 (long long)expected);
	if (parsed != expected)
		fail_msg("http_date_parse(\"%s\") gave %lld, expected %lld", text,
			 (long long)parsed, (long long)expected);
}

static void assert_date_rejected(const char *text)
{
	time_t parsed = 0;
	if (http_date_parse(text, &parsed) != -1)
		fail_msg("http_date_parse(\"%s\") accepted it as %lld", text ? text : "(null)",
			 (long long)parsed);
}

/* http_date_format */

static void test_date_formats_the_rfc_example(void **state)
{
	(void)state;
	assert_date_formats_as(EXAMPLE_TIME, "Sun, 06 Nov 1994 08:49:37 GMT");
}

static void test_date_formats_the_epoch(void **state)
{
	(void)state;
	assert_date_formats_as(0, "Thu, 01 Jan 1970 00:00:00 GMT");
}

static void test_date_formats_a_leap_day(void **state)
{
	(void)state;
	assert_date_formats_as(951782400, "Tue, 29 Feb 2000 00:00:00 GMT");
}

static void test_date_formats_past_2038(void **state)
{
	(void)state;
	assert_date_formats_as(2147483648LL, "Tue, 19 Jan 2038 03:14:08 GMT");
	assert_date_formats_as(4102444800LL, "Fri, 01 Jan 2100 00:00:00 GMT");
}

static void test_date_formats_the_last_second_of_9999(void **state)
{
	(void)state;
	assert_date_formats_as(LAST_SECOND_OF_9999, "Fri, 31 Dec 9999 23:59:59 GMT");
}

static void test_date_outside_years_0_to_9999_still_fits_the_buffer(void **state)
{
	(void)state;
	/* After 9999, before year 0, and beyond what gmtime can represent. */
	const time_t times[] = {LAST_SECOND_OF_9999 + 1, -62167219201LL, INT64_MAX, INT64_MIN};
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		char *out = malloc(HTTP_DATE_MAX);
		assert_non_null(out);
		http_date_format(out, times[i]);
		assert_int_equal(strlen(out), HTTP_DATE_MAX - 1);
		assert_string_equal(out + HTTP_DATE_MAX - 1 - 4, " GMT");
		free(out);
	}
}

/* http_date_parse: the three forms */

static void test_parses_imf_fixdate(void **state)
{
	(void)state;
	assert_date_parses_to("Sun, 06 Nov 1994 08:49:37 GMT", EXAMPLE_TIME);
}

static void test_parses_rfc850_date(void **state)
{
	(void)state;
	assert_date_parses_to("Sunday, 06-Nov-94 08:49:37 GMT", EXAMPLE_TIME);
}

static void test_parses_rfc850_date_with_the_longest_day_name(void **state)
{
	(void)state;
	assert_date_parses_to("Wednesday, 09-Nov-94 08:49:37 GMT", EXAMPLE_TIME + 3 * 86400);
}

static void test_parses_asctime_date_with_a_one_digit_day(void **state)
{
	(void)state;
	assert_date_parses_to("Sun Nov  6 08:49:37 1994", EXAMPLE_TIME);
}

static void test_parses_asctime_date_with_a_two_digit_day(void **state)
{
	(void)state;
	assert_date_parses_to("Thu Nov 24 08:49:37 1994", 785666977);
}

static void test_parses_the_epoch(void **state)
{
	(void)state;
	assert_date_parses_to("Thu, 01 Jan 1970 00:00:00 GMT", 0);
}

/* Writes the RFC 850 form of midnight, 1 January of year, with a two-digit year. */
static void format_rfc850_new_year(char *out, size_t size, int year, time_t *instant)
{
	static const char *const days[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
					   "Thursday", "Friday", "Saturday"};
	struct tm tm = {.tm_year = year - 1900, .tm_mday = 1};
	*instant = timegm(&tm);
	struct tm utc;
	gmtime_r(instant, &utc);
	snprintf(out, size, "%s, 01-Jan-%02d 00:00:00 GMT", days[utc.tm_wday], year % 100);
}

static int current_year(void)
{
	time_t now = time(NULL);
	struct tm utc;
	gmtime_r(&now, &utc);
	return utc.tm_year + 1900;
}

/* RFC 9110 section 5.6.7: only a two-digit year more than 50 years ahead means the past. */
static void test_rfc850_year_ten_years_ahead_is_in_the_future(void **state)
{
	(void)state;
	char text[64];
	time_t expected;
	format_rfc850_new_year(text, sizeof(text), current_year() + 10, &expected);
	assert_date_parses_to(text, expected);
}

static void test_rfc850_year_45_years_ahead_is_in_the_future(void **state)
{
	(void)state;
	char text[64];
	time_t expected;
	format_rfc850_new_year(text, sizeof(text), current_year() + 45, &expected);
	assert_date_parses_to(text, expected);
}

static void test_rfc850_year_more_than_50_years_ahead_is_in_the_past(void **state)
{
	(void)state;
	char text[64];
	time_t expected;
	/* Read as this century, the two digits would be 60 years ahead. */
	format_rfc850_new_year(text, sizeof(text), current_year() + 60 - 100, &expected);
	assert_date_parses_to(text, expected);
}

/* http_date_parse: rejections */

static void test_rejects_empty_and_null(void **state)
{
	(void)state;
	assert_date_rejected("");
	assert_date_rejected(NULL);
}

static void test_rejects_garbage(void **state)
{
	(void)state;
	assert_date_rejected("garbage");
	assert_date_rejected("784111777");
	assert_date_rejected("1994-11-06T08:49:37Z");
	assert_date_rejected("Sun");
	assert_date_rejected(",");
}

static void test_rejects_trailing_junk(void **state)
{
	(void)state;
	assert_date_rejected("Sun, 06 Nov 1994 08:49:37 GMT ");
	assert_date_rejected("Sun, 06 Nov 1994 08:49:37 GMTx");
	assert_date_rejected("Sunday, 06-Nov-94 08:49:37 GMT;");
	assert_date_rejected("Sun Nov  6 08:49:37 1994 GMT");
	assert_date_rejected("Sun Nov  6 08:49:37 19945");
}

static void test_rejects_truncated_dates(void **state)
{
	(void)state;
	assert_date_rejected("Sun, 06 Nov 1994 08:49:37");
	assert_date_rejected("Sun, 06 Nov 1994");
	assert_date_rejected("Sun, 06 No");
	assert_date_rejected("Sunday, 06-Nov-94");
	assert_date_rejected("Sun Nov  6 08:49:37");
}

static void test_rejects_a_zone_other_than_gmt(void **state)
{
	(void)state;
	assert_date_rejected("Sun, 06 Nov 1994 08:49:37 UTC");
	assert_date_rejected("Sun, 06 Nov 1994 08:49:37 +0000");
}

static void test_rejects_a_bad_month(void **state)
{
	(void)state;
	assert_date_rejected("Sun, 06 Foo 1994 08:49:37 GMT");
	assert_date_rejected("Sun, 06 nov 1994 08:49:37 GMT");
	assert_date_rejected("Sunday, 06-Xyz-94 08:49:37 GMT");
	assert_date_rejected("Sun Bar  6 08:49:37 1994");
}

static void test_rejects_out_of_range_fields(void **state)
{
	(void)state;
	assert_date_rejected("Sun, 00 Nov 1994 08:49:37 GMT");
	assert_date_rejected("Sun, 32 Nov 1994 08:49:37 GMT");
	assert_date_rejected("Sun, 06 Nov 1994 24:49:37 GMT");
	assert_date_rejected("Sun, 06 Nov 1994 08:60:37 GMT");
	assert_date_rejected("Sun, 06 Nov 1994 08:49:61 GMT");
	assert_date_rejected("Sunday, 06-Nov-94 25:00:00 GMT");
	assert_date_rejected("Sun Nov 40 08:49:37 1994");
}

static void test_rejects_wrong_digit_counts(void **state)
{
	(void)state;
	assert_date_rejected("Sun, 6 Nov 1994 08:49:37 GMT");
	assert_date_rejected("Sun, 06 Nov 94 08:49:37 GMT");
	assert_date_rejected("Sun, 06 Nov 1994 8:49:37 GMT");
	assert_date_rejected("Sunday, 06-Nov-1994 08:49:37 GMT");
	assert_date_rejected("Sun Nov  6 08:49:37 94");
}

static void test_rejects_wrong_separators(void **state)
{
	(void)state;
	assert_date_rejected("Sun, 06-Nov-1994 08:49:37 GMT");
	assert_date_rejected("Sun 06 Nov 1994 08:49:37 GMT");
	assert_date_rejected("Sun, 06 Nov 1994 08.49.37 GMT");
	assert_date_rejected("Sunday, 06 Nov 94 08:49:37 GMT");
}

/* Round trip */

static void test_formatted_dates_parse_back_to_the_same_time(void **state)
{
	(void)state;
	const time_t times[] = {0,	     1,		     EXAMPLE_TIME, 951782400,
				1700000000,  2147483647,     2147483648LL, 4102444800LL,
				LAST_SECOND_OF_9999};
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		char text[HTTP_DATE_MAX];
		http_date_format(text, times[i]);
		time_t parsed = -1;
		assert_int_equal(http_date_parse(text, &parsed), 0);
		assert_int_equal(parsed, times[i]);
	}
}

/* The date arithmetic agrees with the C library's calendar across the years the format carries. */
static void test_formatted_dates_agree_with_gmtime_from_year_1000_to_9999(void **state)
{
	(void)state;
	char ours[HTTP_DATE_MAX], theirs[64];
	for (long long t = -30610224000LL; t < 253402300799LL; t += 86400LL * 13 + 3607) {
		time_t instant = (time_t)t;
		struct tm utc;
		gmtime_r(&instant, &utc);
		strftime(theirs, sizeof(theirs), "%a, %d %b %Y %H:%M:%S GMT", &utc);
		http_date_format(ours, instant);
		if (strcmp(ours, theirs) != 0)
			fail_msg("%lld: %s, gmtime says %s", t, ours, theirs);
	}
}

static void test_dates_before_the_epoch_and_at_day_ends(void **state)
{
	(void)state;
	char out[HTTP_DATE_MAX];
	http_date_format(out, (time_t)-1);
	assert_string_equal(out, "Wed, 31 Dec 1969 23:59:59 GMT");
	http_date_format(out, (time_t)951782400); /* a leap day */
	assert_string_equal(out, "Tue, 29 Feb 2000 00:00:00 GMT");
	http_date_format(out, (time_t)253402300799LL);
	assert_string_equal(out, "Fri, 31 Dec 9999 23:59:59 GMT");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formatted_dates_agree_with_gmtime_from_year_1000_to_9999),
		cmocka_unit_test(test_dates_before_the_epoch_and_at_day_ends),
		cmocka_unit_test(test_date_formats_the_rfc_example),
		cmocka_unit_test(test_date_formats_the_epoch),
		cmocka_unit_test(test_date_formats_a_leap_day),
		cmocka_unit_test(test_date_formats_past_2038),
		cmocka_unit_test(test_date_formats_the_last_second_of_9999),
		cmocka_unit_test(test_date_outside_years_0_to_9999_still_fits_the_buffer),
		cmocka_unit_test(test_parses_imf_fixdate),
		cmocka_unit_test(test_parses_rfc850_date),
		cmocka_unit_test(test_parses_rfc850_date_with_the_longest_day_name),
		cmocka_unit_test(test_parses_asctime_date_with_a_one_digit_day),
		cmocka_unit_test(test_parses_asctime_date_with_a_two_digit_day),
		cmocka_unit_test(test_parses_the_epoch),
		cmocka_unit_test(test_rfc850_year_ten_years_ahead_is_in_the_future),
		cmocka_unit_test(test_rfc850_year_45_years_ahead_is_in_the_future),
		cmocka_unit_test(test_rfc850_year_more_than_50_years_ahead_is_in_the_past),
		cmocka_unit_test(test_rejects_empty_and_null),
		cmocka_unit_test(test_rejects_garbage),
		cmocka_unit_test(test_rejects_trailing_junk),
		cmocka_unit_test(test_rejects_truncated_dates),
		cmocka_unit_test(test_rejects_a_zone_other_than_gmt),
		cmocka_unit_test(test_rejects_a_bad_month),
		cmocka_unit_test(test_rejects_out_of_range_fields),
		cmocka_unit_test(test_rejects_wrong_digit_counts),
		cmocka_unit_test(test_rejects_wrong_separators),
		cmocka_unit_test(test_formatted_dates_parse_back_to_the_same_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
