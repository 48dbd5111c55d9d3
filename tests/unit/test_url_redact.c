/*
 * Unit tests for server/http/url_redact.h: what the access log shows of a
 * target or a Referer. The token parameter's value becomes REDACTED wherever
 * it stands, and so does any value holding "hmac=" (a token under another
 * name); the rest is kept as sent; however small the output, no byte of a
 * token's value is ever written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "http/url_redact.h"

#define PATH "/musicdb/65a1b2c3d4e5f60718293a4b/song.mp3"
#define TOKEN "exp=4102444800~acl=/musicdb/65a1b2c3d4e5f60718293a4b/*~hmac=7f034e1c74258acfd0"

static void assert_redacted(const char *text, const char *expected)
{
	char out[4096];
	size_t length = url_redact(text, "__token__", out, sizeof(out));
	assert_string_equal(out, expected);
	assert_int_equal(length, strlen(expected));
}

static void test_the_tokens_value_is_redacted(void **state)
{
	(void)state;
	assert_redacted(PATH "?__token__=" TOKEN, PATH "?__token__=REDACTED");
}

static void test_the_other_parameters_are_kept_as_sent(void **state)
{
	(void)state;
	assert_redacted(PATH "?download&__token__=" TOKEN "&v=%20x",
			PATH "?download&__token__=REDACTED&v=%20x");
}

static void test_every_occurrence_is_redacted(void **state)
{
	(void)state;
	assert_redacted(PATH "?__token__=" TOKEN "&__token__=" TOKEN "#__token__=" TOKEN,
			PATH "?__token__=REDACTED&__token__=REDACTED#__token__=REDACTED");
}

static void test_a_token_under_another_name_is_redacted(void **state)
{
	(void)state;
	assert_redacted(PATH "?_token_=" TOKEN "&t=x~hmac=1", PATH "?_token_=REDACTED&t=REDACTED");
}

static void test_a_target_without_a_token_is_unchanged(void **state)
{
	(void)state;
	assert_redacted(PATH, PATH);
	assert_redacted(PATH "?download", PATH "?download");
	assert_redacted("/musicdb/__token__=x/y", "/musicdb/__token__=x/y");
	assert_redacted("-", "-");
}

static void test_another_configured_name_is_redacted(void **state)
{
	(void)state;
	char out[256];
	url_redact(PATH "?sig=abc&__token__=keep", "sig", out, sizeof(out));
	assert_string_equal(out, PATH "?sig=REDACTED&__token__=keep");
}

static void test_no_byte_of_a_token_is_written_whatever_the_room(void **state)
{
	(void)state;
	const char *text = PATH "?a=1&__token__=" TOKEN "&b=2";
	char full[4096];
	size_t full_length = url_redact(text, "__token__", full, sizeof(full));
	for (size_t size = 1; size <= full_length + 1; size++) {
		char out[4096];
		memset(out, 'Z', sizeof(out));
		size_t length = url_redact(text, "__token__", out, size);
		assert_true(length < size);
		assert_int_equal(strlen(out), length);
		assert_memory_equal(out, full, length); /* a prefix of the redacted text */
		assert_int_equal(out[size], 'Z');	/* nothing past the room */
		assert_null(strstr(out, "exp="));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_the_tokens_value_is_redacted),
		cmocka_unit_test(test_the_other_parameters_are_kept_as_sent),
		cmocka_unit_test(test_every_occurrence_is_redacted),
		cmocka_unit_test(test_a_token_under_another_name_is_redacted),
		cmocka_unit_test(test_a_target_without_a_token_is_unchanged),
		cmocka_unit_test(test_another_configured_name_is_redacted),
		cmocka_unit_test(test_no_byte_of_a_token_is_written_whatever_the_room),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
