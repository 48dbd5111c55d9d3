/*
 * Unit tests for server/http/head.h: the exact bytes of response heads musicd
 * writes itself (status line, headers in their order, the Connection
 * header, no Content-Length for a 304), the per-file lines, and that a head
 * that does not fit is refused rather than cut.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/response_head.h"

#define DATE "Sun, 06 Nov 1994 08:49:37 GMT"

static struct response_head file_head(void)
{
	return (struct response_head){
		.http_minor = 1,
		.status = 200,
		.reason = "OK",
		.date = DATE,
		.content_type = "audio/mpeg",
		.has_length = 1,
		.content_length = 4001122,
		.file_lines = "Last-Modified: " DATE "\r\nETag: \"1-2\"\r\n",
		.accept_ranges = 1,
	};
}

/* Formats into a heap buffer of exactly size bytes, so ASan sees any overrun. */
static char *format(const struct response_head *head, size_t size, size_t *length)
{
	char *out = malloc(size + 1);
	assert_non_null(out);
	*length = response_head_format(out, size, head);
	out[*length] = '\0';
	return out;
}

static void test_file_head_exact_bytes(void **state)
{
	(void)state;
	struct response_head head = file_head();
	size_t length;
	char *text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_string_equal(text, "HTTP/1.1 200 OK\r\n"
				  "Server: musicd\r\n"
				  "Date: " DATE "\r\n"
				  "Content-Type: audio/mpeg\r\n"
				  "Content-Length: 4001122\r\n"
				  "Last-Modified: " DATE "\r\n"
				  "ETag: \"1-2\"\r\n"
				  "Accept-Ranges: bytes\r\n"
				  "\r\n");
	assert_int_equal(length, strlen(text));
	free(text);
}

static void test_range_head_carries_content_range(void **state)
{
	(void)state;
	struct response_head head = file_head();
	head.status = 206;
	head.reason = "Partial Content";
	head.content_length = 2;
	head.content_range = "bytes 0-1/4001122";
	size_t length;
	char *text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_non_null(strstr(text, "HTTP/1.1 206 Partial Content\r\n"));
	assert_non_null(strstr(text, "\r\nContent-Length: 2\r\nContent-Range: bytes 0-1/4001122\r\n"));
	free(text);
}

static void test_not_modified_has_no_length_and_no_type(void **state)
{
	(void)state;
	struct response_head head = {.http_minor = 1, .status = 304, .reason = "Not Modified", .date = DATE,
			    .file_lines = "ETag: \"1-2\"\r\n"};
	size_t length;
	char *text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_string_equal(text, "HTTP/1.1 304 Not Modified\r\nServer: musicd\r\nDate: " DATE
				  "\r\nETag: \"1-2\"\r\n\r\n");
	free(text);
}

static void test_zero_length_is_written(void **state)
{
	(void)state;
	struct response_head head = file_head();
	head.content_length = 0;
	size_t length;
	char *text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_non_null(strstr(text, "\r\nContent-Length: 0\r\n"));
	free(text);
}

static void test_largest_length_is_written_in_full(void **state)
{
	(void)state;
	struct response_head head = file_head();
	head.content_length = UINT64_MAX;
	size_t length;
	char *text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_non_null(strstr(text, "\r\nContent-Length: 18446744073709551615\r\n"));
	free(text);
}

static void test_http_1_0_request_gets_an_http_1_0_status_line(void **state)
{
	(void)state;
	struct response_head head = file_head();
	head.http_minor = 0;
	size_t length;
	char *text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_memory_equal(text, "HTTP/1.0 200 OK\r\n", 17);
	free(text);
}

static void test_connection_close_and_keep_alive_lines(void **state)
{
	(void)state;
	struct response_head head = file_head();
	size_t length;
	head.connection = RESPONSE_CONNECTION_CLOSE;
	char *text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_non_null(strstr(text, "\r\nConnection: close\r\n\r\n"));
	free(text);
	head.connection = RESPONSE_CONNECTION_KEEP_ALIVE;
	text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_non_null(strstr(text, "\r\nConnection: keep-alive\r\n\r\n"));
	free(text);
	head.connection = RESPONSE_CONNECTION_NONE;
	text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_null(strstr(text, "Connection:"));
	free(text);
}

static void test_fields_come_in_order_before_the_blank_line(void **state)
{
	(void)state;
	struct response_head head = file_head();
	assert_int_equal(response_head_add(&head, "Allow", "GET, HEAD"), 0);
	assert_int_equal(response_head_add(&head, "Retry-After", "5"), 0);
	size_t length;
	char *text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_non_null(strstr(text, "\r\nAllow: GET, HEAD\r\nRetry-After: 5\r\n\r\n"));
	free(text);
}

static void test_no_more_fields_than_the_limit(void **state)
{
	(void)state;
	struct response_head head = file_head();
	for (int i = 0; i < RESPONSE_FIELDS_MAX; i++)
		assert_int_equal(response_head_add(&head, "X-A", "b"), 0);
	assert_int_equal(response_head_add(&head, "X-A", "b"), -1);
	assert_int_equal(head.field_count, RESPONSE_FIELDS_MAX);
}

static void test_value_with_a_line_break_refuses_the_whole_head(void **state)
{
	(void)state;
	const char *values[] = {"no-store\r\nSet-Cookie: x=1", "a\nb", "a\rb", "a\x01", "a\x7f"};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		struct response_head head = file_head();
		response_head_add(&head, "Cache-Control", values[i]);
		size_t length;
		char *text = format(&head, RESPONSE_HEAD_MAX, &length);
		assert_int_equal(length, 0);
		free(text);
	}
	struct response_head head = file_head();
	head.content_type = "audio/mpeg\r\nX: y";
	size_t length;
	char *text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_int_equal(length, 0);
	free(text);
}

static void test_value_with_a_tab_is_kept(void **state)
{
	(void)state;
	struct response_head head = file_head();
	response_head_add(&head, "X-Note", "a\tb");
	size_t length;
	char *text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_non_null(strstr(text, "\r\nX-Note: a\tb\r\n"));
	free(text);
}

static void test_long_field_that_does_not_fit_refuses_the_head(void **state)
{
	(void)state;
	char *value = malloc(RESPONSE_HEAD_MAX);
	assert_non_null(value);
	memset(value, 'a', RESPONSE_HEAD_MAX - 1);
	value[RESPONSE_HEAD_MAX - 1] = '\0';
	struct response_head head = file_head();
	response_head_add(&head, "Cache-Control", value);
	response_head_add(&head, "Allow", "GET, HEAD");
	size_t length;
	char *text = format(&head, RESPONSE_HEAD_MAX, &length);
	assert_int_equal(length, 0);
	free(text);
	free(value);
}

static void test_head_that_does_not_fit_is_refused_at_every_size(void **state)
{
	(void)state;
	struct response_head head = file_head();
	size_t full;
	char *text = format(&head, RESPONSE_HEAD_MAX, &full);
	free(text);
	for (size_t size = 0; size < full; size++) {
		size_t length;
		char *cut = format(&head, size, &length);
		assert_int_equal(length, 0);
		free(cut);
	}
	size_t length;
	text = format(&head, full, &length);
	assert_int_equal(length, full);
	free(text);
}

static void test_file_lines_exact_bytes_with_and_without_cache_control(void **state)
{
	(void)state;
	char out[256];
	size_t length = response_head_file_lines(out, sizeof(out), DATE, "\"a-b\"", "public, max-age=60");
	assert_string_equal(out, "Last-Modified: " DATE "\r\nETag: \"a-b\"\r\n"
				 "Cache-Control: public, max-age=60\r\n");
	assert_int_equal(length, strlen(out));
	length = response_head_file_lines(out, sizeof(out), DATE, "\"a-b\"", NULL);
	assert_string_equal(out, "Last-Modified: " DATE "\r\nETag: \"a-b\"\r\n");
}

static void test_file_lines_refuse_an_unsafe_cache_control(void **state)
{
	(void)state;
	char out[256];
	assert_int_equal(response_head_file_lines(out, sizeof(out), DATE, "\"a-b\"", "public\r\nX: y"), 0);
}

static void test_file_lines_need_room_for_their_terminator(void **state)
{
	(void)state;
	char out[256];
	size_t full = response_head_file_lines(out, sizeof(out), DATE, "\"a-b\"", NULL);
	assert_int_equal(response_head_file_lines(out, full, DATE, "\"a-b\"", NULL), 0);
	assert_int_equal(response_head_file_lines(out, full + 1, DATE, "\"a-b\"", NULL), full);
}

static void test_content_range_is_written_in_full(void **state)
{
	(void)state;
	char out[80];
	assert_int_equal(response_content_range(out, sizeof(out), 0, 1, 20000), strlen("bytes 0-1/20000"));
	assert_string_equal(out, "bytes 0-1/20000");
	assert_int_not_equal(response_content_range(out, sizeof(out), UINT64_MAX - 1, UINT64_MAX - 1,
						    UINT64_MAX), 0);
	assert_string_equal(out, "bytes 18446744073709551614-18446744073709551614/"
				 "18446744073709551615");
}

static void test_content_range_that_does_not_fit_is_refused(void **state)
{
	(void)state;
	char out[16];
	/* "bytes 0-1/20000" is 15 bytes: it fits with its NUL, and not in one byte less. */
	assert_int_equal(response_content_range(out, 16, 0, 1, 20000), 15);
	assert_int_equal(response_content_range(out, 15, 0, 1, 20000), 0);
}

static void assert_error_body(int status, const char *why, const char *expected)
{
	char body[RESPONSE_ERROR_BODY_SIZE];
	memset(body, 'x', sizeof(body));
	assert_int_equal(response_error_body(body, status, why), strlen(expected));
	assert_string_equal(body, expected);
}

static void test_error_body_is_the_status_line_without_a_why(void **state)
{
	(void)state;
	assert_error_body(404, NULL, "404 Not Found\n");
	assert_error_body(429, NULL, "429 Too Many Requests\n");
}

static void test_error_body_says_why_on_the_same_line(void **state)
{
	(void)state;
	assert_error_body(400, "the track id must be 24 hexadecimal digits",
			  "400 Bad Request: the track id must be 24 hexadecimal digits\n");
}

static void test_error_body_leaves_out_a_why_it_cannot_hold_whole(void **state)
{
	(void)state;
	char longest[RESPONSE_ERROR_BODY_SIZE];
	size_t room = RESPONSE_ERROR_BODY_SIZE - strlen("400 Bad Request: \n") - 1;
	memset(longest, 'a', room);
	longest[room] = '\0';
	char expected[2 * RESPONSE_ERROR_BODY_SIZE];
	snprintf(expected, sizeof(expected), "400 Bad Request: %s\n", longest);
	assert_error_body(400, longest, expected); /* exactly fits */
	char longer[RESPONSE_ERROR_BODY_SIZE + 1];
	memset(longer, 'a', room + 1);
	longer[room + 1] = '\0';
	assert_error_body(400, longer, "400 Bad Request\n"); /* one more: left out, not cut */
	assert_error_body(400, "two\nlines", "400 Bad Request\n");
	assert_error_body(400, "a \x1b[31m colour", "400 Bad Request\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_head_exact_bytes),
		cmocka_unit_test(test_range_head_carries_content_range),
		cmocka_unit_test(test_not_modified_has_no_length_and_no_type),
		cmocka_unit_test(test_zero_length_is_written),
		cmocka_unit_test(test_largest_length_is_written_in_full),
		cmocka_unit_test(test_http_1_0_request_gets_an_http_1_0_status_line),
		cmocka_unit_test(test_connection_close_and_keep_alive_lines),
		cmocka_unit_test(test_fields_come_in_order_before_the_blank_line),
		cmocka_unit_test(test_no_more_fields_than_the_limit),
		cmocka_unit_test(test_value_with_a_line_break_refuses_the_whole_head),
		cmocka_unit_test(test_value_with_a_tab_is_kept),
		cmocka_unit_test(test_long_field_that_does_not_fit_refuses_the_head),
		cmocka_unit_test(test_head_that_does_not_fit_is_refused_at_every_size),
		cmocka_unit_test(test_file_lines_exact_bytes_with_and_without_cache_control),
		cmocka_unit_test(test_file_lines_need_room_for_their_terminator),
		cmocka_unit_test(test_file_lines_refuse_an_unsafe_cache_control),
		cmocka_unit_test(test_content_range_is_written_in_full),
		cmocka_unit_test(test_content_range_that_does_not_fit_is_refused),
		cmocka_unit_test(test_error_body_is_the_status_line_without_a_why),
		cmocka_unit_test(test_error_body_says_why_on_the_same_line),
		cmocka_unit_test(test_error_body_leaves_out_a_why_it_cannot_hold_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
