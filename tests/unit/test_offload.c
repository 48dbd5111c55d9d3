/*
 * Unit tests for server/http/offload.h, as a specification of the X-Accel-Redirect
 * URI musicd hands nginx and of the X-Sendfile value check.
 *
 * The URI is the prefix, a '/' unless the prefix ends in one, then the path
 * below the root. The root is absolute, trailing '/'s ignored ("/" holds every
 * absolute path); a path not strictly below it gives no URI. Bytes of the path
 * are kept if they are unreserved, '/', ':', '@' or sub-delimiters, and
 * percent-encoded in upper-case hex otherwise ('%', '?', '#', space, quotes,
 * brackets, control and non-ASCII bytes), so that nginx's unescaping gives the
 * path back and nothing in it can end the URI or the header. The prefix is the
 * operator's and is copied as it is, but one holding a control byte gives no
 * URI. The URI and its NUL must fit the buffer, or there is none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http/offload.h"

#define ROOT "/srv/music"
#define PREFIX "/protected"
#define URI_MAX 512

/* The URI for resolved_path below ROOT with PREFIX; "" if there is none. */
static const char *uri_with(const char *prefix, const char *root, const char *resolved_path)
{
	static char out[URI_MAX];
	size_t length = offload_accel_uri(prefix, root, resolved_path, out, sizeof(out));
	if (length == 0)
		return "";
	assert_int_equal(length, strlen(out));
	return out;
}

static const char *uri(const char *resolved_path)
{
	return uri_with(PREFIX, ROOT, resolved_path);
}

/* The prefix and the slash between */

static void test_prefix_without_a_trailing_slash_gets_one(void **state)
{
	(void)state;
	char out[URI_MAX];
	assert_int_equal(offload_accel_uri("/protected", ROOT, ROOT "/a.mp3", out, sizeof(out)),
			 strlen("/protected/a.mp3"));
	assert_string_equal(out, "/protected/a.mp3");
}

static void test_prefix_with_a_trailing_slash_gets_no_second_one(void **state)
{
	(void)state;
	assert_string_equal(uri_with("/protected/", ROOT, ROOT "/a.mp3"), "/protected/a.mp3");
}

static void test_prefix_of_a_lone_slash_gives_the_path_from_the_top(void **state)
{
	(void)state;
	assert_string_equal(uri_with("/", ROOT, ROOT "/a.mp3"), "/a.mp3");
}

static void test_empty_prefix_gives_the_path_from_the_top(void **state)
{
	(void)state;
	assert_string_equal(uri_with("", ROOT, ROOT "/a.mp3"), "/a.mp3");
}

static void test_prefix_is_copied_as_it_is(void **state)
{
	(void)state;
	assert_string_equal(uri_with("/in ternal%41", ROOT, ROOT "/a.mp3"), "/in ternal%41/a.mp3");
}

static void test_prefix_with_a_control_byte_gives_no_uri(void **state)
{
	(void)state;
	assert_string_equal(uri_with("/protected\r\nX-Injected: 1", ROOT, ROOT "/a.mp3"), "");
	assert_string_equal(uri_with("/protected\n", ROOT, ROOT "/a.mp3"), "");
	assert_string_equal(uri_with("/pro\ttected", ROOT, ROOT "/a.mp3"), "");
	assert_string_equal(uri_with("/protected\x7f", ROOT, ROOT "/a.mp3"), "");
}

/* The root */

static void test_subdirectories_below_the_root_are_kept(void **state)
{
	(void)state;
	assert_string_equal(uri(ROOT "/Artist/Album/01-Track.mp3"),
			    "/protected/Artist/Album/01-Track.mp3");
}

static void test_root_with_trailing_slashes_is_the_same_root(void **state)
{
	(void)state;
	assert_string_equal(uri_with(PREFIX, ROOT "/", ROOT "/a/b.mp3"), "/protected/a/b.mp3");
	assert_string_equal(uri_with(PREFIX, ROOT "//", ROOT "/a/b.mp3"), "/protected/a/b.mp3");
}

static void test_root_of_a_lone_slash_holds_every_absolute_path(void **state)
{
	(void)state;
	assert_string_equal(uri_with(PREFIX, "/", "/srv/a.mp3"), "/protected/srv/a.mp3");
	assert_string_equal(uri_with(PREFIX, "/", "/a.mp3"), "/protected/a.mp3");
}

static void test_path_outside_the_root_gives_no_uri(void **state)
{
	(void)state;
	assert_string_equal(uri("/srv/other/a.mp3"), "");
	assert_string_equal(uri("/srv/a.mp3"), "");
	assert_string_equal(uri("/a.mp3"), "");
}

static void test_path_in_a_sibling_whose_name_starts_with_the_roots_gives_no_uri(void **state)
{
	(void)state;
	assert_string_equal(uri("/srv/musicians/a.mp3"), "");
	assert_string_equal(uri("/srv/music.mp3"), "");
}

static void test_the_root_itself_gives_no_uri(void **state)
{
	(void)state;
	assert_string_equal(uri(ROOT), "");
	assert_string_equal(uri(ROOT "/"), "");
	assert_string_equal(uri_with(PREFIX, "/", "/"), "");
}

static void test_relative_root_or_path_gives_no_uri(void **state)
{
	(void)state;
	assert_string_equal(uri_with(PREFIX, "srv/music", "srv/music/a.mp3"), "");
	assert_string_equal(uri_with(PREFIX, "/", "srv/a.mp3"), "");
	assert_string_equal(uri_with(PREFIX, "", "/srv/a.mp3"), "");
}

/* Percent-encoding */

static void test_unreserved_characters_are_kept(void **state)
{
	(void)state;
	assert_string_equal(uri(ROOT "/azAZ09-._~.mp3"), "/protected/azAZ09-._~.mp3");
}

static void test_sub_delimiters_colon_and_at_are_kept(void **state)
{
	(void)state;
	assert_string_equal(uri(ROOT "/!$&'()*+,;=:@.mp3"), "/protected/!$&'()*+,;=:@.mp3");
}

static void test_space_is_encoded(void **state)
{
	(void)state;
	assert_string_equal(uri(ROOT "/01 Intro.mp3"), "/protected/01%20Intro.mp3");
}

static void test_percent_is_encoded_so_nginx_unescapes_it_back(void **state)
{
	(void)state;
	assert_string_equal(uri(ROOT "/100% pure.mp3"), "/protected/100%25%20pure.mp3");
}

static void test_question_mark_and_hash_are_encoded(void **state)
{
	(void)state;
	/* Unencoded, nginx would take "?x" as arguments and "#" would end the path. */
	assert_string_equal(uri(ROOT "/why?x=1#frag.mp3"), "/protected/why%3Fx=1%23frag.mp3");
}

static void test_other_printable_ascii_outside_the_kept_set_is_encoded(void **state)
{
	(void)state;
	assert_string_equal(uri(ROOT "/\"<>\\^`{|}[]"),
			    "/protected/%22%3C%3E%5C%5E%60%7B%7C%7D%5B%5D");
}

static void test_control_bytes_are_encoded(void **state)
{
	(void)state;
	assert_string_equal(uri(ROOT "/a\r\nX-Injected: 1.mp3"),
			    "/protected/a%0D%0AX-Injected:%201.mp3");
	assert_string_equal(uri(ROOT "/\x01\t\x1f\x7f"), "/protected/%01%09%1F%7F");
}

static void test_non_ascii_bytes_are_encoded_each_in_upper_case_hex(void **state)
{
	(void)state;
	assert_string_equal(uri(ROOT "/Beyonc\xc3\xa9.mp3"), "/protected/Beyonc%C3%A9.mp3");
	assert_string_equal(uri(ROOT "/\x80\xff"), "/protected/%80%FF");
}

static void test_the_prefix_is_never_encoded_only_the_path(void **state)
{
	(void)state;
	assert_string_equal(uri_with("/a b/", ROOT "/x y", ROOT "/x y/c d"), "/a b/c%20d");
}

/* The buffer */

static void test_buffer_of_exactly_the_uri_and_its_nul_is_enough(void **state)
{
	(void)state;
	const char *expected = "/protected/a.mp3";
	size_t size = strlen(expected) + 1;
	char out[URI_MAX];
	assert_int_equal(offload_accel_uri(PREFIX, ROOT, ROOT "/a.mp3", out, size),
			 strlen(expected));
	assert_string_equal(out, expected);
}

static void test_buffer_one_byte_short_gives_no_uri(void **state)
{
	(void)state;
	size_t size = strlen("/protected/a.mp3");
	char out[URI_MAX];
	assert_int_equal(offload_accel_uri(PREFIX, ROOT, ROOT "/a.mp3", out, size), 0);
}

static void test_an_encoded_byte_is_never_cut_short(void **state)
{
	(void)state;
	const char *expected = "/protected/a%20";
	char out[URI_MAX];
	for (size_t size = strlen("/protected/a") + 1; size <= strlen(expected); size++)
		assert_int_equal(offload_accel_uri(PREFIX, ROOT, ROOT "/a ", out, size), 0);
	assert_int_equal(offload_accel_uri(PREFIX, ROOT, ROOT "/a ", out, strlen(expected) + 1),
			 strlen(expected));
	assert_string_equal(out, expected);
}

static void test_buffer_too_small_for_the_prefix_gives_no_uri(void **state)
{
	(void)state;
	char out[URI_MAX];
	assert_int_equal(offload_accel_uri(PREFIX, ROOT, ROOT "/a.mp3", out, strlen(PREFIX)), 0);
	assert_int_equal(offload_accel_uri(PREFIX, ROOT, ROOT "/a.mp3", out, 0), 0);
}

/* X-Sendfile values */

static void test_header_safe_accepts_printable_ascii_and_utf8(void **state)
{
	(void)state;
	assert_true(offload_header_safe("/srv/music/01 Intro (live) #2?.mp3"));
	assert_true(offload_header_safe("/srv/music/Beyonc\xc3\xa9.mp3"));
	assert_true(offload_header_safe(""));
}

static void test_header_safe_refuses_every_control_byte(void **state)
{
	(void)state;
	for (int c = 1; c < 0x20; c++) {
		char text[] = "/srv/a?b";
		text[6] = (char)c;
		if (offload_header_safe(text))
			fail_msg("control byte 0x%02x was taken as safe", c);
	}
	assert_false(offload_header_safe("/srv/a\x7f"));
	assert_false(offload_header_safe("/srv/a\r\nX-Injected: 1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefix_without_a_trailing_slash_gets_one),
		cmocka_unit_test(test_prefix_with_a_trailing_slash_gets_no_second_one),
		cmocka_unit_test(test_prefix_of_a_lone_slash_gives_the_path_from_the_top),
		cmocka_unit_test(test_empty_prefix_gives_the_path_from_the_top),
		cmocka_unit_test(test_prefix_is_copied_as_it_is),
		cmocka_unit_test(test_prefix_with_a_control_byte_gives_no_uri),
		cmocka_unit_test(test_subdirectories_below_the_root_are_kept),
		cmocka_unit_test(test_root_with_trailing_slashes_is_the_same_root),
		cmocka_unit_test(test_root_of_a_lone_slash_holds_every_absolute_path),
		cmocka_unit_test(test_path_outside_the_root_gives_no_uri),
		cmocka_unit_test(test_path_in_a_sibling_whose_name_starts_with_the_roots_gives_no_uri),
		cmocka_unit_test(test_the_root_itself_gives_no_uri),
		cmocka_unit_test(test_relative_root_or_path_gives_no_uri),
		cmocka_unit_test(test_unreserved_characters_are_kept),
		cmocka_unit_test(test_sub_delimiters_colon_and_at_are_kept),
		cmocka_unit_test(test_space_is_encoded),
		cmocka_unit_test(test_percent_is_encoded_so_nginx_unescapes_it_back),
		cmocka_unit_test(test_question_mark_and_hash_are_encoded),
		cmocka_unit_test(test_other_printable_ascii_outside_the_kept_set_is_encoded),
		cmocka_unit_test(test_control_bytes_are_encoded),
		cmocka_unit_test(test_non_ascii_bytes_are_encoded_each_in_upper_case_hex),
		cmocka_unit_test(test_the_prefix_is_never_encoded_only_the_path),
		cmocka_unit_test(test_buffer_of_exactly_the_uri_and_its_nul_is_enough),
		cmocka_unit_test(test_buffer_one_byte_short_gives_no_uri),
		cmocka_unit_test(test_an_encoded_byte_is_never_cut_short),
		cmocka_unit_test(test_buffer_too_small_for_the_prefix_gives_no_uri),
		cmocka_unit_test(test_header_safe_accepts_printable_ascii_and_utf8),
		cmocka_unit_test(test_header_safe_refuses_every_control_byte),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
