/*
 * Unit tests for import/escape.h: what counts as UTF-8 (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF, no NUL), and the
 * three escapers: the terminal keeps readable UTF-8 and shows every other
 * byte as \xNN, JSON escapes quotes, backslashes and controls, URLs keep
 * only unreserved characters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "escape.h"

#define UTF8(text) escape_is_utf8(text, sizeof(text) - 1)

static void test_ascii_and_multibyte_text_is_utf8(void **state)
{
	(void)state;
	assert_true(UTF8(""));
	assert_true(UTF8("plain /path/a.mp3"));
	assert_true(UTF8("Caf\xc3\xa9"));		  /* U+00E9 */
	assert_true(UTF8("\xe6\x97\xa5\xe6\x9c\xac")); /* U+65E5 U+672C */
	assert_true(UTF8("\xf0\x9f\x8e\xb5"));	  /* U+1F3B5 */
	assert_true(UTF8("\xf4\x8f\xbf\xbf"));	  /* U+10FFFF, the last */
}

static void test_invalid_sequences_are_not_utf8(void **state)
{
	(void)state;
	assert_false(UTF8("caf\xe9"));		 /* Latin-1 */
	assert_false(UTF8("\xc3"));		 /* cut short */
	assert_false(UTF8("\xc3\x28"));		 /* bad continuation */
	assert_false(UTF8("\x80"));		 /* lone continuation */
	assert_false(UTF8("\xc0\xaf"));		 /* overlong '/' */
	assert_false(UTF8("\xe0\x80\xaf"));	 /* overlong '/' in three bytes */
	assert_false(UTF8("\xed\xa0\x80"));	 /* U+D800, a surrogate */
	assert_false(UTF8("\xf4\x90\x80\x80")); /* past U+10FFFF */
	assert_false(UTF8("\xff\xfe"));
	assert_false(escape_is_utf8("a\0b", 3)); /* NUL: BSON strings cannot hold it */
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

static void test_json_escapes_quotes_backslashes_and_controls(void **state)
{
	(void)state;
	char *out = escape_for_json("say \"hi\"\\\n\t\x01 \xc3\xa9");
	assert_string_equal(out, "say \\\"hi\\\"\\\\\\n\\t\\u0001 \xc3\xa9");
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
		cmocka_unit_test(test_ascii_and_multibyte_text_is_utf8),
		cmocka_unit_test(test_invalid_sequences_are_not_utf8),
		cmocka_unit_test(test_terminal_keeps_readable_utf8),
		cmocka_unit_test(test_terminal_escapes_bytes_that_are_not_utf8_one_by_one),
		cmocka_unit_test(test_terminal_escapes_controls_and_backslashes),
		cmocka_unit_test(test_terminal_shows_an_embedded_nul),
		cmocka_unit_test(test_json_escapes_quotes_backslashes_and_controls),
		cmocka_unit_test(test_url_keeps_unreserved_and_percent_encodes_the_rest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
