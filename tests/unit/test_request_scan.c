/*
 * Unit tests for server/http/request_scan.h: which requests the scan hands on
 * to evhttp, which it refuses and with what status, where each request's
 * head ends, and that a chunked body reaches evhttp without its extensions,
 * whatever way the bytes are cut into reads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/request_scan.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))
#define MAX_HEAD 1024
#define MAX_BODY 64

struct outcome {
	int refusal;		/* 0: none */
	unsigned heads;		/* SCAN_HEAD_DONE events */
	unsigned began;		/* SCAN_MESSAGE_BEGAN events */
	char out[4096];		/* what was handed on */
	size_t out_length;
};

/* Feeds text in pieces of piece bytes (0: all at once), the output always asked for. */
static struct outcome scan_in_pieces(const char *text, size_t length, size_t piece)
{
	struct request_scan scan;
	struct request_scan_limits limits = {MAX_HEAD, MAX_BODY};
	struct outcome result = {0};
	request_scan_init(&scan, &limits);
	size_t done = 0;
	while (done < length) {
		size_t size = piece == 0 || length - done < piece ? length - done : piece;
		size_t fed = 0;
		while (fed < size) {
			struct scan_step step = request_scan_feed(&scan, text + done + fed, size - fed,
								  result.out + result.out_length);
			fed += step.consumed;
			result.out_length += step.produced;
			if (step.event == SCAN_HEAD_DONE)
				result.heads++;
			if (step.event == SCAN_MESSAGE_BEGAN)
				result.began++;
			if (step.event == SCAN_REFUSED) {
				result.refusal = scan.refusal;
				return result;
			}
			if (step.consumed == 0)
				fail_msg("no progress at %zu", done + fed);
		}
		done += size;
	}
	return result;
}

/* The same outcome however the bytes are cut: one read, two, or one byte at a time. */
static struct outcome scan_every_way(const char *text, size_t length)
{
	struct outcome whole = scan_in_pieces(text, length, 0);
	for (size_t piece = 1; piece <= 7; piece++) {
		struct outcome cut = scan_in_pieces(text, length, piece);
		assert_int_equal(cut.refusal, whole.refusal);
		assert_int_equal(cut.heads, whole.heads);
		assert_int_equal(cut.out_length, whole.out_length);
		assert_memory_equal(cut.out, whole.out, whole.out_length);
	}
	return whole;
}

static void assert_refused(const char *text, int status)
{
	struct outcome result = scan_every_way(text, strlen(text));
	if (result.refusal != status)
		fail_msg("%d (want %d) for:\n%s", result.refusal, status, text);
}

static void assert_accepted(const char *text, unsigned heads)
{
	struct outcome result = scan_every_way(text, strlen(text));
	if (result.refusal != 0 || result.heads != heads)
		fail_msg("refused %d, %u heads (want %u) for:\n%s", result.refusal, result.heads, heads,
			 text);
	assert_int_equal(result.out_length, strlen(text));
	assert_memory_equal(result.out, text, strlen(text));
}

#define GET_HEAD "GET /musicdb/a/b.mp3 HTTP/1.1\r\nHost: h\r\n"

static void test_ordinary_requests_pass_unchanged(void **state)
{
	(void)state;
	assert_accepted(GET_HEAD "\r\n", 1);
	assert_accepted("GET / HTTP/1.0\r\n\r\n", 1);
	assert_accepted("HEAD /x?y=1&z HTTP/1.1\r\nHost: a.b:8080\r\nRange: bytes=0-1\r\n\r\n", 1);
	assert_accepted("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", 1);
	assert_accepted("GET / HTTP/1.2\r\nHost: [::1]:80\r\n\r\n", 1);
	assert_accepted("GET / HTTP/1.1\r\nHost:\r\n\r\n", 1); /* empty: a URI with no authority */
}

static void test_pipelined_requests_are_each_seen(void **state)
{
	(void)state;
	struct outcome result = scan_every_way(GET_HEAD "\r\n" GET_HEAD "\r\n" GET_HEAD "\r\n",
					       strlen(GET_HEAD) * 3 + 6);
	assert_int_equal(result.refusal, 0);
	assert_int_equal(result.heads, 3);
	assert_int_equal(result.began, 3);
}

static void test_bare_lf_heads_are_read_as_evhttp_reads_them(void **state)
{
	(void)state;
	assert_accepted("GET / HTTP/1.1\nHost: h\n\n", 1);
}

static void test_whitespace_before_the_colon_is_400(void **state)
{
	(void)state;
	assert_refused("POST / HTTP/1.1\r\nHost: h\r\nContent-Length : 5\r\n\r\nGET /", 400);
	assert_refused("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding\t: chunked\r\n\r\n", 400);
}

static void test_an_empty_or_malformed_field_name_is_400(void **state)
{
	(void)state;
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\n: value\r\n\r\n", 400);
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\nno-colon\r\n\r\n", 400);
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\nna(me: v\r\n\r\n", 400);
}

static void test_a_nul_or_a_bare_cr_is_400(void **state)
{
	(void)state;
	const char with_nul[] = "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\0b\r\n\r\n";
	struct outcome result = scan_every_way(with_nul, sizeof(with_nul) - 1);
	assert_int_equal(result.refusal, 400);
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n", 400);
	assert_refused("GET / HTTP/1.1\rHost: h\r\n\r\n", 400);
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\n\r\r\n", 400);
}

static void test_obs_fold_is_400(void **state)
{
	(void)state;
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b\r\n\r\n", 400);
	assert_refused("GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400);
}

static void test_host_rules(void **state)
{
	(void)state;
	assert_refused("GET / HTTP/1.1\r\n\r\n", 400);			      /* none */
	assert_refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400); /* two */
	assert_refused("GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n", 400);
	assert_refused("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400);
	assert_refused("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400);
	assert_accepted("GET / HTTP/1.1\r\nHost:   a.example  \r\n\r\n", 1);
	assert_accepted("GET / HTTP/1.0\r\n\r\n", 1); /* HTTP/1.0 needs none */
}

static void test_versions(void **state)
{
	(void)state;
	/* As nginx answers each (tests/integration/test_wire.py asks it too). */
	const char *bad[] = {"HTTP/-1.1", "HTTP/1.-1", "HTTP/1.",   "HTTP/.1",  "HTTP/1.1000",
			     "http/1.1",  "HTTP/1,1",  "HTTP1.1",   "HTTP/0.0", "HTTP/",
			     "HTTP/01.1", "HTTP/1.1a", "HTTP/0.9"};
	for (size_t i = 0; i < COUNT(bad); i++) {
		char text[128];
		snprintf(text, sizeof(text), "GET / %s\r\nHost: h\r\n\r\n", bad[i]);
		assert_refused(text, 400);
	}
	assert_refused("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505);
	assert_refused("GET / HTTP/11.1\r\nHost: h\r\n\r\n", 505);
	assert_refused("GET / HTTP/1000.1\r\nHost: h\r\n\r\n", 505);
	assert_accepted("GET / HTTP/1.10\r\nHost: h\r\n\r\n", 1);
	assert_accepted("GET / HTTP/1.01\r\nHost: h\r\n\r\n", 1);
	assert_refused("GET /\r\n\r\n", 400); /* HTTP/0.9's request line */
}

static void test_request_line_shapes(void **state)
{
	(void)state;
	assert_refused("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	assert_refused("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400);
	assert_refused("\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	assert_refused("G(ET / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	assert_refused("GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	assert_refused("GET relative HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	assert_refused("GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n", 400);
}

static void test_absolute_form_targets(void **state)
{
	(void)state;
	assert_accepted("GET http://host/musicdb/x/a.mp3 HTTP/1.1\r\nHost: host\r\n\r\n", 1);
	assert_accepted("GET HTTPS://host:443?q HTTP/1.1\r\nHost: host\r\n\r\n", 1);
	assert_refused("GET http://user@host/ HTTP/1.1\r\nHost: host\r\n\r\n", 400);
	assert_refused("GET http://host:99999/ HTTP/1.1\r\nHost: host\r\n\r\n", 400);
	assert_refused("GET http:///x HTTP/1.1\r\nHost: host\r\n\r\n", 400);
	assert_refused("GET ftp://host/x HTTP/1.1\r\nHost: host\r\n\r\n", 400);
	assert_accepted("CONNECT host:443 HTTP/1.1\r\nHost: host\r\n\r\n", 1);
	assert_refused("CONNECT host HTTP/1.1\r\nHost: host\r\n\r\n", 400);
}

static void test_unknown_methods_are_501(void **state)
{
	(void)state;
	assert_refused("BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n", 501);
	assert_refused("get / HTTP/1.1\r\nHost: h\r\n\r\n", 501); /* methods are case-sensitive */
}

static void test_expect_other_than_100_continue_is_417(void **state)
{
	(void)state;
	assert_refused("POST / HTTP/1.1\r\nHost: h\r\nExpect: tea\r\nContent-Length: 1\r\n\r\nx", 417);
	assert_accepted("GET / HTTP/1.1\r\nHost: h\r\nExpect: tea\r\n\r\n", 1); /* no body */
	assert_accepted("GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\n\r\n", 1);
}

static void test_framing_rules_come_from_framing_c(void **state)
{
	(void)state;
	assert_refused("HEAD / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nabcde", 400);
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked"
		       "\r\n\r\n",
		       400);
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400);
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
		       400);
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\n", 400);
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 1\r\n\r\n", 400);
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n"
		       "Content-Length: 1\r\n\r\n",
		       400);
	assert_accepted("HEAD / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", 1);
}

static void test_a_length_body_is_skipped_to_the_next_request(void **state)
{
	(void)state;
	/* The body holds what looks like a request: it is data, not a second head. */
	assert_accepted("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 19\r\n\r\nGET /x HTTP/1.1\r\n\r\n"
			GET_HEAD "\r\n",
			2);
	assert_refused("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 65\r\n\r\n", 413);
}

static void test_a_chunked_body_is_checked_and_loses_its_extensions(void **state)
{
	(void)state;
	const char in[] = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
			  "5;a=b\r\nhello\r\n3 ; x\r\nabc\r\n0;end\r\nX-T: 1\r\n\r\n" GET_HEAD "\r\n";
	const char want[] = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
			    "5\r\nhello\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n" GET_HEAD "\r\n";
	struct outcome result = scan_every_way(in, sizeof(in) - 1);
	assert_int_equal(result.refusal, 0);
	assert_int_equal(result.heads, 2);
	assert_int_equal(result.out_length, sizeof(want) - 1);
	assert_memory_equal(result.out, want, sizeof(want) - 1);
}

static void test_malformed_chunks_are_400(void **state)
{
	(void)state;
	const char *bodies[] = {
		"0x5\r\nhello\r\n0\r\n\r\n", /* a C prefix */
		"+5\r\nhello\r\n0\r\n\r\n",  /* a sign */
		"5\nhello\r\n0\r\n\r\n",     /* a bare LF after the size */
		"5\r\nhello\n0\r\n\r\n",     /* and after the data */
		"5\r\nhelloX\r\n0\r\n\r\n",  /* data longer than its size */
		"\r\nhello\r\n0\r\n\r\n",    /* no size */
		"0\r\n\n",		     /* a bare LF ends the trailers */
		"0\r\n Folded: x\r\n\r\n",   /* obs-fold in a trailer */
		"0\r\nBad Name: x\r\n\r\n",
	};
	for (size_t i = 0; i < COUNT(bodies); i++) {
		char text[512];
		snprintf(text, sizeof(text),
			 "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n%s",
			 bodies[i]);
		assert_refused(text, 400);
	}
}

static void test_chunks_past_the_body_limit_are_413(void **state)
{
	(void)state;
	assert_refused("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n41\r\n", 413);
	assert_refused("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
		       "20\r\n................................\r\n21\r\n",
		       413);
	assert_refused("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
		       "ffffffffffffffff\r\n",
		       400); /* more digits than any size under the limit has */
}

static void test_a_head_past_the_limit_is_431_or_414_in_the_request_line(void **state)
{
	(void)state;
	char *text = malloc(MAX_HEAD + 100);
	snprintf(text, MAX_HEAD + 100, "GET /%0*d HTTP/1.1\r\nHost: h\r\n\r\n", MAX_HEAD, 0);
	assert_refused(text, 414);
	snprintf(text, MAX_HEAD + 100, "GET / HTTP/1.1\r\nHost: h\r\nX: %0*d\r\n\r\n", MAX_HEAD, 0);
	assert_refused(text, 431);
	free(text);
}

static void test_after_a_refusal_nothing_more_is_consumed(void **state)
{
	(void)state;
	struct request_scan scan;
	struct request_scan_limits limits = {MAX_HEAD, MAX_BODY};
	request_scan_init(&scan, &limits);
	const char text[] = "BAD( / HTTP/1.1\r\n\r\n";
	struct scan_step step = request_scan_feed(&scan, text, sizeof(text) - 1, NULL);
	assert_int_equal(step.event, SCAN_MESSAGE_BEGAN);
	step = request_scan_feed(&scan, text + step.consumed, sizeof(text) - 1 - step.consumed, NULL);
	assert_int_equal(step.event, SCAN_REFUSED);
	step = request_scan_feed(&scan, GET_HEAD, strlen(GET_HEAD), NULL);
	assert_int_equal(step.event, SCAN_REFUSED);
	assert_int_equal(step.consumed, 0);
	assert_int_equal(scan.refusal, 400);
	assert_int_equal(scan.messages, 1);
	assert_string_equal(scan.method, "BAD");
}

static void test_the_head_state_follows_the_bytes(void **state)
{
	(void)state;
	struct request_scan scan;
	struct request_scan_limits limits = {MAX_HEAD, MAX_BODY};
	request_scan_init(&scan, &limits);
	assert_false(request_scan_in_head(&scan));
	struct scan_step step = request_scan_feed(&scan, "GE", 2, NULL);
	assert_int_equal(step.event, SCAN_MESSAGE_BEGAN);
	assert_true(request_scan_in_head(&scan));
	step = request_scan_feed(&scan, "E", 1, NULL);
	step = request_scan_feed(&scan, "T / HTTP/1.1\r\nHost: h\r\n\r\n", 26, NULL);
	assert_int_equal(step.event, SCAN_HEAD_DONE);
	assert_false(request_scan_in_head(&scan));
	assert_string_equal(scan.target, "/");
	assert_int_equal(scan.http_minor, 1);
}

/* Feeds all of text to scan (stopping at a refusal); the heads completed. */
static unsigned feed_all(struct request_scan *scan, const char *text)
{
	size_t length = strlen(text), done = 0;
	unsigned heads = 0;
	while (done < length) {
		struct scan_step step = request_scan_feed(scan, text + done, length - done, NULL);
		done += step.consumed;
		heads += step.event == SCAN_HEAD_DONE;
		if (step.event == SCAN_REFUSED)
			break;
	}
	return heads;
}

static void test_a_scan_is_idle_only_between_messages(void **state)
{
	(void)state;
	struct request_scan scan;
	struct request_scan_limits limits = {MAX_HEAD, MAX_BODY};
	request_scan_init(&scan, &limits);
	assert_true(request_scan_idle(&scan));
	feed_all(&scan, "GET / HTTP/1.1\r\nHo");
	assert_false(request_scan_idle(&scan));
	feed_all(&scan, "st: h\r\n\r\n");
	assert_true(request_scan_idle(&scan));
	feed_all(&scan, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nab");
	assert_false(request_scan_idle(&scan)); /* its body is not all in */
	feed_all(&scan, "c");
	assert_true(request_scan_idle(&scan));
	feed_all(&scan, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n");
	assert_false(request_scan_idle(&scan));
	feed_all(&scan, "0\r\n\r\n");
	assert_true(request_scan_idle(&scan));
	feed_all(&scan, "GET / HTTP/1.1\r\n\r\n"); /* no Host: refused */
	assert_int_equal(scan.refusal, 400);
	assert_false(request_scan_idle(&scan));
}

static void test_an_idle_scan_reads_on_as_a_fresh_one(void **state)
{
	(void)state;
	const char *before[] = {
		GET_HEAD "\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\nab",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2;e=f\r\nab\r\n0\r\n\r\n",
	};
	const char *after[] = {
		GET_HEAD "\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nExpect: other\r\nContent-Length: 1\r\n\r\nx",
		"HEAD /x HTTP/1.0\r\n\r\n",
	};
	struct request_scan_limits limits = {MAX_HEAD, MAX_BODY};
	for (size_t i = 0; i < COUNT(before); i++) {
		for (size_t j = 0; j < COUNT(after); j++) {
			struct request_scan continued, fresh;
			request_scan_init(&continued, &limits);
			request_scan_init(&fresh, &limits);
			feed_all(&continued, before[i]);
			assert_true(request_scan_idle(&continued));
			unsigned heads = feed_all(&continued, after[j]);
			assert_int_equal(feed_all(&fresh, after[j]), heads);
			assert_int_equal(fresh.refusal, continued.refusal);
			assert_int_equal(fresh.messages, continued.messages - 1);
			assert_int_equal(request_scan_idle(&fresh), request_scan_idle(&continued));
			assert_string_equal(fresh.method, continued.method);
			assert_string_equal(fresh.target, continued.target);
			assert_int_equal(fresh.http_minor, continued.http_minor);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ordinary_requests_pass_unchanged),
		cmocka_unit_test(test_pipelined_requests_are_each_seen),
		cmocka_unit_test(test_bare_lf_heads_are_read_as_evhttp_reads_them),
		cmocka_unit_test(test_whitespace_before_the_colon_is_400),
		cmocka_unit_test(test_an_empty_or_malformed_field_name_is_400),
		cmocka_unit_test(test_a_nul_or_a_bare_cr_is_400),
		cmocka_unit_test(test_obs_fold_is_400),
		cmocka_unit_test(test_host_rules),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_request_line_shapes),
		cmocka_unit_test(test_absolute_form_targets),
		cmocka_unit_test(test_unknown_methods_are_501),
		cmocka_unit_test(test_expect_other_than_100_continue_is_417),
		cmocka_unit_test(test_framing_rules_come_from_framing_c),
		cmocka_unit_test(test_a_length_body_is_skipped_to_the_next_request),
		cmocka_unit_test(test_a_chunked_body_is_checked_and_loses_its_extensions),
		cmocka_unit_test(test_malformed_chunks_are_400),
		cmocka_unit_test(test_chunks_past_the_body_limit_are_413),
		cmocka_unit_test(test_a_head_past_the_limit_is_431_or_414_in_the_request_line),
		cmocka_unit_test(test_after_a_refusal_nothing_more_is_consumed),
		cmocka_unit_test(test_the_head_state_follows_the_bytes),
		cmocka_unit_test(test_a_scan_is_idle_only_between_messages),
		cmocka_unit_test(test_an_idle_scan_reads_on_as_a_fresh_one),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
