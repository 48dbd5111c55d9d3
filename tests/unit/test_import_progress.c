/*
 * Unit tests for import/progress.h: the progress line of each stage, the rate
 * and the time left (only once a stage has run long enough), durations, the
 * line never wider than the terminal, the directory cut from its beginning
 * (counting wide characters as two columns, never cutting one in half),
 * escaped, or left out, and buffers too small refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "progress.h"

static const struct progress walking = {.stage = PROGRESS_WALKING,
					.found = 1200,
					.expected = 100000,
					.seconds = 0.5,
					.directory = "/srv/music/Artist/Album"};

static const struct progress reading = {.stage = PROGRESS_READING,
					.found = 10000,
					.done = 7120,
					.to_read = 3000,
					.read = 120,
					.seconds = 2.5,
					.directory = "/srv/music/B"};

static void test_loading_the_previous_imports_documents(void **state)
{
	(void)state;
	char line[PROGRESS_LINE_MAX];
	struct progress p = {.stage = PROGRESS_LOADING, .loaded = 41000, .seconds = 0.5};
	assert_int_equal(progress_format(&p, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "reading the collection: 41000 documents");
	p.seconds = 4;
	assert_int_equal(progress_format(&p, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "reading the collection: 41000 documents, 10250 documents/s");
	assert_int_equal(progress_format(&p, 30, line, sizeof(line)), 0);
	assert_string_equal(line, "reading the collection: 41000");
}

static void test_walking_before_the_time_left_can_be_told(void **state)
{
	(void)state;
	char line[PROGRESS_LINE_MAX];
	assert_int_equal(progress_format(&walking, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "walking: 1200 of about 100000 files found, /srv/music/Artist/Album");
}

static void test_walking_with_the_previous_count_tells_the_time_left(void **state)
{
	(void)state;
	struct progress p = walking;
	p.seconds = 2; /* 600 files/s: 98,800 more take 164.67 s */
	char line[PROGRESS_LINE_MAX];
	assert_int_equal(progress_format(&p, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "walking: 1200 of about 100000 files found, 600 files/s, 2:45 left, "
				  "/srv/music/Artist/Album");
}

static void test_walking_with_no_previous_count_or_past_it_tells_no_time_left(void **state)
{
	(void)state;
	char line[PROGRESS_LINE_MAX];
	struct progress p = walking;
	p.seconds = 3;
	p.expected = 0; /* a first import */
	assert_int_equal(progress_format(&p, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "walking: 1200 files found, 400 files/s, /srv/music/Artist/Album");
	p.expected = 1000; /* more files than the previous import left */
	assert_int_equal(progress_format(&p, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "walking: 1200 files found, 400 files/s, /srv/music/Artist/Album");
	p.expected = 1200; /* as many */
	assert_int_equal(progress_format(&p, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "walking: 1200 of about 1200 files found, 400 files/s, 0:00 left, "
				  "/srv/music/Artist/Album");
}

static void test_reading_tells_files_done_rate_and_time_left_of_the_files_read(void **state)
{
	(void)state;
	char line[PROGRESS_LINE_MAX];
	/* 120 read in 2.5 s: 48 files/s; 2,880 more take 60 s */
	assert_int_equal(progress_format(&reading, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "7120/10000 files, 48 files/s, 1:00 left, /srv/music/B");
}

static void test_reading_tells_no_time_left_before_a_file_is_read_no_rate_before_it_settles(
	void **state)
{
	(void)state;
	char line[PROGRESS_LINE_MAX];
	struct progress p = reading;
	p.read = 0;
	p.done = 7000;
	assert_int_equal(progress_format(&p, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "7000/10000 files, 0 files/s, /srv/music/B");
	p.read = 3;
	p.done = 7003;
	p.seconds = PROGRESS_SETTLE_SECONDS / 2;
	assert_int_equal(progress_format(&p, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "7003/10000 files, /srv/music/B");
	p.seconds = 0;
	p.directory = NULL;
	assert_int_equal(progress_format(&p, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "7003/10000 files");
}

static void test_durations(void **state)
{
	(void)state;
	char text[32];
	const struct {
		double seconds;
		const char *shown;
	} cases[] = {{0, "0:00"},	  {0.2, "0:01"},	   {59, "0:59"},
		     {60, "1:00"},	  {725, "12:05"},	   {3599.5, "1:00:00"},
		     {10927, "3:02:07"}, {360000, "100:00:00"}, {-5, "0:00"},
		     {1e300, "10000000:00:00"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(progress_format_duration(cases[i].seconds, text, sizeof(text)), 0);
		assert_string_equal(text, cases[i].shown);
	}
	assert_int_equal(progress_format_duration(3600, text, 7), -1);
}

static void test_a_long_directory_loses_its_beginning_to_fit_the_terminal(void **state)
{
	(void)state;
	char line[PROGRESS_LINE_MAX];
	struct progress p = reading;
	p.directory = "/srv/music/A very long artist name/An even longer album title (deluxe)";
	assert_int_equal(progress_format(&p, 80, line, sizeof(line)), 0);
	assert_int_equal(strlen(line), 79);
	assert_string_equal(line, "7120/10000 files, 48 files/s, 1:00 left, "
				  "...An even longer album title (deluxe)");
}

static void test_wide_characters_count_two_columns_and_are_never_cut_in_half(void **state)
{
	(void)state;
	char line[PROGRESS_LINE_MAX];
	struct progress p = reading;
	/* 日本語 are 3 bytes and 2 columns each; é is 2 bytes and 1 column. */
	p.directory = "/srv/music/\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5\xe6\x9c\xac/"
		      "caf\xc3\xa9";
	const char *head = "7120/10000 files, 48 files/s, 1:00 left, ";
	/* 60 columns: 59 usable, 41 for the head and ", ", 18 for "..." and 15 columns of the end. */
	assert_int_equal(progress_format(&p, 60, line, sizeof(line)), 0);
	assert_string_equal(line + strlen(head), "...\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5"
						 "\xe6\x9c\xac/caf\xc3\xa9");
	assert_int_equal(progress_text_columns(line, strlen(line)), 59);
	/* One column fewer: the first wide character no longer fits, and is not cut in half. */
	assert_int_equal(progress_format(&p, 59, line, sizeof(line)), 0);
	assert_string_equal(line + strlen(head),
			    "...\xe6\x9c\xac\xe8\xaa\x9e\xe6\x97\xa5\xe6\x9c\xac/caf\xc3\xa9");
	assert_int_equal(progress_text_columns(line, strlen(line)), 57);
}

static void test_text_columns(void **state)
{
	(void)state;
	assert_int_equal(progress_text_columns("abc", 3), 3);
	assert_int_equal(progress_text_columns("caf\xc3\xa9", 5), 4);		  /* é */
	assert_int_equal(progress_text_columns("\xe1\x84\x80", 3), 2);	  /* U+1100 */
	assert_int_equal(progress_text_columns("\xe0\xbf\xbf", 3), 1);	  /* U+0FFF */
	assert_int_equal(progress_text_columns("\xf0\x9f\x8e\xb5", 4), 2); /* U+1F3B5 */
}

static void test_control_characters_in_the_directory_are_escaped(void **state)
{
	(void)state;
	char line[PROGRESS_LINE_MAX];
	struct progress p = reading;
	p.directory = "/srv/\033[2Jmusic\r\xff";
	assert_int_equal(progress_format(&p, 120, line, sizeof(line)), 0);
	assert_string_equal(line, "7120/10000 files, 48 files/s, 1:00 left, "
				  "/srv/\\x1b[2Jmusic\\x0d\\xff");
}

static void test_a_narrow_terminal_leaves_the_directory_out_then_cuts_the_line(void **state)
{
	(void)state;
	char line[PROGRESS_LINE_MAX];
	struct progress p = reading;
	p.directory = "/srv/music/Artist/Album";
	/* 39 columns of head: the directory is shown, cut, while 2 + 12 columns are left for it */
	assert_int_equal(progress_format(&p, 56, line, sizeof(line)), 0);
	assert_string_equal(line, "7120/10000 files, 48 files/s, 1:00 left, ...rtist/Album");
	assert_int_equal(progress_format(&p, 54, line, sizeof(line)), 0);
	assert_string_equal(line, "7120/10000 files, 48 files/s, 1:00 left, ...ist/Album");
	assert_int_equal(progress_format(&p, 53, line, sizeof(line)), 0);
	assert_string_equal(line, "7120/10000 files, 48 files/s, 1:00 left");
	assert_int_equal(progress_format(&p, 20, line, sizeof(line)), 0);
	assert_string_equal(line, "7120/10000 files, 4");
}

static void test_an_unknown_or_huge_width_is_bounded(void **state)
{
	(void)state;
	char line[PROGRESS_LINE_MAX];
	char directory[3000];
	memset(directory, 'd', sizeof(directory) - 1);
	directory[0] = '/';
	directory[sizeof(directory) - 1] = '\0';
	struct progress p = reading;
	p.directory = directory;
	assert_int_equal(progress_format(&p, 0, line, sizeof(line)), 0);
	assert_int_equal(strlen(line), PROGRESS_DEFAULT_COLUMNS - 1);
	assert_int_equal(progress_format(&p, 65535, line, sizeof(line)), 0);
	assert_int_equal(strlen(line), PROGRESS_MAX_COLUMNS - 1);
}

static void test_short_buffers_are_refused(void **state)
{
	(void)state;
	char line[20];
	assert_int_equal(progress_format(&reading, 120, line, sizeof(line)), -1);
	assert_int_equal(progress_format(&walking, 120, line, sizeof(line)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loading_the_previous_imports_documents),
		cmocka_unit_test(test_walking_before_the_time_left_can_be_told),
		cmocka_unit_test(test_walking_with_the_previous_count_tells_the_time_left),
		cmocka_unit_test(test_walking_with_no_previous_count_or_past_it_tells_no_time_left),
		cmocka_unit_test(test_reading_tells_files_done_rate_and_time_left_of_the_files_read),
		cmocka_unit_test(
			test_reading_tells_no_time_left_before_a_file_is_read_no_rate_before_it_settles),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_a_long_directory_loses_its_beginning_to_fit_the_terminal),
		cmocka_unit_test(test_wide_characters_count_two_columns_and_are_never_cut_in_half),
		cmocka_unit_test(test_text_columns),
		cmocka_unit_test(test_control_characters_in_the_directory_are_escaped),
		cmocka_unit_test(test_a_narrow_terminal_leaves_the_directory_out_then_cuts_the_line),
		cmocka_unit_test(test_an_unknown_or_huge_width_is_bounded),
		cmocka_unit_test(test_short_buffers_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
