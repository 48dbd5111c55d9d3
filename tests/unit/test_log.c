/*
 * Unit tests for server/log.h: log_level_parse knows "debug", "info", "warn"
 * and "error", and rejects anything else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "log.h"

static void assert_level_parses_to(const char *name, enum log_level expected)
{
	enum log_level level = (enum log_level)-1;
	assert_int_equal(log_level_parse(name, &level), 0);
	assert_int_equal(level, expected);
}

static void assert_level_rejected(const char *name)
{
	enum log_level level = LOG_LEVEL_INFO;
	if (log_level_parse(name, &level) != -1)
		fail_msg("log_level_parse(\"%s\") accepted it", name);
}

static void test_debug_is_the_debug_level(void **state)
{
	(void)state;
	assert_level_parses_to("debug", LOG_LEVEL_DEBUG);
}

static void test_info_is_the_info_level(void **state)
{
	(void)state;
	assert_level_parses_to("info", LOG_LEVEL_INFO);
}

static void test_warn_is_the_warn_level(void **state)
{
	(void)state;
	assert_level_parses_to("warn", LOG_LEVEL_WARN);
}

static void test_error_is_the_error_level(void **state)
{
	(void)state;
	assert_level_parses_to("error", LOG_LEVEL_ERROR);
}

static void test_other_names_are_rejected(void **state)
{
	(void)state;
	assert_level_rejected("warning");
	assert_level_rejected("fatal");
	assert_level_rejected("trace");
	assert_level_rejected("err");
	assert_level_rejected("1");
}

static void test_prefixes_and_padded_names_are_rejected(void **state)
{
	(void)state;
	assert_level_rejected("inf");
	assert_level_rejected("infos");
	assert_level_rejected(" info");
	assert_level_rejected("info ");
}

static void test_empty_name_is_rejected(void **state)
{
	(void)state;
	assert_level_rejected("");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_debug_is_the_debug_level),
		cmocka_unit_test(test_info_is_the_info_level),
		cmocka_unit_test(test_warn_is_the_warn_level),
		cmocka_unit_test(test_error_is_the_error_level),
		cmocka_unit_test(test_other_names_are_rejected),
		cmocka_unit_test(test_prefixes_and_padded_names_are_rejected),
		cmocka_unit_test(test_empty_name_is_rejected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
