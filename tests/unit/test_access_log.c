/*
 * Unit tests for server/base/access_log.h: access_log_format writes one combined
 * log format line plus the response time, escaping client-supplied bytes
 * ('"', '\\', control bytes, bytes >= 0x7f) as \xHH and truncating a line too
 * long for the buffer while keeping its newline; access_log_write appends
 * those lines to a file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/access_log.h"
#include "base/log_writer.h"

/* RFC 9110's example instant: Sun, 06 Nov 1994 08:49:37 GMT. */
#define EXAMPLE_TIME 784111777
#define TRACK_TARGET "/musicdb/507f1f77bcf86cd799439011/song.mp3"
#define EXAMPLE_PREFIX "192.0.2.1 - - [06/Nov/1994:08:49:37 +0000] \"GET "

static struct access_entry example_entry(void)
{
	return (struct access_entry){
		.client = "192.0.2.1",
		.time = EXAMPLE_TIME,
		.method = "GET",
		.target = TRACK_TARGET,
		.http_major = 1,
		.http_minor = 1,
		.status = 200,
		.body_bytes = 1234,
		.referer = NULL,
		.user_agent = NULL,
		.seconds = 0.1234,
	};
}

/* Formats into a heap buffer of exactly out_size bytes so ASan sees any overrun; caller frees. */
static char *format_entry(const struct access_entry *entry, size_t out_size, size_t *length)
{
	char *out = malloc(out_size);
	assert_non_null(out);
	*length = access_log_format(out, out_size, entry);
	return out;
}

static void assert_line(const struct access_entry *entry, const char *expected)
{
	size_t length;
	char *line = format_entry(entry, ACCESS_LOG_LINE_MAX, &length);
	assert_string_equal(line, expected);
	assert_int_equal(length, strlen(expected));
	free(line);
}

/* A line cut short must still be one whole line inside the buffer. */
static void assert_truncated_line_fits(const struct access_entry *entry, size_t out_size)
{
	size_t length;
	char *line = format_entry(entry, out_size, &length);
	assert_true(length >= 1);
	assert_true(length < out_size);
	assert_int_equal(strlen(line), length);
	assert_int_equal(line[length - 1], '\n');
	assert_null(memchr(line, '\n', length - 1));
	free(line);
}

/* The line formats as expected_target in place of the example target. */
static void assert_target_logged_as(const char *target, const char *expected_target)
{
	struct access_entry entry = example_entry();
	entry.target = target;
	char expected[ACCESS_LOG_LINE_MAX];
	snprintf(expected, sizeof(expected),
		 EXAMPLE_PREFIX "%s HTTP/1.1\" 200 1234 \"-\" \"-\" 0.123\n", expected_target);
	assert_line(&entry, expected);
}

/* access_log_format: the line */

static void test_known_entry_gives_the_exact_line(void **state)
{
	(void)state;
	struct access_entry entry = example_entry();
	assert_line(&entry, "192.0.2.1 - - [06/Nov/1994:08:49:37 +0000] \"GET " TRACK_TARGET
			    " HTTP/1.1\" 200 1234 \"-\" \"-\" 0.123\n");
}

static void test_referer_and_user_agent_are_quoted(void **state)
{
	(void)state;
	struct access_entry entry = example_entry();
	entry.referer = "https://example.com/player";
	entry.user_agent = "Mozilla/5.0 (X11; Linux x86_64)";
	assert_line(&entry, EXAMPLE_PREFIX TRACK_TARGET " HTTP/1.1\" 200 1234 "
			    "\"https://example.com/player\" "
			    "\"Mozilla/5.0 (X11; Linux x86_64)\" 0.123\n");
}

static void test_absent_referer_and_user_agent_are_dashes(void **state)
{
	(void)state;
	struct access_entry entry = example_entry();
	entry.user_agent = "curl/8.0";
	assert_line(&entry,
		    EXAMPLE_PREFIX TRACK_TARGET " HTTP/1.1\" 200 1234 \"-\" \"curl/8.0\" 0.123\n");
	entry.referer = "http://a/";
	entry.user_agent = NULL;
	assert_line(&entry,
		    EXAMPLE_PREFIX TRACK_TARGET " HTTP/1.1\" 200 1234 \"http://a/\" \"-\" 0.123\n");
}

static void test_time_is_utc_with_two_digit_day(void **state)
{
	(void)state;
	struct access_entry entry = example_entry();
	entry.time = 0;
	assert_line(&entry, "192.0.2.1 - - [01/Jan/1970:00:00:00 +0000] \"GET " TRACK_TARGET
			    " HTTP/1.1\" 200 1234 \"-\" \"-\" 0.123\n");
}

static void test_method_version_status_and_bytes_are_logged(void **state)
{
	(void)state;
	struct access_entry entry = example_entry();
	entry.method = "HEAD";
	entry.http_minor = 0;
	entry.status = 206;
	entry.body_bytes = 5000000000ULL;
	assert_line(&entry, "192.0.2.1 - - [06/Nov/1994:08:49:37 +0000] \"HEAD " TRACK_TARGET
			    " HTTP/1.0\" 206 5000000000 \"-\" \"-\" 0.123\n");
}

static void test_no_request_line_is_a_dash(void **state)
{
	(void)state;
	struct access_entry entry = example_entry();
	entry.method = NULL; /* a 408 on a connection that sent nothing */
	entry.target = "-";
	entry.http_major = entry.http_minor = 0;
	entry.status = 408;
	entry.body_bytes = 0;
	assert_line(&entry,
		    "192.0.2.1 - - [06/Nov/1994:08:49:37 +0000] \"-\" 408 0 \"-\" \"-\" 0.123\n");
}

static void test_a_line_cut_before_its_version_is_logged_without_one(void **state)
{
	(void)state;
	struct access_entry entry = example_entry();
	entry.http_major = -1;
	entry.status = 408;
	entry.body_bytes = 0;
	assert_line(&entry, EXAMPLE_PREFIX TRACK_TARGET "\" 408 0 \"-\" \"-\" 0.123\n");
}

static void test_response_time_has_three_decimals(void **state)
{
	(void)state;
	const struct {
		double seconds;
		const char *text;
	} cases[] = {{0.0, "0.000"}, {0.0006, "0.001"}, {0.25, "0.250"}, {12.3456, "12.346"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct access_entry entry = example_entry();
		entry.seconds = cases[i].seconds;
		char expected[ACCESS_LOG_LINE_MAX];
		snprintf(expected, sizeof(expected),
			 EXAMPLE_PREFIX TRACK_TARGET " HTTP/1.1\" 200 1234 \"-\" \"-\" %s\n",
			 cases[i].text);
		assert_line(&entry, expected);
	}
}

/* access_log_format: escaping */

static void test_double_quote_is_escaped(void **state)
{
	(void)state;
	assert_target_logged_as("/a\"b", "/a\\x22b");
}

static void test_backslash_is_escaped(void **state)
{
	(void)state;
	assert_target_logged_as("/a\\b", "/a\\x5Cb");
}

static void test_control_bytes_are_escaped(void **state)
{
	(void)state;
	assert_target_logged_as("/a\nb\rc\td\x01" "e\x1b" "f\x1f",
				"/a\\x0Ab\\x0Dc\\x09d\\x01e\\x1Bf\\x1F");
}

static void test_bytes_from_0x7f_up_are_escaped(void **state)
{
	(void)state;
	assert_target_logged_as("/\x7f\x80\xc3\xa9\xff", "/\\x7F\\x80\\xC3\\xA9\\xFF");
}

static void test_printable_ascii_is_not_escaped(void **state)
{
	(void)state;
	const char printable[] = "/a b~!#$%&'()*+,-./:;<=>?@[]^_`{|}";
	assert_target_logged_as(printable, printable);
}

static void test_method_referer_and_user_agent_are_escaped(void **state)
{
	(void)state;
	struct access_entry entry = example_entry();
	entry.method = "G\"T";
	entry.referer = "r\"\n";
	entry.user_agent = "ua\\\x7f";
	assert_line(&entry, "192.0.2.1 - - [06/Nov/1994:08:49:37 +0000] \"G\\x22T " TRACK_TARGET
			    " HTTP/1.1\" 200 1234 \"r\\x22\\x0A\" \"ua\\x5C\\x7F\" 0.123\n");
}

/* access_log_format: truncation */

static void test_very_long_target_is_truncated_to_one_line(void **state)
{
	(void)state;
	size_t target_length = 3 * ACCESS_LOG_LINE_MAX;
	char *target = malloc(target_length + 1);
	assert_non_null(target);
	target[0] = '/';
	memset(target + 1, 'a', target_length - 1);
	target[target_length] = '\0';
	struct access_entry entry = example_entry();
	entry.target = target;

	size_t length;
	char *line = format_entry(&entry, ACCESS_LOG_LINE_MAX, &length);
	assert_int_equal(length, ACCESS_LOG_LINE_MAX - 1);
	assert_int_equal(strlen(line), length);
	assert_memory_equal(line, EXAMPLE_PREFIX "/aaaa", strlen(EXAMPLE_PREFIX "/aaaa"));
	assert_int_equal(line[length - 1], '\n');
	free(line);
	free(target);
}

static void test_long_target_of_escaped_bytes_is_truncated_to_one_line(void **state)
{
	(void)state;
	char target[ACCESS_LOG_LINE_MAX * 2];
	memset(target, '"', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	struct access_entry entry = example_entry();
	entry.target = target;
	entry.user_agent = target;
	assert_truncated_line_fits(&entry, ACCESS_LOG_LINE_MAX);
}

static void test_line_fits_every_small_buffer(void **state)
{
	(void)state;
	struct access_entry entry = example_entry();
	entry.target = "/\"\\\x01\xff-escaped-target";
	entry.referer = "http://example.com/\"";
	entry.user_agent = "agent\\";
	size_t full_length;
	free(format_entry(&entry, ACCESS_LOG_LINE_MAX, &full_length));
	for (size_t out_size = 2; out_size <= full_length + 1; out_size++)
		assert_truncated_line_fits(&entry, out_size);
}

/* access_log_open / access_log_write */

static void test_write_appends_one_line_per_entry(void **state)
{
	(void)state;
	char path[] = "/tmp/musicd-test-access-log.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "earlier\n", 8), 8);
	close(fd);

	char error[256] = "";
	struct access_log *log = access_log_open(path, error, sizeof(error));
	assert_non_null(log);
	struct access_entry entry = example_entry();
	access_log_write(log, &entry);
	entry.status = 404;
	access_log_write(log, &entry);
	assert_int_equal(access_log_flush(log, 5000), 0);
	access_log_close(log);
	assert_int_equal(log_writer_wait_released(5000), 0); /* closed the file */

	char expected[3 * ACCESS_LOG_LINE_MAX];
	snprintf(expected, sizeof(expected),
		 "earlier\n" EXAMPLE_PREFIX TRACK_TARGET " HTTP/1.1\" 200 1234 \"-\" \"-\" 0.123\n"
		 EXAMPLE_PREFIX TRACK_TARGET " HTTP/1.1\" 404 1234 \"-\" \"-\" 0.123\n");
	char contents[sizeof(expected)];
	FILE *file = fopen(path, "r");
	assert_non_null(file);
	size_t read = fread(contents, 1, sizeof(contents) - 1, file);
	contents[read] = '\0';
	fclose(file);
	unlink(path);
	assert_string_equal(contents, expected);
}

static void test_open_of_an_unwritable_path_fails_with_a_message(void **state)
{
	(void)state;
	char error[256] = "";
	const char *path = "/nonexistent-musicd-dir/access.log";
	struct access_log *log = access_log_open(path, error, sizeof(error));
	assert_null(log);
	/* The component that is missing is named. */
	assert_string_equal(error, "access log /nonexistent-musicd-dir/access.log: "
				   "nonexistent-musicd-dir: No such file or directory");
}

static void test_write_to_a_null_log_does_nothing(void **state)
{
	(void)state;
	struct access_entry entry = example_entry();
	access_log_write(NULL, &entry);
	access_log_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_entry_gives_the_exact_line),
		cmocka_unit_test(test_referer_and_user_agent_are_quoted),
		cmocka_unit_test(test_absent_referer_and_user_agent_are_dashes),
		cmocka_unit_test(test_time_is_utc_with_two_digit_day),
		cmocka_unit_test(test_method_version_status_and_bytes_are_logged),
		cmocka_unit_test(test_no_request_line_is_a_dash),
		cmocka_unit_test(test_a_line_cut_before_its_version_is_logged_without_one),
		cmocka_unit_test(test_response_time_has_three_decimals),
		cmocka_unit_test(test_double_quote_is_escaped),
		cmocka_unit_test(test_backslash_is_escaped),
		cmocka_unit_test(test_control_bytes_are_escaped),
		cmocka_unit_test(test_bytes_from_0x7f_up_are_escaped),
		cmocka_unit_test(test_printable_ascii_is_not_escaped),
		cmocka_unit_test(test_method_referer_and_user_agent_are_escaped),
		cmocka_unit_test(test_very_long_target_is_truncated_to_one_line),
		cmocka_unit_test(test_long_target_of_escaped_bytes_is_truncated_to_one_line),
		cmocka_unit_test(test_line_fits_every_small_buffer),
		cmocka_unit_test(test_write_appends_one_line_per_entry),
		cmocka_unit_test(test_open_of_an_unwritable_path_fails_with_a_message),
		cmocka_unit_test(test_write_to_a_null_log_does_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
