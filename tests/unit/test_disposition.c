/*
 * Unit tests for server/http/disposition.h: the exact Content-Disposition
 * value for each kind of name that a track target's :param (route.h) gives
 * (RFC 6266 filename with an ASCII fallback, RFC 8187 filename* for the
 * exact UTF-8 name, and the id + extension fallback for names that are not
 * UTF-8 or not well encoded).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/disposition.h"
#include "http/route.h"
#include "http/response_head.h"

#define ID "0123456789abcdef01234567"
#define PATH "/srv/music/Artist/Album/01 Track.mp3"
#define TRACK(param) "/musicdb/" ID "/" param

/* The value for target's :param, formatted into a heap buffer of exactly DISPOSITION_VALUE_MAX. */
static char *value_of(const char *target, const char *path)
{
	struct route route = route_parse(target);
	assert_int_equal(route.kind, ROUTE_TRACK);
	char *out = malloc(DISPOSITION_VALUE_MAX);
	assert_non_null(out);
	size_t length =
		disposition_value(route.param, route.param_length, ID, path, out, DISPOSITION_VALUE_MAX);
	assert_true(length > 0);
	assert_int_equal(strlen(out), length);
	assert_true(response_value_is_safe(out));
	return out;
}

static void assert_value(const char *target, const char *expected)
{
	char *value = value_of(target, PATH);
	assert_string_equal(value, expected);
	free(value);
}

static void test_a_plain_ascii_name_is_only_filename(void **state)
{
	(void)state;
	assert_value(TRACK("song.mp3?download"), "attachment; filename=\"song.mp3\"");
	assert_value(TRACK("a-b_c.d.mp3?download=1&x=2"), "attachment; filename=\"a-b_c.d.mp3\"");
}

static void test_spaces_and_semicolons_are_kept_inside_the_quotes(void **state)
{
	(void)state;
	assert_value(TRACK("My%20Song%3B%20live.mp3?download"),
		     "attachment; filename=\"My Song; live.mp3\"");
	/* '+' is a '+' in a path, not a space */
	assert_value(TRACK("a+b.mp3?download"), "attachment; filename=\"a+b.mp3\"");
}

static void test_quotes_backslashes_and_percent_go_to_filename_star(void **state)
{
	(void)state;
	assert_value(TRACK("say%20%22hi%22.mp3?download"),
		     "attachment; filename=\"say _hi_.mp3\"; filename*=UTF-8''say%20%22hi%22.mp3");
	assert_value(TRACK("100%25.mp3?download"),
		     "attachment; filename=\"100_.mp3\"; filename*=UTF-8''100%25.mp3");
}

static void test_path_separators_and_control_characters_become_underscores(void **state)
{
	(void)state;
	assert_value(TRACK("..%2F..%2Fetc%2Fpasswd?download"),
		     "attachment; filename=\".._.._etc_passwd\"");
	assert_value(TRACK("a%5Cb.mp3?download"), "attachment; filename=\"a_b.mp3\"");
	assert_value(TRACK("a%0D%0AX-Evil:%201.mp3?download"),
		     "attachment; filename=\"a__X-Evil: 1.mp3\"");
	assert_value(TRACK("a%00b%7F.mp3?download"), "attachment; filename=\"a_b_.mp3\"");
	/* a C1 control character (U+0085, NEL) is one '_' as well */
	assert_value(TRACK("a%C2%85b.mp3?download"), "attachment; filename=\"a_b.mp3\"");
}

static void test_japanese_names_keep_their_utf8_in_filename_star(void **state)
{
	(void)state;
	/* 日本語の歌.mp3 */
	assert_value(TRACK("%E6%97%A5%E6%9C%AC%E8%AA%9E%E3%81%AE%E6%AD%8C.mp3?download"),
		     "attachment; filename=\"_____.mp3\"; "
		     "filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E%E3%81%AE%E6%AD%8C.mp3");
}

static void test_accented_latin_sent_raw_or_encoded_is_the_same(void **state)
{
	(void)state;
	const char *expected =
		"attachment; filename=\"Caf_ Na_ve.mp3\"; filename*=UTF-8''Caf%C3%A9%20Na%C3%AFve.mp3";
	assert_value(TRACK("Caf%C3%A9%20Na%C3%AFve.mp3?download"), expected);
	assert_value(TRACK("Caf\xc3\xa9%20Na\xc3\xafve.mp3?download"), expected);
}

static void test_invalid_utf8_falls_back_to_the_id_and_extension(void **state)
{
	(void)state;
	const char *fallback = "attachment; filename=\"" ID ".mp3\"";
	assert_value(TRACK("%FF%FE.mp3?download"), fallback);	      /* not UTF-8 at all */
	assert_value(TRACK("caf%E9.mp3?download"), fallback);	      /* Latin-1 é */
	assert_value(TRACK("%C0%AF.mp3?download"), fallback);	      /* overlong '/' */
	assert_value(TRACK("%ED%A0%80.mp3?download"), fallback);      /* a surrogate */
	assert_value(TRACK("%F4%90%80%80.mp3?download"), fallback);   /* above U+10FFFF */
	assert_value(TRACK("%E6%97.mp3?download"), fallback);	      /* cut short */
}

static void test_malformed_escapes_and_dot_names_fall_back(void **state)
{
	(void)state;
	const char *fallback = "attachment; filename=\"" ID ".mp3\"";
	assert_value(TRACK("a%zz.mp3?download"), fallback);
	assert_value(TRACK("a.mp3%2?download"), fallback);
	assert_value(TRACK("a.mp3%?download"), fallback);
	assert_value(TRACK("..?download"), fallback);
	assert_value(TRACK("%2E%2E?download"), fallback);
}

static void test_a_name_longer_than_name_max_falls_back(void **state)
{
	(void)state;
	char target[600];
	size_t prefix = strlen(TRACK(""));
	memcpy(target, TRACK(""), prefix);
	memset(target + prefix, 'a', DISPOSITION_NAME_MAX + 1);
	strcpy(target + prefix + DISPOSITION_NAME_MAX + 1, "?download");
	assert_value(target, "attachment; filename=\"" ID ".mp3\"");
	/* exactly NAME_MAX is kept */
	strcpy(target + prefix + DISPOSITION_NAME_MAX, "?download");
	char *value = value_of(target, PATH);
	assert_int_equal(strlen(value), strlen("attachment; filename=\"\"") + DISPOSITION_NAME_MAX);
	free(value);
}

static void test_the_fallback_extension_is_the_files_when_it_is_plain(void **state)
{
	(void)state;
	char *value = value_of(TRACK("%FF?download"), "/srv/music/a.flac");
	assert_string_equal(value, "attachment; filename=\"" ID ".flac\"");
	free(value);
	value = value_of(TRACK("%FF?download"), "/srv/music/no-extension");
	assert_string_equal(value, "attachment; filename=\"" ID "\"");
	free(value);
	value = value_of(TRACK("%FF?download"), "/srv/music/.hidden");
	assert_string_equal(value, "attachment; filename=\"" ID "\"");
	free(value);
	value = value_of(TRACK("%FF?download"), "/srv/music/a.m p3");
	assert_string_equal(value, "attachment; filename=\"" ID "\"");
	free(value);
	value = value_of(TRACK("%FF?download"), "/srv/dir.d/file");
	assert_string_equal(value, "attachment; filename=\"" ID "\"");
	free(value);
}

static void test_the_longest_name_fits_value_max(void **state)
{
	(void)state;
	/* NAME_MAX bytes that each need escaping: the worst case for both parameters */
	char target[2048];
	size_t used = strlen(TRACK(""));
	memcpy(target, TRACK(""), used);
	for (size_t i = 0; i < DISPOSITION_NAME_MAX; i++) {
		memcpy(target + used, "%22", 3);
		used += 3;
	}
	strcpy(target + used, "?download");
	char *value = value_of(target, PATH);
	assert_true(strlen(value) < DISPOSITION_VALUE_MAX);
	assert_non_null(strstr(value, "filename*=UTF-8''%22%22"));
	free(value);
}

static void test_a_buffer_too_small_is_refused_not_cut(void **state)
{
	(void)state;
	char out[16];
	assert_int_equal(disposition_value("song.mp3", strlen("song.mp3"), ID, PATH, out, sizeof(out)),
			 0);
	assert_int_equal(disposition_value("song.mp3", strlen("song.mp3"), ID, PATH, out, 0), 0);
}

static void test_no_param_falls_back_to_the_id_and_extension(void **state)
{
	(void)state;
	char out[DISPOSITION_VALUE_MAX];
	assert_int_equal(disposition_value(NULL, 0, ID, PATH, out, sizeof(out)),
			 strlen("attachment; filename=\"" ID ".mp3\""));
	assert_string_equal(out, "attachment; filename=\"" ID ".mp3\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_plain_ascii_name_is_only_filename),
		cmocka_unit_test(test_spaces_and_semicolons_are_kept_inside_the_quotes),
		cmocka_unit_test(test_quotes_backslashes_and_percent_go_to_filename_star),
		cmocka_unit_test(test_path_separators_and_control_characters_become_underscores),
		cmocka_unit_test(test_japanese_names_keep_their_utf8_in_filename_star),
		cmocka_unit_test(test_accented_latin_sent_raw_or_encoded_is_the_same),
		cmocka_unit_test(test_invalid_utf8_falls_back_to_the_id_and_extension),
		cmocka_unit_test(test_malformed_escapes_and_dot_names_fall_back),
		cmocka_unit_test(test_a_name_longer_than_name_max_falls_back),
		cmocka_unit_test(test_the_fallback_extension_is_the_files_when_it_is_plain),
		cmocka_unit_test(test_the_longest_name_fits_value_max),
		cmocka_unit_test(test_a_buffer_too_small_is_refused_not_cut),
		cmocka_unit_test(test_no_param_falls_back_to_the_id_and_extension),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
