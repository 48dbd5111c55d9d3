/*
 * Unit tests for server/http/content_type.h: content_type_for_path maps the
 * extension of a path's last component, case-insensitively, to a media type,
 * and everything else to application/octet-stream; it never returns NULL.
 * content_type_from_field takes a document's media type when RFC 9110's
 * grammar says it is one (with parameters), bounded, and nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* content_type_from_field into exactly CONTENT_TYPE_FIELD_MAX heap bytes (ASan sees an overrun). */
static int from_field(const char *value, size_t length, char *copy_out)
{
	char *out = malloc(CONTENT_TYPE_FIELD_MAX);
	assert_non_null(out);
	memset(out, 'X', CONTENT_TYPE_FIELD_MAX);
	int result = content_type_from_field(out, value, length);
	strcpy(copy_out, out);
	free(out);
	return result;
}

static void assert_taken(const char *value)
{
	char out[CONTENT_TYPE_FIELD_MAX];
	if (from_field(value, strlen(value), out) != 0)
		fail_msg("\"%s\" refused", value);
	assert_string_equal(out, value);
}

static void assert_refused_bytes(const char *value, size_t length)
{
	char out[CONTENT_TYPE_FIELD_MAX];
	if (from_field(value, length, out) != -1)
		fail_msg("\"%.*s\" taken", (int)length, value);
	assert_string_equal(out, "");
}

static void assert_refused(const char *value)
{
	assert_refused_bytes(value, strlen(value));
}

static void test_a_field_type_and_subtype_are_taken_as_written(void **state)
{
	(void)state;
	assert_taken("audio/mpeg");
	assert_taken("audio/x-flac");
	assert_taken("Audio/MP4");
	assert_taken("application/vnd.apple.mpegurl");
	assert_taken("audio/vnd.dolby.dd-raw+x");
}

static void test_a_field_may_carry_parameters(void **state)
{
	(void)state;
	assert_taken("audio/ogg; codecs=opus");
	assert_taken("audio/ogg;codecs=opus");
	assert_taken("audio/webm ; codecs=\"vorbis\"");
	assert_taken("audio/mp4; codecs=\"mp4a.40.2, mp4a.40.5\"; rate=44100");
	assert_taken("text/plain; title=\"a \\\"b\\\" c\"");
}

static void test_a_field_that_is_not_a_media_type_is_refused(void **state)
{
	(void)state;
	assert_refused("");
	assert_refused("audio");
	assert_refused("audio/");
	assert_refused("/mpeg");
	assert_refused("audio/mpeg/x");
	assert_refused("audio mpeg");
	assert_refused("audio/mpeg ");
	assert_refused(" audio/mpeg");
	assert_refused("audio/mpeg;");
	assert_refused("audio/mpeg; codecs");
	assert_refused("audio/mpeg; codecs=");
	assert_refused("audio/mpeg; codecs=\"mp3");
	assert_refused("audio/mpeg, audio/ogg");
	assert_refused("audio/mp\xc3\xa9g");
}

static void test_a_field_with_a_control_byte_is_refused(void **state)
{
	(void)state;
	assert_refused("audio/mpeg\r\nX-Evil: 1");
	assert_refused("audio/mpeg\n");
	assert_refused("audio/mpeg;\tcodecs=mp3");
	assert_refused("audio/ogg; codecs=\"op\x01us\"");
	assert_refused("audio/ogg; codecs=\"op\\\x7fus\"");
	assert_refused_bytes("audio/mpeg\0x", strlen("audio/mpeg") + 2);
}

static void test_the_longest_field_is_taken_and_one_byte_more_refused(void **state)
{
	(void)state;
	char value[CONTENT_TYPE_FIELD_VALUE_MAX + 2], out[CONTENT_TYPE_FIELD_MAX];
	memcpy(value, "audio/", strlen("audio/"));
	memset(value + strlen("audio/"), 'x', sizeof(value) - strlen("audio/"));
	assert_int_equal(from_field(value, CONTENT_TYPE_FIELD_VALUE_MAX, out), 0);
	assert_int_equal(strlen(out), CONTENT_TYPE_FIELD_VALUE_MAX);
	assert_refused_bytes(value, CONTENT_TYPE_FIELD_VALUE_MAX + 1);
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
		cmocka_unit_test(test_a_field_type_and_subtype_are_taken_as_written),
		cmocka_unit_test(test_a_field_may_carry_parameters),
		cmocka_unit_test(test_a_field_that_is_not_a_media_type_is_refused),
		cmocka_unit_test(test_a_field_with_a_control_byte_is_refused),
		cmocka_unit_test(test_the_longest_field_is_taken_and_one_byte_more_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
