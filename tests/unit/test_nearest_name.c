/*
 * Unit tests for server/base/nearest_name.h: the edit distance (each kind of
 * edit counts one, a swap of neighbours included, case ignored) and which
 * known name a mistyped one gets, or none: a slip gets its name, nonsense
 * gets nothing. The names are musicd's own settings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/nearest_name.h"
#include "config/option_table.h"

static size_t distance(const char *a, const char *b)
{
	return nearest_name_distance(a, strlen(a), b);
}

static const char *near(const char *given)
{
	return nearest_name(given, strlen(given), option_table_name_at);
}

static void test_the_same_name_is_zero_apart_whatever_its_case(void **state)
{
	(void)state;
	assert_int_equal(distance("media-root", "media-root"), 0);
	assert_int_equal(distance("Media-ROOT", "media-root"), 0);
	assert_int_equal(distance("", ""), 0);
}

static void test_each_kind_of_edit_counts_one(void **state)
{
	(void)state;
	assert_int_equal(distance("medai-root", "media-root"), 1); /* a swap */
	assert_int_equal(distance("media-rot", "media-root"), 1);  /* a deletion */
	assert_int_equal(distance("media-rooot", "media-root"), 1); /* an insertion */
	assert_int_equal(distance("media_root", "media-root"), 1); /* a substitution */
	assert_int_equal(distance("", "user"), 4);
	assert_int_equal(distance("user", ""), 4);
}

static void test_edits_add_up(void **state)
{
	(void)state;
	assert_int_equal(distance("mongo-uri", "mongodb-uri"), 2);
	assert_int_equal(distance("kitten", "sitting"), 3);
	/* Optimal string alignment: a swapped pair is not edited again ("ca" -> "abc" is 3). */
	assert_int_equal(distance("ca", "abc"), 3);
	assert_int_equal(distance("ab", "ba"), 1);
	assert_int_equal(distance("abcdef", "badcfe"), 3);
}

static void test_the_distance_is_symmetric(void **state)
{
	(void)state;
	const char *words[] = {"", "usr", "user", "medai-root", "media-root", "lookup-timout",
			       "x-sendfile", "abcdef", "badcfe"};
	size_t count = sizeof(words) / sizeof(words[0]);
	for (size_t i = 0; i < count; i++)
		for (size_t j = 0; j < count; j++)
			assert_int_equal(distance(words[i], words[j]), distance(words[j], words[i]));
}

static void test_only_the_given_length_is_compared(void **state)
{
	(void)state;
	/* A flag's name ends at its '=': the rest is not part of it. */
	assert_int_equal(nearest_name_distance("media-root=/srv", 10, "media-root"), 0);
}

static void test_names_too_long_are_compared_with_nothing(void **state)
{
	(void)state;
	char long_name[NEAREST_NAME_MAX_LENGTH + 2];
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_int_equal(distance(long_name, "user"), SIZE_MAX);
	assert_int_equal(distance("user", long_name), SIZE_MAX);
	assert_null(near(long_name));
	long_name[NEAREST_NAME_MAX_LENGTH] = '\0'; /* just long enough: compared */
	assert_int_equal(distance(long_name, long_name), 0);
}

static void test_a_slip_gets_the_setting_it_was_meant_to_be(void **state)
{
	(void)state;
	assert_string_equal(near("medai-root"), "media-root");
	assert_string_equal(near("media_root"), "media-root");
	assert_string_equal(near("Media-Root"), "media-root");
	assert_string_equal(near("lookup-timout"), "lookup-timeout");
	assert_string_equal(near("acess-log"), "access-log");
	assert_string_equal(near("mongodburi"), "mongodb-uri");
	assert_string_equal(near("mongo-uri"), "mongodb-uri");
	assert_string_equal(near("loglevel"), "log-level");
	assert_string_equal(near("workes"), "workers");
	assert_string_equal(near("usr"), "user");
}

static void test_nonsense_gets_no_suggestion(void **state)
{
	(void)state;
	assert_null(near(""));
	assert_null(near("x"));
	assert_null(near("xyz"));
	assert_null(near("port"));
	assert_null(near("timeout"));
	assert_null(near("verbose"));
	assert_null(near("zzzzzzzzzzzz"));
}

static const char *a_then_b(size_t index)
{
	static const char *const names[] = {"a", "b"};
	return index < 2 ? names[index] : NULL;
}

static void test_of_equally_near_names_the_first_is_given(void **state)
{
	(void)state;
	assert_int_equal(distance("x", "a"), distance("x", "b"));
	assert_string_equal(nearest_name("x", 1, a_then_b), "a");
}

static const char *two_names(size_t index)
{
	static const char *const names[] = {"lookup-threads", "lookup-thread"};
	return index < 2 ? names[index] : NULL;
}

static void test_the_nearest_of_several_close_names_wins(void **state)
{
	(void)state;
	/* "lookup-threds" is one edit from each: the first; "lookup-thred" is one from
	   lookup-thread but two from lookup-threads. */
	assert_string_equal(nearest_name("lookup-threds", 13, two_names), "lookup-threads");
	assert_string_equal(nearest_name("lookup-thred", 12, two_names), "lookup-thread");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_same_name_is_zero_apart_whatever_its_case),
		cmocka_unit_test(test_each_kind_of_edit_counts_one),
		cmocka_unit_test(test_edits_add_up),
		cmocka_unit_test(test_the_distance_is_symmetric),
		cmocka_unit_test(test_only_the_given_length_is_compared),
		cmocka_unit_test(test_names_too_long_are_compared_with_nothing),
		cmocka_unit_test(test_a_slip_gets_the_setting_it_was_meant_to_be),
		cmocka_unit_test(test_nonsense_gets_no_suggestion),
		cmocka_unit_test(test_of_equally_near_names_the_first_is_given),
		cmocka_unit_test(test_the_nearest_of_several_close_names_wins),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
