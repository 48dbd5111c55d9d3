/*
 * Unit tests for server/base/flags.h, the flag reader musicd and musicd-import
 * share: a value after '=' or in the next argument, bare flags for the
 * options whose value is optional or absent, how far *index moves, and each
 * refusal with its exact message. The option table is the test's own, one
 * option of each kind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/flags.h"

struct test_option {
	const char *name;
	enum flags_value value;
};

static const struct test_option table[] = {
	{"jobs", FLAGS_VALUE_REQUIRED},
	{"x-sendfile", FLAGS_VALUE_OPTIONAL},
	{"hash", FLAGS_VALUE_NONE},
};

#define JOBS (&table[0])
#define SENDFILE (&table[1])
#define HASH (&table[2])

/* The name the last lookup was asked for, to show it never holds the "=value". */
static char looked_up[64];

static const void *lookup(const char *name, size_t length, enum flags_value *value)
{
	snprintf(looked_up, sizeof(looked_up), "%.*s", (int)length, name);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (flags_name_is(name, length, table[i].name)) {
			*value = table[i].value;
			return &table[i];
		}
	}
	return NULL;
}

#define ARGV(...) ((char *[]){"prog", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"prog", __VA_ARGS__}) / sizeof(char *)))

struct result {
	int status;
	int index; /* where reading stopped */
	struct flags_flag flag;
	char error[256];
};

/* The table's names, for the suggestions. */
static const char *name_at(size_t index)
{
	return index < sizeof(table) / sizeof(table[0]) ? table[index].name : NULL;
}

/* Reads the flag at argv[1], with names (NULL: no suggestions). */
static struct result read_at_one(int argc, char **argv, nearest_name_at *names)
{
	struct result r = {.index = 1};
	r.status = flags_read(argc, argv, &r.index, lookup, names, &r.flag, r.error,
			      sizeof(r.error));
	return r;
}

#define READ(...) read_at_one(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), NULL)
#define READ_SUGGESTING(...) read_at_one(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), name_at)

/* Read: the option, its value (NULL: bare) and where reading stopped. */
static void assert_read(struct result r, const void *option, const char *value, int index)
{
	assert_int_equal(r.status, 0);
	assert_ptr_equal(r.flag.option, option);
	if (value == NULL)
		assert_null(r.flag.value);
	else
		assert_string_equal(r.flag.value, value);
	assert_int_equal(r.index, index);
}

static void assert_refused(struct result r, const char *message)
{
	assert_int_equal(r.status, -1);
	assert_string_equal(r.error, message);
}

static void test_value_after_equals(void **state)
{
	(void)state;
	assert_read(READ("--jobs=3", "next"), JOBS, "3", 2); /* "next" is not its value */
	assert_string_equal(looked_up, "jobs");
}

static void test_value_in_the_next_argument(void **state)
{
	(void)state;
	assert_read(READ("--jobs", "3", "next"), JOBS, "3", 3);
}

static void test_the_next_argument_is_the_value_whatever_it_looks_like(void **state)
{
	(void)state;
	assert_read(READ("--jobs", "--hash"), JOBS, "--hash", 3);
}

static void test_an_empty_value_is_read_for_the_caller_to_judge(void **state)
{
	(void)state;
	assert_read(READ("--jobs="), JOBS, "", 2);
	assert_read(READ("--jobs", ""), JOBS, "", 3);
}

static void test_only_the_first_equals_splits(void **state)
{
	(void)state;
	assert_read(READ("--jobs=a=b"), JOBS, "a=b", 2);
}

static void test_an_optional_value_is_never_taken_from_the_next_argument(void **state)
{
	(void)state;
	assert_read(READ("--x-sendfile", "off"), SENDFILE, NULL, 2);
	assert_read(READ("--x-sendfile=off"), SENDFILE, "off", 2);
}

static void test_a_flag_without_value_is_bare(void **state)
{
	(void)state;
	assert_read(READ("--hash", "dir"), HASH, NULL, 2);
	assert_refused(READ("--hash=on"), "option '--hash' takes no value");
	assert_refused(READ("--hash="), "option '--hash' takes no value");
}

static void test_a_missing_value_is_refused(void **state)
{
	(void)state;
	assert_refused(READ("--jobs"), "option '--jobs' needs a value");
}

static void test_an_unknown_name_is_refused_without_its_value(void **state)
{
	(void)state;
	assert_refused(READ("--nope"), "unknown option '--nope' (see --help)");
	assert_refused(READ("--nope=1"), "unknown option '--nope' (see --help)");
	assert_refused(READ("--"), "unknown option '--' (see --help)");
	assert_refused(READ("---jobs"), "unknown option '---jobs' (see --help)");
}

static void test_names_match_whole_not_by_prefix(void **state)
{
	(void)state;
	assert_refused(READ("--job", "3"), "unknown option '--job' (see --help)");
	assert_refused(READ("--jobsx", "3"), "unknown option '--jobsx' (see --help)");
	assert_refused(READ("--JOBS", "3"), "unknown option '--JOBS' (see --help)");
	assert_true(flags_name_is("jobs=3", 4, "jobs"));
	assert_false(flags_name_is("jobs", 3, "jobs"));
	assert_false(flags_name_is("jobsx", 5, "jobs"));
	assert_true(flags_name_is("", 0, ""));
}

static void test_an_unknown_name_near_a_known_one_is_refused_naming_it(void **state)
{
	(void)state;
	assert_refused(READ_SUGGESTING("--jbos", "3"),
		       "unknown option '--jbos' (did you mean '--jobs'?)");
	assert_refused(READ_SUGGESTING("--JOBS=3"),
		       "unknown option '--JOBS' (did you mean '--jobs'?)");
	assert_refused(READ_SUGGESTING("--x_sendfile"),
		       "unknown option '--x_sendfile' (did you mean '--x-sendfile'?)");
	assert_refused(READ_SUGGESTING("--hsh"), "unknown option '--hsh' (did you mean '--hash'?)");
	/* Nothing near: the usual pointer to --help. */
	assert_refused(READ_SUGGESTING("--nope"), "unknown option '--nope' (see --help)");
	assert_refused(READ_SUGGESTING("--"), "unknown option '--' (see --help)");
}

static void test_an_argument_not_starting_with_two_dashes_is_refused(void **state)
{
	(void)state;
	assert_refused(READ("-x"), "unknown option '-x' (see --help)");
	assert_refused(READ("jobs"), "unknown option 'jobs' (see --help)");
	assert_refused(READ("-"), "unknown option '-' (see --help)");
	assert_refused(READ(""), "unknown option '' (see --help)");
}

static void test_a_message_longer_than_the_buffer_is_cut_within_it(void **state)
{
	(void)state;
	char arg[300];
	memset(arg, 'a', sizeof(arg) - 1);
	arg[0] = arg[1] = '-';
	arg[sizeof(arg) - 1] = '\0';
	struct result r = read_at_one(2, (char *[]){"prog", arg, NULL}, name_at);
	assert_int_equal(r.status, -1);
	/* The message is cut to the buffer, never written past it. */
	assert_int_equal(strlen(r.error), sizeof(r.error) - 1);
	assert_memory_equal(r.error, "unknown option '--aaaa", 22);
}

static void test_reading_resumes_where_it_stopped(void **state)
{
	(void)state;
	char **argv = ARGV("--jobs", "2", "--hash", "--x-sendfile=on", "--jobs=4");
	int argc = ARGC("--jobs", "2", "--hash", "--x-sendfile=on", "--jobs=4");
	const void *seen[4];
	int count = 0;
	char error[128];
	for (int i = 1; i < argc && count < 4;) {
		struct flags_flag flag;
		assert_int_equal(
			flags_read(argc, argv, &i, lookup, name_at, &flag, error, sizeof(error)), 0);
		seen[count++] = flag.option;
	}
	assert_int_equal(count, 4);
	assert_ptr_equal(seen[0], JOBS);
	assert_ptr_equal(seen[1], HASH);
	assert_ptr_equal(seen[2], SENDFILE);
	assert_ptr_equal(seen[3], JOBS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_value_after_equals),
		cmocka_unit_test(test_value_in_the_next_argument),
		cmocka_unit_test(test_the_next_argument_is_the_value_whatever_it_looks_like),
		cmocka_unit_test(test_an_empty_value_is_read_for_the_caller_to_judge),
		cmocka_unit_test(test_only_the_first_equals_splits),
		cmocka_unit_test(test_an_optional_value_is_never_taken_from_the_next_argument),
		cmocka_unit_test(test_a_flag_without_value_is_bare),
		cmocka_unit_test(test_a_missing_value_is_refused),
		cmocka_unit_test(test_an_unknown_name_is_refused_without_its_value),
		cmocka_unit_test(test_names_match_whole_not_by_prefix),
		cmocka_unit_test(test_an_unknown_name_near_a_known_one_is_refused_naming_it),
		cmocka_unit_test(test_an_argument_not_starting_with_two_dashes_is_refused),
		cmocka_unit_test(test_a_message_longer_than_the_buffer_is_cut_within_it),
		cmocka_unit_test(test_reading_resumes_where_it_stopped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
