/*
 * Unit tests for server/base/log.h: log_level_parse knows "debug", "info", "warn"
 * and "error", and rejects anything else; log_escape keeps every line one line.
 * (Opening the log files: test_log_file.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

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

static void assert_escapes_to(const char *text, const char *expected)
{
	char out[256];
	size_t length = log_escape(out, sizeof(out), text);
	assert_string_equal(out, expected);
	assert_int_equal(length, strlen(expected));
}

static void test_escape_keeps_plain_text(void **state)
{
	(void)state;
	assert_escapes_to("mid=0123: /srv/music/a b.mp3", "mid=0123: /srv/music/a b.mp3");
}

static void test_escape_writes_a_newline_as_backslash_n(void **state)
{
	(void)state;
	assert_escapes_to("/x\n2026-01-01T00:00:00.000Z error: forged",
			  "/x\\n2026-01-01T00:00:00.000Z error: forged");
}

static void test_escape_writes_cr_and_tab_by_name(void **state)
{
	(void)state;
	assert_escapes_to("a\rb\tc", "a\\rb\\tc");
}

static void test_escape_writes_other_control_bytes_and_del_in_hex(void **state)
{
	(void)state;
	assert_escapes_to("\x1b[31mred\x7f\x01", "\\x1b[31mred\\x7f\\x01");
}

static void test_escape_doubles_a_backslash_so_escapes_are_unambiguous(void **state)
{
	(void)state;
	assert_escapes_to("C:\\n", "C:\\\\n");
}

static void test_escape_keeps_utf8_bytes(void **state)
{
	(void)state;
	assert_escapes_to("/srv/\xe6\x97\xa5\xe6\x9c\xac.mp3", "/srv/\xe6\x97\xa5\xe6\x9c\xac.mp3");
}

static void test_escape_never_cuts_an_escape_in_half(void **state)
{
	(void)state;
	char out[4]; /* room for "ab" and the NUL, not for "\\n" */
	assert_int_equal(log_escape(out, sizeof(out), "ab\ncd"), 2);
	assert_string_equal(out, "ab");
}

static void test_escape_into_an_empty_buffer_writes_nothing(void **state)
{
	(void)state;
	char out[1] = {'x'};
	assert_int_equal(log_escape(out, 0, "abc"), 0);
	assert_int_equal(out[0], 'x');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_keeps_plain_text),
		cmocka_unit_test(test_escape_writes_a_newline_as_backslash_n),
		cmocka_unit_test(test_escape_writes_cr_and_tab_by_name),
		cmocka_unit_test(test_escape_writes_other_control_bytes_and_del_in_hex),
		cmocka_unit_test(test_escape_doubles_a_backslash_so_escapes_are_unambiguous),
		cmocka_unit_test(test_escape_keeps_utf8_bytes),
		cmocka_unit_test(test_escape_never_cuts_an_escape_in_half),
		cmocka_unit_test(test_escape_into_an_empty_buffer_writes_nothing),
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
