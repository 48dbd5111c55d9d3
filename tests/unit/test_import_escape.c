/*
 * Unit tests for import/escape.h: the terminal escaper keeps readable UTF-8
 * and shows every other byte as \xNN (RFC 3629's invalid forms: overlong,
 * surrogates, past U+10FFFF, cut short), URLs keep only unreserved
 * characters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "escape.h"

/* What the terminal escaper makes of text (a string literal: NULs included). */
#define SHOWN(text, expected)                                                                      \
	do {                                                                                       \
		char *out = escape_for_terminal(text, sizeof(text) - 1);                           \
		assert_string_equal(out, expected);                                                \
		free(out);                                                                         \
	} while (0)

static void test_terminal_keeps_every_valid_sequence(void **state)
{
	(void)state;
	SHOWN("plain /path/a.mp3", "plain /path/a.mp3");
	SHOWN("\xe6\x97\xa5\xe6\x9c\xac", "\xe6\x97\xa5\xe6\x9c\xac"); /* U+65E5 U+672C */
	SHOWN("\xf0\x9f\x8e\xb5", "\xf0\x9f\x8e\xb5");			    /* U+1F3B5 */
	SHOWN("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf");			    /* U+10FFFF */
}

static void test_terminal_shows_each_byte_of_an_invalid_sequence(void **state)
{
	(void)state;
	SHOWN("\xc3", "\\xc3");				  /* cut short */
	SHOWN("\xc3\x28", "\\xc3(");			  /* bad continuation */
	SHOWN("\x80", "\\x80");				  /* lone continuation */
	SHOWN("\xc0\xaf", "\\xc0\\xaf");		  /* overlong '/' */
	SHOWN("\xe0\x80\xaf", "\\xe0\\x80\\xaf");	  /* overlong '/' in three bytes */
	SHOWN("\xed\xa0\x80", "\\xed\\xa0\\x80");	  /* U+D800, a surrogate */
	SHOWN("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
}

static void test_terminal_keeps_readable_utf8(void **state)
{
	(void)state;
	const char *name = "/m/Caf\xc3\xa9 Noir.mp3";
	char *out = escape_for_terminal(name, strlen(name));
	assert_string_equal(out, "/m/Caf\xc3\xa9 Noir.mp3");
	free(out);
}

static void test_terminal_escapes_bytes_that_are_not_utf8_one_by_one(void **state)
{
	(void)state;
	const char name[] = "caf\xe9\xff\xfe.mp3";
	char *out = escape_for_terminal(name, sizeof(name) - 1);
	assert_string_equal(out, "caf\\xe9\\xff\\xfe.mp3");
	free(out);
}

static void test_terminal_escapes_controls_and_backslashes(void **state)
{
	(void)state;
	const char name[] = "a\x1b[31m\n\\b\x7f\xc2\x9b";
	char *out = escape_for_terminal(name, sizeof(name) - 1);
	assert_string_equal(out, "a\\x1b[31m\\x0a\\\\b\\x7f\\xc2\\x9b");
	free(out);
}

static void test_terminal_shows_an_embedded_nul(void **state)
{
	(void)state;
	char *out = escape_for_terminal("a\0b", 3);
	assert_string_equal(out, "a\\x00b");
	free(out);
}

static void test_url_keeps_unreserved_and_percent_encodes_the_rest(void **state)
{
	(void)state;
	char *out = escape_for_url("Caf\xc3\xa9 Noir-1_2.3~(x)/100%?&#.mp3");
	assert_string_equal(out, "Caf%C3%A9%20Noir-1_2.3~%28x%29%2F100%25%3F%26%23.mp3");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_terminal_keeps_every_valid_sequence),
		cmocka_unit_test(test_terminal_shows_each_byte_of_an_invalid_sequence),
		cmocka_unit_test(test_terminal_keeps_readable_utf8),
		cmocka_unit_test(test_terminal_escapes_bytes_that_are_not_utf8_one_by_one),
		cmocka_unit_test(test_terminal_escapes_controls_and_backslashes),
		cmocka_unit_test(test_terminal_shows_an_embedded_nul),
		cmocka_unit_test(test_url_keeps_unreserved_and_percent_encodes_the_rest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
