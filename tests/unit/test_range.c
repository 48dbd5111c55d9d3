/*
 * Unit tests for server/http/range.h: range_parse decides 200 (RANGE_WHOLE), 206
 * (RANGE_PARTS) or 416 (RANGE_UNSATISFIABLE) for a Range header and a file
 * size, as nginx's range filter reads the header (RFC 9110 section 14), with
 * the documented exception that an empty file satisfies no range.
 *
 * Every call gets a heap array of exactly max_parts ranges, so ASan reports
 * any write past the limit the caller gave.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/range.h"

/* The file most tests cut: 1000 bytes, offsets 0..999. */
#define SIZE 1000
/* Marks *count as untouched. */
#define COUNT_UNSET ((size_t)-1)

static const char *verdict_name(enum range_verdict verdict)
{
	switch (verdict) {
	case RANGE_WHOLE:
		return "RANGE_WHOLE";
	case RANGE_PARTS:
		return "RANGE_PARTS";
	case RANGE_UNSATISFIABLE:
		return "RANGE_UNSATISFIABLE";
	}
	return "(unknown verdict)";
}

/* Runs range_parse with a max_parts-sized heap array; returns the verdict, fills out/count. */
static enum range_verdict parse(const char *header, uint64_t size, size_t max_parts,
				struct byte_range *out, size_t *count)
{
	struct byte_range *parts = calloc(max_parts, sizeof(*parts));
	assert_non_null(parts);
	*count = COUNT_UNSET;
	enum range_verdict verdict = range_parse(header, size, max_parts, parts, count);
	if (verdict == RANGE_PARTS && out != NULL)
		memcpy(out, parts, *count * sizeof(*parts));
	free(parts);
	return verdict;
}

static void expect_verdict_with(const char *header, uint64_t size, size_t max_parts,
				enum range_verdict expected)
{
	size_t count;
	enum range_verdict got = parse(header, size, max_parts, NULL, &count);
	if (got != expected)
		fail_msg("range_parse(\"%s\", size %llu, max %zu) = %s, expected %s",
			 header ? header : "(null)", (unsigned long long)size, max_parts,
			 verdict_name(got), verdict_name(expected));
}

static void expect_verdict(const char *header, uint64_t size, enum range_verdict expected)
{
	expect_verdict_with(header, size, RANGE_DEFAULT_MAX_PARTS, expected);
}

static void expect_whole(const char *header, uint64_t size)
{
	expect_verdict(header, size, RANGE_WHOLE);
}

static void expect_unsatisfiable(const char *header, uint64_t size)
{
	expect_verdict(header, size, RANGE_UNSATISFIABLE);
}

/* expected: n pairs first, last. */
static void expect_parts_with(const char *header, uint64_t size, size_t max_parts,
			      const uint64_t *expected, size_t n)
{
	struct byte_range got[RANGE_MAX_PARTS_LIMIT];
	size_t count;
	enum range_verdict verdict = parse(header, size, max_parts, got, &count);
	if (verdict != RANGE_PARTS)
		fail_msg("range_parse(\"%s\", size %llu) = %s, expected RANGE_PARTS", header,
			 (unsigned long long)size, verdict_name(verdict));
	if (count != n)
		fail_msg("range_parse(\"%s\", size %llu) gave %zu ranges, expected %zu", header,
			 (unsigned long long)size, count, n);
	for (size_t i = 0; i < n; i++) {
		if (got[i].first != expected[2 * i] || got[i].last != expected[2 * i + 1])
			fail_msg("range_parse(\"%s\"): range %zu is %llu-%llu, expected %llu-%llu",
				 header, i, (unsigned long long)got[i].first,
				 (unsigned long long)got[i].last,
				 (unsigned long long)expected[2 * i],
				 (unsigned long long)expected[2 * i + 1]);
	}
}

static void expect_one(const char *header, uint64_t size, uint64_t first, uint64_t last)
{
	const uint64_t expected[] = {first, last};
	expect_parts_with(header, size, RANGE_DEFAULT_MAX_PARTS, expected, 1);
}

#define EXPECT_PARTS(header, size, ...)                                                          \
	do {                                                                                     \
		const uint64_t expected_[] = {__VA_ARGS__};                                      \
		expect_parts_with(header, size, RANGE_DEFAULT_MAX_PARTS, expected_,              \
				  sizeof(expected_) / sizeof(expected_[0]) / 2);                 \
	} while (0)

/* Single ranges */

static void test_first_last_is_one_range(void **state)
{
	(void)state;
	expect_one("bytes=0-499", SIZE, 0, 499);
	expect_one("bytes=100-199", SIZE, 100, 199);
}

static void test_first_and_last_byte_alone(void **state)
{
	(void)state;
	expect_one("bytes=0-0", SIZE, 0, 0);
	expect_one("bytes=999-999", SIZE, 999, 999);
	expect_one("bytes=0-1", SIZE, 0, 1); /* Apple's first request */
}

static void test_whole_file_as_a_range(void **state)
{
	(void)state;
	expect_one("bytes=0-999", SIZE, 0, 999);
}

static void test_open_ended_runs_to_the_last_byte(void **state)
{
	(void)state;
	expect_one("bytes=500-", SIZE, 500, 999);
	expect_one("bytes=0-", SIZE, 0, 999); /* Chrome's first request */
	expect_one("bytes=999-", SIZE, 999, 999);
}

static void test_suffix_is_the_last_n_bytes(void **state)
{
	(void)state;
	expect_one("bytes=-200", SIZE, 800, 999);
	expect_one("bytes=-1", SIZE, 999, 999);
}

static void test_suffix_as_long_as_the_file_is_the_whole_file(void **state)
{
	(void)state;
	expect_one("bytes=-1000", SIZE, 0, 999);
}

static void test_suffix_longer_than_the_file_is_the_whole_file(void **state)
{
	(void)state;
	expect_one("bytes=-1001", SIZE, 0, 999);
	expect_one("bytes=-5000000", SIZE, 0, 999);
}

static void test_end_past_the_file_is_clamped(void **state)
{
	(void)state;
	expect_one("bytes=900-1000", SIZE, 900, 999);
	expect_one("bytes=900-5000", SIZE, 900, 999);
	expect_one("bytes=0-1000", SIZE, 0, 999);
}

static void test_largest_signed_64_bit_end_is_clamped(void **state)
{
	(void)state;
	expect_one("bytes=0-9223372036854775807", SIZE, 0, 999);
	expect_one("bytes=-9223372036854775807", SIZE, 0, 999);
}

static void test_first_byte_at_the_end_is_unsatisfiable(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=1000-", SIZE);
	expect_unsatisfiable("bytes=1000-1000", SIZE);
	expect_unsatisfiable("bytes=1000-2000", SIZE);
}

static void test_first_byte_after_the_end_is_unsatisfiable(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=1001-", SIZE);
	expect_unsatisfiable("bytes=5000-6000", SIZE);
	expect_unsatisfiable("bytes=9223372036854775807-", SIZE);
}

static void test_empty_suffix_is_unsatisfiable(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=-0", SIZE);
	expect_unsatisfiable("bytes=-00", SIZE);
}

static void test_large_file_offsets(void **state)
{
	(void)state;
	const uint64_t big = 6000000000ULL; /* past 2^32 */
	expect_one("bytes=5000000000-", big, 5000000000ULL, big - 1);
	expect_one("bytes=-1", big, big - 1, big - 1);
	expect_one("bytes=4294967296-4294967299", big, 4294967296ULL, 4294967299ULL);
}

/* Empty files: nginx sends 200 here; musicd follows RFC 9110 (documented in range.h). */

static void test_empty_file_satisfies_no_byte_range(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=0-", 0);
	expect_unsatisfiable("bytes=0-0", 0);
	expect_unsatisfiable("bytes=0-100", 0);
	expect_unsatisfiable("bytes=-1", 0);
	expect_unsatisfiable("bytes=-0", 0);
	expect_unsatisfiable("bytes=0-1,-5", 0);
}

static void test_empty_file_without_a_byte_range_is_whole(void **state)
{
	(void)state;
	expect_whole(NULL, 0);
	expect_whole("items=0-1", 0);
	expect_whole("bytes=", 0);
}

/* Several ranges */

static void test_several_ranges_are_kept_in_request_order(void **state)
{
	(void)state;
	EXPECT_PARTS("bytes=0-99,200-299", SIZE, 0, 99, 200, 299);
	EXPECT_PARTS("bytes=500-599,0-99,900-", SIZE, 500, 599, 0, 99, 900, 999);
	EXPECT_PARTS("bytes=-100,0-0", SIZE, 900, 999, 0, 0);
}

static void test_adjacent_and_overlapping_ranges_are_not_merged(void **state)
{
	(void)state;
	EXPECT_PARTS("bytes=0-9,10-19", SIZE, 0, 9, 10, 19);
	EXPECT_PARTS("bytes=0-9,5-14", SIZE, 0, 9, 5, 14);
}

static void test_unsatisfiable_items_are_dropped(void **state)
{
	(void)state;
	EXPECT_PARTS("bytes=5000-,0-1", SIZE, 0, 1);
	EXPECT_PARTS("bytes=0-1,1000-", SIZE, 0, 1);
	EXPECT_PARTS("bytes=-0,10-20", SIZE, 10, 20);
}

static void test_several_unsatisfiable_items_are_unsatisfiable(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=1000-,2000-3000", SIZE);
	expect_unsatisfiable("bytes=-0,1000-", SIZE);
}

/* Whitespace: nginx skips spaces around numbers and dashes (never tabs). */

static void test_spaces_around_numbers_and_dashes(void **state)
{
	(void)state;
	expect_one("bytes= 0-9", SIZE, 0, 9);
	expect_one("bytes=0 -9", SIZE, 0, 9);
	expect_one("bytes=0- 9", SIZE, 0, 9);
	expect_one("bytes=0-9 ", SIZE, 0, 9);
	expect_one("bytes=  0  -  9  ", SIZE, 0, 9);
	expect_one("bytes=5 - ", SIZE, 5, 999);
	expect_one("bytes= -5", SIZE, 995, 999);
	EXPECT_PARTS("bytes= 0 - 9 , 20 - 29 ", SIZE, 0, 9, 20, 29);
	EXPECT_PARTS("bytes=0-9, 20-29", SIZE, 0, 9, 20, 29);
}

/* nginx reads the suffix's digits right after its dash ("bytes=- 5" is 416 there). */
static void test_space_between_a_suffix_dash_and_its_length_is_malformed(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=- 5", SIZE);
}

static void test_tabs_are_not_spaces(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=\t0-9", SIZE);
	expect_unsatisfiable("bytes=0-\t9", SIZE);
	expect_unsatisfiable("bytes=0-9\t", SIZE);
}

/* Units */

static void test_absent_header_is_whole(void **state)
{
	(void)state;
	expect_whole(NULL, SIZE);
}

static void test_other_unit_is_whole(void **state)
{
	(void)state;
	expect_whole("items=0-5", SIZE);
	expect_whole("none", SIZE);
	expect_whole("", SIZE);
	expect_whole("byte=0-5", SIZE);
	expect_whole("bytes 0-5", SIZE);
	expect_whole("bytes =0-5", SIZE);
	expect_whole(" bytes=0-5", SIZE);
	expect_whole("bytesx=0-5", SIZE);
}

static void test_unit_alone_is_whole(void **state)
{
	(void)state;
	expect_whole("bytes=", SIZE);
	expect_whole("BYTES=", SIZE);
}

static void test_unit_is_case_insensitive(void **state)
{
	(void)state;
	expect_one("BYTES=0-1", SIZE, 0, 1);
	expect_one("Bytes=0-1", SIZE, 0, 1);
	expect_one("bYtEs=-1", SIZE, 999, 999);
}

/* Malformed: 416, as nginx answers */

/* RFC 9110 5.6.1.2: empty list elements are accepted and ignored (nginx: 416). */
static void test_empty_list_elements_are_ignored(void **state)
{
	(void)state;
	EXPECT_PARTS("bytes=0-1,,2-3", SIZE, 0, 1, 2, 3);
	expect_one("bytes=,0-1", SIZE, 0, 1);
	expect_one("bytes=0-1,", SIZE, 0, 1);
	EXPECT_PARTS("bytes=0-1, ,2-3", SIZE, 0, 1, 2, 3);
	EXPECT_PARTS("bytes= , 0-1 ,, ,2-3, ", SIZE, 0, 1, 2, 3);
}

/* With no range-spec at all there is nothing to satisfy. */
static void test_only_empty_elements_are_unsatisfiable(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=,", SIZE);
	expect_unsatisfiable("bytes= ", SIZE);
	expect_unsatisfiable("bytes=, ,", SIZE);
}

/* One invalid item makes the whole set invalid: not 206 with the valid ones (Go answers 416). */
static void test_a_reversed_item_beside_a_valid_one_is_malformed(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=5-3,0-1", SIZE);
	expect_unsatisfiable("bytes=0-1,5-4", SIZE);
	expect_unsatisfiable("bytes=0-1,abc", SIZE);
	expect_unsatisfiable("bytes=2000-1000,0-1", SIZE);
}

static void test_a_trailing_comma_is_an_empty_element(void **state)
{
	(void)state;
	expect_one("bytes=0-1,", SIZE, 0, 1);
	expect_one("bytes=0-1, ", SIZE, 0, 1);
	expect_one("bytes=0-,", SIZE, 0, SIZE - 1);
}

static void test_double_dash_is_malformed(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=--5", SIZE);
	expect_unsatisfiable("bytes=5--", SIZE);
	expect_unsatisfiable("bytes=5--6", SIZE);
}

static void test_last_before_first_is_unsatisfiable(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=5-3", SIZE);
	expect_unsatisfiable("bytes=999-0", SIZE);
}

static void test_dash_alone_is_malformed(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=-", SIZE);
	expect_unsatisfiable("bytes= - ", SIZE);
}

static void test_three_numbers_are_malformed(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=1-2-3", SIZE);
	expect_unsatisfiable("bytes=-2-3", SIZE);
}

static void test_missing_dash_is_malformed(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=5", SIZE);
	expect_unsatisfiable("bytes=5 6", SIZE);
	expect_unsatisfiable("bytes=0-1,5", SIZE);
}

static void test_garbage_is_malformed(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=abc", SIZE);
	expect_unsatisfiable("bytes=a-b", SIZE);
	expect_unsatisfiable("bytes=0x10-0x20", SIZE);
	expect_unsatisfiable("bytes=1e3-", SIZE);
	expect_unsatisfiable("bytes=+5-6", SIZE);
	expect_unsatisfiable("bytes=5-+6", SIZE);
	expect_unsatisfiable("bytes=-+6", SIZE);
	expect_unsatisfiable("bytes=0-1;2-3", SIZE);
	expect_unsatisfiable("bytes=0-1 2-3", SIZE);
	expect_unsatisfiable("bytes=0.5-1", SIZE);
	expect_unsatisfiable("bytes=0-1x", SIZE);
	expect_unsatisfiable("bytes==0-1", SIZE);
}

static void test_a_malformed_item_after_good_ones_spoils_the_header(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=0-1,2-3,x", SIZE);
	expect_unsatisfiable("bytes=0-1,--5", SIZE);
}

/* Overflow: numbers that do not fit are malformed (strtoull would wrap or saturate). */

static void test_first_overflowing_64_bits_is_malformed(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=18446744073709551616-", SIZE);
	expect_unsatisfiable("bytes=18446744073709551617-18446744073709551618", SIZE);
	expect_unsatisfiable("bytes=99999999999999999999999999999999-", SIZE);
}

static void test_last_overflowing_64_bits_is_malformed(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=0-18446744073709551616", SIZE);
	expect_unsatisfiable("bytes=0-99999999999999999999999999999999", SIZE);
	/* 2^64 + 1 would wrap to 1 with unchecked arithmetic */
	expect_unsatisfiable("bytes=0-18446744073709551617", SIZE);
}

static void test_suffix_overflowing_64_bits_is_malformed(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=-18446744073709551616", SIZE);
	expect_unsatisfiable("bytes=-99999999999999999999999999999999", SIZE);
}

/* nginx reads offsets as off_t: 2^63 and above overflow there, so they are malformed (416). */
static void test_numbers_past_the_largest_off_t_are_malformed_as_nginx(void **state)
{
	(void)state;
	expect_unsatisfiable("bytes=0-9223372036854775808", SIZE);
	expect_unsatisfiable("bytes=-9223372036854775808", SIZE);
	expect_unsatisfiable("bytes=9223372036854775808-", SIZE);
	expect_unsatisfiable("bytes=0-18446744073709551615", SIZE);
}

static void test_leading_zeros_do_not_overflow(void **state)
{
	(void)state;
	expect_one("bytes=000000000000000000000000000010-0000000000000000000000000020", SIZE, 10,
		   20);
}

/* The abuse guards */

static void test_exactly_max_parts_ranges_are_served(void **state)
{
	(void)state;
	/* 16 ranges 0-0, 2-2, ... 30-30 */
	char header[256] = "bytes=";
	uint64_t expected[2 * RANGE_DEFAULT_MAX_PARTS];
	for (int i = 0; i < RANGE_DEFAULT_MAX_PARTS; i++) {
		char item[16];
		snprintf(item, sizeof(item), "%s%d-%d", i ? "," : "", 2 * i, 2 * i);
		strcat(header, item);
		expected[2 * i] = expected[2 * i + 1] = (uint64_t)(2 * i);
	}
	expect_parts_with(header, SIZE, RANGE_DEFAULT_MAX_PARTS, expected,
			  RANGE_DEFAULT_MAX_PARTS);
}

static void test_one_range_more_than_max_parts_is_whole(void **state)
{
	(void)state;
	char header[256] = "bytes=";
	for (int i = 0; i <= RANGE_DEFAULT_MAX_PARTS; i++) {
		char item[16];
		snprintf(item, sizeof(item), "%s%d-%d", i ? "," : "", 2 * i, 2 * i);
		strcat(header, item);
	}
	expect_whole(header, SIZE);
}

static void test_max_parts_counts_only_satisfiable_ranges(void **state)
{
	(void)state;
	/* two ranges past the end, then two good ones: fits max_parts 2 */
	const uint64_t expected[] = {0, 0, 5, 5};
	expect_parts_with("bytes=5000-,6000-,0-0,5-5", SIZE, 2, expected, 2);
	expect_verdict_with("bytes=5000-,0-0,5-5,7-7", SIZE, 2, RANGE_WHOLE);
}

static void test_max_parts_one_allows_a_single_range_only(void **state)
{
	(void)state;
	expect_parts_with("bytes=0-9", SIZE, 1, (const uint64_t[]){0, 9}, 1);
	expect_verdict_with("bytes=0-9,20-29", SIZE, 1, RANGE_WHOLE);
}

static void test_max_parts_at_the_hard_limit(void **state)
{
	(void)state;
	/* RANGE_MAX_PARTS_LIMIT one-byte ranges of a file that large: all served */
	size_t length = 16 + (size_t)RANGE_MAX_PARTS_LIMIT * 12;
	char *header = malloc(length);
	assert_non_null(header);
	uint64_t *expected = malloc(2 * RANGE_MAX_PARTS_LIMIT * sizeof(*expected));
	assert_non_null(expected);
	size_t used = (size_t)snprintf(header, length, "bytes=");
	for (int i = 0; i < RANGE_MAX_PARTS_LIMIT; i++) {
		used += (size_t)snprintf(header + used, length - used, "%s%d-%d", i ? "," : "", i,
					 i);
		expected[2 * i] = expected[2 * i + 1] = (uint64_t)i;
	}
	expect_parts_with(header, RANGE_MAX_PARTS_LIMIT, RANGE_MAX_PARTS_LIMIT, expected,
			  RANGE_MAX_PARTS_LIMIT);
	snprintf(header + used, length - used, ",0-0");
	expect_verdict_with(header, RANGE_MAX_PARTS_LIMIT, RANGE_MAX_PARTS_LIMIT, RANGE_WHOLE);
	free(expected);
	free(header);
}

static void test_ranges_summing_to_more_than_the_file_are_whole(void **state)
{
	(void)state;
	expect_whole("bytes=0-,0-", SIZE);
	expect_whole("bytes=0-999,0-0", SIZE);
	expect_whole("bytes=0-599,400-999", SIZE);
	expect_whole("bytes=-1000,-1", SIZE);
}

static void test_ranges_summing_to_exactly_the_file_are_served(void **state)
{
	(void)state;
	EXPECT_PARTS("bytes=0-499,500-", SIZE, 0, 499, 500, 999);
	EXPECT_PARTS("bytes=0-599,400-799", SIZE, 0, 599, 400, 799); /* 1000 bytes, overlapping */
}

static void test_huge_ranges_summing_past_64_bits_are_whole(void **state)
{
	(void)state;
	const uint64_t big = UINT64_MAX - 1;
	expect_whole("bytes=0-,0-,0-", big);
}

static void test_thousands_of_items_are_whole_without_overrun(void **state)
{
	(void)state;
	const int items = 5000;
	size_t length = 16 + (size_t)items * 8;
	char *header = malloc(length);
	assert_non_null(header);
	size_t used = (size_t)snprintf(header, length, "bytes=");
	for (int i = 0; i < items; i++)
		used += (size_t)snprintf(header + used, length - used, "%s%d-%d", i ? "," : "",
					 i % SIZE, i % SIZE);
	expect_whole(header, SIZE);
	free(header);
}

static void test_thousands_of_unsatisfiable_items_are_unsatisfiable(void **state)
{
	(void)state;
	const int items = 5000;
	size_t length = 16 + (size_t)items * 12;
	char *header = malloc(length);
	assert_non_null(header);
	size_t used = (size_t)snprintf(header, length, "bytes=");
	for (int i = 0; i < items; i++)
		used += (size_t)snprintf(header + used, length - used, "%s%d-", i ? "," : "",
					 SIZE + i);
	expect_unsatisfiable(header, SIZE);
	free(header);
}

static void test_thousands_of_empty_items_are_ignored_in_one_pass(void **state)
{
	(void)state;
	const size_t commas = 10000;
	char *header = malloc(commas + 16);
	assert_non_null(header);
	strcpy(header, "bytes=0-1");
	memset(header + 9, ',', commas);
	strcpy(header + 9 + commas, "2-3");
	EXPECT_PARTS(header, SIZE, 0, 1, 2, 3);
	free(header);
}

static void test_a_very_long_number_is_malformed(void **state)
{
	(void)state;
	const size_t digits = 100000;
	char *header = malloc(digits + 16);
	assert_non_null(header);
	strcpy(header, "bytes=");
	memset(header + 6, '9', digits);
	strcpy(header + 6 + digits, "-");
	expect_unsatisfiable(header, SIZE);
	free(header);
}

/* Output contract */

static void test_count_is_left_alone_unless_parts(void **state)
{
	(void)state;
	struct byte_range parts[RANGE_DEFAULT_MAX_PARTS];
	size_t count = 12345;
	assert_int_equal(range_parse("bytes=5000-", SIZE, RANGE_DEFAULT_MAX_PARTS, parts, &count),
			 RANGE_UNSATISFIABLE);
	assert_int_equal(range_parse("items=0-1", SIZE, RANGE_DEFAULT_MAX_PARTS, parts, &count),
			 RANGE_WHOLE);
	assert_int_equal(range_parse("bytes=0-1", SIZE, RANGE_DEFAULT_MAX_PARTS, parts, &count),
			 RANGE_PARTS);
	assert_int_equal(count, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_last_is_one_range),
		cmocka_unit_test(test_first_and_last_byte_alone),
		cmocka_unit_test(test_whole_file_as_a_range),
		cmocka_unit_test(test_open_ended_runs_to_the_last_byte),
		cmocka_unit_test(test_suffix_is_the_last_n_bytes),
		cmocka_unit_test(test_suffix_as_long_as_the_file_is_the_whole_file),
		cmocka_unit_test(test_suffix_longer_than_the_file_is_the_whole_file),
		cmocka_unit_test(test_end_past_the_file_is_clamped),
		cmocka_unit_test(test_largest_signed_64_bit_end_is_clamped),
		cmocka_unit_test(test_first_byte_at_the_end_is_unsatisfiable),
		cmocka_unit_test(test_first_byte_after_the_end_is_unsatisfiable),
		cmocka_unit_test(test_empty_suffix_is_unsatisfiable),
		cmocka_unit_test(test_large_file_offsets),
		cmocka_unit_test(test_empty_file_satisfies_no_byte_range),
		cmocka_unit_test(test_empty_file_without_a_byte_range_is_whole),
		cmocka_unit_test(test_several_ranges_are_kept_in_request_order),
		cmocka_unit_test(test_adjacent_and_overlapping_ranges_are_not_merged),
		cmocka_unit_test(test_unsatisfiable_items_are_dropped),
		cmocka_unit_test(test_several_unsatisfiable_items_are_unsatisfiable),
		cmocka_unit_test(test_spaces_around_numbers_and_dashes),
		cmocka_unit_test(test_space_between_a_suffix_dash_and_its_length_is_malformed),
		cmocka_unit_test(test_tabs_are_not_spaces),
		cmocka_unit_test(test_absent_header_is_whole),
		cmocka_unit_test(test_other_unit_is_whole),
		cmocka_unit_test(test_unit_alone_is_whole),
		cmocka_unit_test(test_unit_is_case_insensitive),
		cmocka_unit_test(test_empty_list_elements_are_ignored),
		cmocka_unit_test(test_only_empty_elements_are_unsatisfiable),
		cmocka_unit_test(test_a_reversed_item_beside_a_valid_one_is_malformed),
		cmocka_unit_test(test_a_trailing_comma_is_an_empty_element),
		cmocka_unit_test(test_double_dash_is_malformed),
		cmocka_unit_test(test_last_before_first_is_unsatisfiable),
		cmocka_unit_test(test_dash_alone_is_malformed),
		cmocka_unit_test(test_three_numbers_are_malformed),
		cmocka_unit_test(test_missing_dash_is_malformed),
		cmocka_unit_test(test_garbage_is_malformed),
		cmocka_unit_test(test_a_malformed_item_after_good_ones_spoils_the_header),
		cmocka_unit_test(test_first_overflowing_64_bits_is_malformed),
		cmocka_unit_test(test_last_overflowing_64_bits_is_malformed),
		cmocka_unit_test(test_suffix_overflowing_64_bits_is_malformed),
		cmocka_unit_test(test_numbers_past_the_largest_off_t_are_malformed_as_nginx),
		cmocka_unit_test(test_leading_zeros_do_not_overflow),
		cmocka_unit_test(test_exactly_max_parts_ranges_are_served),
		cmocka_unit_test(test_one_range_more_than_max_parts_is_whole),
		cmocka_unit_test(test_max_parts_counts_only_satisfiable_ranges),
		cmocka_unit_test(test_max_parts_one_allows_a_single_range_only),
		cmocka_unit_test(test_max_parts_at_the_hard_limit),
		cmocka_unit_test(test_ranges_summing_to_more_than_the_file_are_whole),
		cmocka_unit_test(test_ranges_summing_to_exactly_the_file_are_served),
		cmocka_unit_test(test_huge_ranges_summing_past_64_bits_are_whole),
		cmocka_unit_test(test_thousands_of_items_are_whole_without_overrun),
		cmocka_unit_test(test_thousands_of_unsatisfiable_items_are_unsatisfiable),
		cmocka_unit_test(test_thousands_of_empty_items_are_ignored_in_one_pass),
		cmocka_unit_test(test_a_very_long_number_is_malformed),
		cmocka_unit_test(test_count_is_left_alone_unless_parts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
