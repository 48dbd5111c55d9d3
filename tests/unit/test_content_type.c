/*
 * Unit tests for server/http/content_type.h: content_type_for_path maps the
 * extension of a path's last component, case-insensitively, to a media type,
 * and everything else to application/octet-stream; it never returns NULL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "http/content_type.h"

struct extension_case {
	const char *path;
	const char *type;
};

/* The whole table, one entry per extension. */
static const struct extension_case known[] = {
	{"/music/a.mp3", "audio/mpeg"},	  {"/music/a.m4a", "audio/mp4"},
	{"/music/a.mp4", "audio/mp4"},	  {"/music/a.aac", "audio/aac"},
	{"/music/a.ogg", "audio/ogg"},	  {"/music/a.oga", "audio/ogg"},
	{"/music/a.opus", "audio/ogg"},	  {"/music/a.flac", "audio/flac"},
	{"/music/a.wav", "audio/wav"},	  {"/music/a.webm", "audio/webm"},
};

#define KNOWN_COUNT (sizeof(known) / sizeof(known[0]))

static void test_every_known_extension_has_its_type(void **state)
{
	(void)state;
	for (size_t i = 0; i < KNOWN_COUNT; i++)
		assert_string_equal(content_type_for_path(known[i].path), known[i].type);
}

static void test_upper_case_extensions_have_the_same_type(void **state)
{
	(void)state;
	assert_string_equal(content_type_for_path("/music/A.MP3"), "audio/mpeg");
	assert_string_equal(content_type_for_path("/music/a.FLAC"), "audio/flac");
	assert_string_equal(content_type_for_path("/music/a.Opus"), "audio/ogg");
	assert_string_equal(content_type_for_path("/music/a.WebM"), "audio/webm");
}

static void test_only_the_last_extension_counts(void **state)
{
	(void)state;
	assert_string_equal(content_type_for_path("/music/a.flac.mp3"), "audio/mpeg");
	assert_string_equal(content_type_for_path("/music/a.mp3.txt"), CONTENT_TYPE_DEFAULT);
}

static void test_unknown_extension_is_the_default(void **state)
{
	(void)state;
	assert_string_equal(content_type_for_path("/music/a.txt"), "application/octet-stream");
	assert_string_equal(content_type_for_path("/music/a.mp"), CONTENT_TYPE_DEFAULT);
	assert_string_equal(content_type_for_path("/music/a.mp33"), CONTENT_TYPE_DEFAULT);
}

static void test_no_extension_is_the_default(void **state)
{
	(void)state;
	assert_string_equal(content_type_for_path("/music/mp3"), CONTENT_TYPE_DEFAULT);
	assert_string_equal(content_type_for_path("mp3"), CONTENT_TYPE_DEFAULT);
}

static void test_dot_file_is_the_default(void **state)
{
	(void)state;
	assert_string_equal(content_type_for_path("/music/.mp3"), CONTENT_TYPE_DEFAULT);
	assert_string_equal(content_type_for_path(".mp3"), CONTENT_TYPE_DEFAULT);
}

static void test_dot_file_with_an_extension_has_its_type(void **state)
{
	(void)state;
	assert_string_equal(content_type_for_path("/music/.hidden.mp3"), "audio/mpeg");
}

static void test_extension_of_a_directory_does_not_count(void **state)
{
	(void)state;
	assert_string_equal(content_type_for_path("/a.mp3/b"), CONTENT_TYPE_DEFAULT);
	assert_string_equal(content_type_for_path("/music.flac/album/track"), CONTENT_TYPE_DEFAULT);
	assert_string_equal(content_type_for_path("/a.mp3/b.ogg"), "audio/ogg");
}

static void test_trailing_dot_is_the_default(void **state)
{
	(void)state;
	assert_string_equal(content_type_for_path("/music/a."), CONTENT_TYPE_DEFAULT);
	assert_string_equal(content_type_for_path("/music/a.mp3."), CONTENT_TYPE_DEFAULT);
}

static void test_trailing_slash_is_the_default(void **state)
{
	(void)state;
	assert_string_equal(content_type_for_path("/music/a.mp3/"), CONTENT_TYPE_DEFAULT);
}

static void test_relative_path_with_extension_has_its_type(void **state)
{
	(void)state;
	assert_string_equal(content_type_for_path("a.wav"), "audio/wav");
}

static void test_empty_and_null_paths_are_the_default(void **state)
{
	(void)state;
	assert_string_equal(content_type_for_path(""), CONTENT_TYPE_DEFAULT);
	assert_string_equal(content_type_for_path(NULL), CONTENT_TYPE_DEFAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_known_extension_has_its_type),
		cmocka_unit_test(test_upper_case_extensions_have_the_same_type),
		cmocka_unit_test(test_only_the_last_extension_counts),
		cmocka_unit_test(test_unknown_extension_is_the_default),
		cmocka_unit_test(test_no_extension_is_the_default),
		cmocka_unit_test(test_dot_file_is_the_default),
		cmocka_unit_test(test_dot_file_with_an_extension_has_its_type),
		cmocka_unit_test(test_extension_of_a_directory_does_not_count),
		cmocka_unit_test(test_trailing_dot_is_the_default),
		cmocka_unit_test(test_trailing_slash_is_the_default),
		cmocka_unit_test(test_relative_path_with_extension_has_its_type),
		cmocka_unit_test(test_empty_and_null_paths_are_the_default),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
