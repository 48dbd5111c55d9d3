/*
 * Unit tests for server/media/containment.h: containment_find_root gives the index
 * of the first media root that strictly contains a canonical absolute path
 * (component-wise, so "/music2" is not inside "/music"), or -1;
 * containment_is_canonical rejects relative paths and ".", ".." or empty
 * segments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "media/containment.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static int find_in_music(const char *path)
{
	static const char *const roots[] = {"/music"};
	return containment_find_root(roots, COUNT(roots), path);
}

/* containment_find_root */

static void test_file_directly_in_root_is_inside(void **state)
{
	(void)state;
	assert_int_equal(find_in_music("/music/a.mp3"), 0);
}

static void test_file_deep_in_root_is_inside(void **state)
{
	(void)state;
	assert_int_equal(find_in_music("/music/artist/album/01 track.mp3"), 0);
}

static void test_root_itself_is_not_inside(void **state)
{
	(void)state;
	assert_int_equal(find_in_music("/music"), -1);
}

static void test_sibling_sharing_a_name_prefix_is_not_inside(void **state)
{
	(void)state;
	assert_int_equal(find_in_music("/music2/a.mp3"), -1);
	assert_int_equal(find_in_music("/music2"), -1);
	assert_int_equal(find_in_music("/musicx"), -1);
}

static void test_parent_and_unrelated_paths_are_not_inside(void **state)
{
	(void)state;
	assert_int_equal(find_in_music("/"), -1);
	assert_int_equal(find_in_music("/etc/passwd"), -1);
	assert_int_equal(find_in_music("/mus"), -1);
}

static void test_root_nested_path_is_inside_only_below_it(void **state)
{
	(void)state;
	static const char *const roots[] = {"/srv/media/music"};
	assert_int_equal(containment_find_root(roots, 1, "/srv/media/music/a.mp3"), 0);
	assert_int_equal(containment_find_root(roots, 1, "/srv/media/a.mp3"), -1);
	assert_int_equal(containment_find_root(roots, 1, "/srv/media/musical/a.mp3"), -1);
}

static void test_slash_root_contains_every_other_path(void **state)
{
	(void)state;
	static const char *const roots[] = {"/"};
	assert_int_equal(containment_find_root(roots, 1, "/a"), 0);
	assert_int_equal(containment_find_root(roots, 1, "/music/a.mp3"), 0);
}

static void test_slash_root_does_not_contain_itself(void **state)
{
	(void)state;
	static const char *const roots[] = {"/"};
	assert_int_equal(containment_find_root(roots, 1, "/"), -1);
}

static void test_several_roots_give_the_one_that_contains(void **state)
{
	(void)state;
	static const char *const roots[] = {"/music", "/podcasts", "/audiobooks"};
	assert_int_equal(containment_find_root(roots, COUNT(roots), "/music/a.mp3"), 0);
	assert_int_equal(containment_find_root(roots, COUNT(roots), "/podcasts/b.mp3"), 1);
	assert_int_equal(containment_find_root(roots, COUNT(roots), "/audiobooks/c/d.m4a"), 2);
	assert_int_equal(containment_find_root(roots, COUNT(roots), "/videos/e.mp4"), -1);
}

static void test_several_containing_roots_give_the_first(void **state)
{
	(void)state;
	static const char *const outer_first[] = {"/srv", "/srv/music"};
	static const char *const inner_first[] = {"/srv/music", "/srv"};
	assert_int_equal(containment_find_root(outer_first, 2, "/srv/music/a.mp3"), 0);
	assert_int_equal(containment_find_root(inner_first, 2, "/srv/music/a.mp3"), 0);
	assert_int_equal(containment_find_root(inner_first, 2, "/srv/other/a.mp3"), 1);
}

static void test_no_roots_contain_nothing(void **state)
{
	(void)state;
	assert_int_equal(containment_find_root(NULL, 0, "/music/a.mp3"), -1);
}

static void test_non_canonical_path_is_not_inside(void **state)
{
	(void)state;
	assert_int_equal(find_in_music("/music/../etc/passwd"), -1);
	assert_int_equal(find_in_music("/music/./a.mp3"), -1);
	assert_int_equal(find_in_music("/music//a.mp3"), -1);
	assert_int_equal(find_in_music("/music/a/"), -1);
	assert_int_equal(find_in_music("/music/.."), -1);
	assert_int_equal(find_in_music("music/a.mp3"), -1);
}

static void test_empty_and_null_paths_are_not_inside(void **state)
{
	(void)state;
	assert_int_equal(find_in_music(""), -1);
	assert_int_equal(find_in_music(NULL), -1);
}

static void test_non_canonical_root_contains_nothing(void **state)
{
	(void)state;
	static const char *const trailing_slash[] = {"/music/"};
	static const char *const dot_dot[] = {"/music/.."};
	static const char *const relative[] = {"music"};
	assert_int_equal(containment_find_root(trailing_slash, 1, "/music/a.mp3"), -1);
	assert_int_equal(containment_find_root(dot_dot, 1, "/music/../a.mp3"), -1);
	assert_int_equal(containment_find_root(dot_dot, 1, "/music/x/a.mp3"), -1);
	assert_int_equal(containment_find_root(relative, 1, "/music/a.mp3"), -1);
}

static void test_non_canonical_root_is_skipped_for_the_next(void **state)
{
	(void)state;
	static const char *const roots[] = {"/music/", "/music"};
	assert_int_equal(containment_find_root(roots, 2, "/music/a.mp3"), 1);
}

/* containment_is_canonical */

static void test_absolute_paths_without_dot_segments_are_canonical(void **state)
{
	(void)state;
	assert_true(containment_is_canonical("/"));
	assert_true(containment_is_canonical("/music"));
	assert_true(containment_is_canonical("/music/artist/a.mp3"));
}

static void test_names_containing_dots_are_canonical(void **state)
{
	(void)state;
	assert_true(containment_is_canonical("/music/.hidden"));
	assert_true(containment_is_canonical("/music/..."));
	assert_true(containment_is_canonical("/music/a..b"));
	assert_true(containment_is_canonical("/music/..a"));
	assert_true(containment_is_canonical("/music/a."));
}

static void test_dot_dot_segment_is_not_canonical(void **state)
{
	(void)state;
	assert_false(containment_is_canonical("/.."));
	assert_false(containment_is_canonical("/music/.."));
	assert_false(containment_is_canonical("/music/../etc"));
}

static void test_dot_segment_is_not_canonical(void **state)
{
	(void)state;
	assert_false(containment_is_canonical("/."));
	assert_false(containment_is_canonical("/music/."));
	assert_false(containment_is_canonical("/music/./a.mp3"));
}

static void test_empty_segment_is_not_canonical(void **state)
{
	(void)state;
	assert_false(containment_is_canonical("//"));
	assert_false(containment_is_canonical("//music"));
	assert_false(containment_is_canonical("/music//a.mp3"));
}

static void test_trailing_slash_is_not_canonical(void **state)
{
	(void)state;
	assert_false(containment_is_canonical("/music/"));
	assert_false(containment_is_canonical("/music/a/"));
}

static void test_relative_path_is_not_canonical(void **state)
{
	(void)state;
	assert_false(containment_is_canonical("music"));
	assert_false(containment_is_canonical("music/a.mp3"));
	assert_false(containment_is_canonical("./music"));
	assert_false(containment_is_canonical("."));
}

static void test_empty_and_null_paths_are_not_canonical(void **state)
{
	(void)state;
	assert_false(containment_is_canonical(""));
	assert_false(containment_is_canonical(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_directly_in_root_is_inside),
		cmocka_unit_test(test_file_deep_in_root_is_inside),
		cmocka_unit_test(test_root_itself_is_not_inside),
		cmocka_unit_test(test_sibling_sharing_a_name_prefix_is_not_inside),
		cmocka_unit_test(test_parent_and_unrelated_paths_are_not_inside),
		cmocka_unit_test(test_root_nested_path_is_inside_only_below_it),
		cmocka_unit_test(test_slash_root_contains_every_other_path),
		cmocka_unit_test(test_slash_root_does_not_contain_itself),
		cmocka_unit_test(test_several_roots_give_the_one_that_contains),
		cmocka_unit_test(test_several_containing_roots_give_the_first),
		cmocka_unit_test(test_no_roots_contain_nothing),
		cmocka_unit_test(test_non_canonical_path_is_not_inside),
		cmocka_unit_test(test_empty_and_null_paths_are_not_inside),
		cmocka_unit_test(test_non_canonical_root_contains_nothing),
		cmocka_unit_test(test_non_canonical_root_is_skipped_for_the_next),
		cmocka_unit_test(test_absolute_paths_without_dot_segments_are_canonical),
		cmocka_unit_test(test_names_containing_dots_are_canonical),
		cmocka_unit_test(test_dot_dot_segment_is_not_canonical),
		cmocka_unit_test(test_dot_segment_is_not_canonical),
		cmocka_unit_test(test_empty_segment_is_not_canonical),
		cmocka_unit_test(test_trailing_slash_is_not_canonical),
		cmocka_unit_test(test_relative_path_is_not_canonical),
		cmocka_unit_test(test_empty_and_null_paths_are_not_canonical),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
