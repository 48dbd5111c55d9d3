/*
 * Unit tests for server/base/metrics_text.h: the Prometheus text (format 0.0.4)
 * of a snapshot. Every family carries its HELP and TYPE lines before its
 * samples; request counts appear per code and method only once counted;
 * histograms are cumulative with +Inf equal to the count; the error kinds
 * are always listed; each limit is a gauge of its own; the version label is
 * escaped; the process metrics appear only when read; and the formatter
 * never writes past its buffer, returning the length it needs as snprintf
 * does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/metrics_text.h"

#define TEXT_MAX (64 * 1024)
#define GUARD 0x5a

static char *format(const struct metrics_snapshot *snapshot)
{
	char *text = malloc(TEXT_MAX);
	assert_non_null(text);
	size_t length = metrics_text_format(snapshot, text, TEXT_MAX);
	assert_true(length < TEXT_MAX);
	assert_int_equal(strlen(text), length);
	return text;
}

static struct metrics_snapshot *empty(void)
{
	struct metrics_snapshot *snapshot = calloc(1, sizeof(*snapshot));
	assert_non_null(snapshot);
	snapshot->version = "1.2.3";
	return snapshot;
}

/* The line that starts with prefix, or a failure naming it. */
static const char *line_starting(const char *text, const char *prefix)
{
	size_t length = strlen(prefix);
	for (const char *line = text; *line != '\0';) {
		if (strncmp(line, prefix, length) == 0)
			return line;
		const char *next = strchr(line, '\n');
		if (next == NULL)
			break;
		line = next + 1;
	}
	fail_msg("no line starting with '%s' in:\n%s", prefix, text);
	return NULL;
}

/* The whole line (without its newline) equals expected. */
static void assert_line(const char *text, const char *expected)
{
	char with_newline[512];
	snprintf(with_newline, sizeof(with_newline), "\n%s\n", expected);
	if (strstr(text, with_newline) == NULL && strncmp(text, expected, strlen(expected)) != 0)
		fail_msg("no line '%s' in:\n%s", expected, text);
}

static void test_an_empty_snapshot_lists_every_family_with_help_and_type(void **state)
{
	(void)state;
	static const char *const families[][2] = {
		{"musicd_http_requests_total", "counter"},
		{"musicd_http_response_bytes_total", "counter"},
		{"musicd_http_first_byte_seconds", "histogram"},
		{"musicd_lookup_duration_seconds", "histogram"},
		{"musicd_lookups_in_flight", "gauge"},
		{"musicd_lookup_errors_total", "counter"},
		{"musicd_lookup_cache_hits_total", "counter"},
		{"musicd_lookup_cache_misses_total", "counter"},
		{"musicd_lookup_cache_evictions_total", "counter"},
		{"musicd_lookup_cache_entries", "gauge"},
		{"musicd_file_cache_hits_total", "counter"},
		{"musicd_file_cache_misses_total", "counter"},
		{"musicd_file_cache_evictions_total", "counter"},
		{"musicd_file_cache_entries", "gauge"},
		{"musicd_connections_open", "gauge"},
		{"musicd_connections_accepted_total", "counter"},
		{"musicd_connections_refused_total", "counter"},
		{"musicd_client_streams", "gauge"},
		{"musicd_client_streams_refused_total", "counter"},
		{"musicd_paced_responses_total", "counter"},
		{"musicd_database_up", "gauge"},
		{"musicd_url_signing_refusals_total", "counter"},
		{"musicd_connections_limit", "gauge"},
		{"musicd_lookup_threads", "gauge"},
		{"musicd_lookups_in_flight_limit", "gauge"},
		{"musicd_lookup_cache_entries_limit", "gauge"},
		{"musicd_file_cache_entries_limit", "gauge"},
		{"musicd_streams_per_client_limit", "gauge"},
		{"musicd_limit_rate_bytes_per_second", "gauge"},
		{"musicd_build_info", "gauge"},
	};
	struct metrics_snapshot *snapshot = empty();
	char *text = format(snapshot);
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		char help[128], type[128];
		snprintf(help, sizeof(help), "# HELP %s ", families[i][0]);
		snprintf(type, sizeof(type), "# TYPE %s %s\n", families[i][0], families[i][1]);
		const char *help_line = line_starting(text, help);
		const char *type_line = line_starting(text, type);
		/* TYPE right after HELP, before any sample of the family. */
		assert_ptr_equal(strchr(help_line, '\n') + 1, type_line);
	}
	assert_null(strstr(text, "musicd_http_requests_total{"));
	assert_null(strstr(text, "process_"));
	assert_int_equal(text[strlen(text) - 1], '\n');
	free(text);
	free(snapshot);
}

static void test_requests_appear_per_code_and_method_once_counted(void **state)
{
	(void)state;
	struct metrics_snapshot *snapshot = empty();
	snapshot->requests[200 - METRICS_STATUS_MIN][METRICS_METHOD_GET] = 7;
	snapshot->requests[206 - METRICS_STATUS_MIN][METRICS_METHOD_GET] = 2;
	snapshot->requests[200 - METRICS_STATUS_MIN][METRICS_METHOD_HEAD] = 1;
	snapshot->requests[405 - METRICS_STATUS_MIN][METRICS_METHOD_OTHER] = 3;
	snapshot->requests[499 - METRICS_STATUS_MIN][METRICS_METHOD_GET] = 1;
	char *text = format(snapshot);
	assert_line(text, "musicd_http_requests_total{code=\"200\",method=\"GET\"} 7");
	assert_line(text, "musicd_http_requests_total{code=\"200\",method=\"HEAD\"} 1");
	assert_line(text, "musicd_http_requests_total{code=\"206\",method=\"GET\"} 2");
	assert_line(text, "musicd_http_requests_total{code=\"405\",method=\"other\"} 3");
	assert_line(text, "musicd_http_requests_total{code=\"499\",method=\"GET\"} 1");
	size_t samples = 0;
	for (const char *at = text; (at = strstr(at, "\nmusicd_http_requests_total{")) != NULL; at++)
		samples++;
	assert_int_equal(samples, 5);
	free(text);
	free(snapshot);
}

static void test_a_histogram_is_cumulative_and_its_inf_bucket_is_its_count(void **state)
{
	(void)state;
	struct metrics_snapshot *snapshot = empty();
	snapshot->first_byte.buckets[0] = 4;		   /* <= 0.0005 */
	snapshot->first_byte.buckets[2] = 1;		   /* <= 0.0025 */
	snapshot->first_byte.buckets[METRICS_BUCKETS] = 2; /* beyond 10 s */
	snapshot->first_byte.sum_seconds = 25.0035;
	char *text = format(snapshot);
	assert_line(text, "musicd_http_first_byte_seconds_bucket{le=\"0.0005\"} 4");
	assert_line(text, "musicd_http_first_byte_seconds_bucket{le=\"0.001\"} 4");
	assert_line(text, "musicd_http_first_byte_seconds_bucket{le=\"0.0025\"} 5");
	assert_line(text, "musicd_http_first_byte_seconds_bucket{le=\"10\"} 5");
	assert_line(text, "musicd_http_first_byte_seconds_bucket{le=\"+Inf\"} 7");
	assert_line(text, "musicd_http_first_byte_seconds_sum 25.0035");
	assert_line(text, "musicd_http_first_byte_seconds_count 7");
	assert_line(text, "musicd_lookup_duration_seconds_count 0");
	free(text);
	free(snapshot);
}

static void test_a_bound_belongs_to_its_own_bucket(void **state)
{
	(void)state;
	assert_int_equal(metrics_bucket_of(0), 0);
	assert_int_equal(metrics_bucket_of(0.0005), 0);
	assert_int_equal(metrics_bucket_of(0.00051), 1);
	assert_int_equal(metrics_bucket_of(1), 10);
	assert_int_equal(metrics_bucket_of(10), METRICS_BUCKETS - 1);
	assert_int_equal(metrics_bucket_of(10.001), METRICS_BUCKETS);
	for (unsigned i = 1; i < METRICS_BUCKETS; i++)
		assert_true(metrics_bucket_bounds[i - 1] < metrics_bucket_bounds[i]);
}

static void test_every_lookup_error_kind_is_listed_even_at_zero(void **state)
{
	(void)state;
	struct metrics_snapshot *snapshot = empty();
	snapshot->lookup_errors[METRICS_LOOKUP_REJECTED] = 9;
	char *text = format(snapshot);
	assert_line(text, "musicd_lookup_errors_total{kind=\"unavailable\"} 0");
	assert_line(text, "musicd_lookup_errors_total{kind=\"timeout\"} 0");
	assert_line(text, "musicd_lookup_errors_total{kind=\"error\"} 0");
	assert_line(text, "musicd_lookup_errors_total{kind=\"rejected\"} 9");
	free(text);
	free(snapshot);
}

static void test_every_url_signing_refusal_reason_is_listed_even_at_zero(void **state)
{
	(void)state;
	static const char *const reasons[METRICS_URL_REFUSAL_COUNT] = {
		"missing", "malformed", "bad_signature", "expired", "not_yet_valid", "wrong_track"};
	struct metrics_snapshot *snapshot = empty();
	for (unsigned i = 0; i < METRICS_URL_REFUSAL_COUNT; i++)
		snapshot->url_refusals[i] = 10 * i;
	char *text = format(snapshot);
	for (unsigned i = 0; i < METRICS_URL_REFUSAL_COUNT; i++) {
		char line[128];
		snprintf(line, sizeof(line), "musicd_url_signing_refusals_total{reason=\"%s\"} %u",
			 reasons[i], 10 * i);
		assert_line(text, line);
	}
	free(text);
	free(snapshot);
}

static void test_caches_connections_and_gauges_show_their_values(void **state)
{
	(void)state;
	struct metrics_snapshot *snapshot = empty();
	snapshot->lookup_cache = (struct metrics_cache_snapshot){11, 12, 13, 14};
	snapshot->file_cache = (struct metrics_cache_snapshot){21, 22, 23, 24};
	snapshot->connections_open = 3;
	snapshot->connections_accepted = 40;
	snapshot->connections_refused = 5;
	snapshot->response_bytes = 123456789012ULL;
	snapshot->lookups_in_flight = 6;
	snapshot->database_up = 1;
	snapshot->client_streams = 7;
	snapshot->streams_refused = 8;
	snapshot->paced = 9;
	char *text = format(snapshot);
	assert_line(text, "musicd_lookup_cache_hits_total 11");
	assert_line(text, "musicd_lookup_cache_misses_total 12");
	assert_line(text, "musicd_lookup_cache_evictions_total 13");
	assert_line(text, "musicd_lookup_cache_entries 14");
	assert_line(text, "musicd_file_cache_hits_total 21");
	assert_line(text, "musicd_file_cache_misses_total 22");
	assert_line(text, "musicd_file_cache_evictions_total 23");
	assert_line(text, "musicd_file_cache_entries 24");
	assert_line(text, "musicd_connections_open 3");
	assert_line(text, "musicd_connections_accepted_total 40");
	assert_line(text, "musicd_connections_refused_total 5");
	assert_line(text, "musicd_http_response_bytes_total 123456789012");
	assert_line(text, "musicd_lookups_in_flight 6");
	assert_line(text, "musicd_database_up 1");
	assert_line(text, "musicd_client_streams 7");
	assert_line(text, "musicd_client_streams_refused_total 8");
	assert_line(text, "musicd_paced_responses_total 9");
	assert_line(text, "musicd_build_info{version=\"1.2.3\"} 1");
	free(text);
	free(snapshot);
}

static void test_each_limit_is_a_gauge_of_its_own_with_its_value(void **state)
{
	(void)state;
	struct metrics_snapshot *snapshot = empty();
	snapshot->limits = (struct metrics_limits){
		.connections = 10000,
		.lookup_threads = 8,
		.lookups_in_flight = 1024,
		.lookup_cache_entries = 10001,
		.file_cache_entries = 1000,
		.streams_per_client = 4,
		.limit_rate = 1ULL << 40,
	};
	char *text = format(snapshot);
	assert_line(text, "musicd_connections_limit 10000");
	assert_line(text, "musicd_lookup_threads 8");
	assert_line(text, "musicd_lookups_in_flight_limit 1024");
	assert_line(text, "musicd_lookup_cache_entries_limit 10001");
	assert_line(text, "musicd_file_cache_entries_limit 1000");
	assert_line(text, "musicd_streams_per_client_limit 4");
	assert_line(text, "musicd_limit_rate_bytes_per_second 1099511627776");
	free(text);
	free(snapshot);
}

static void test_the_version_label_is_escaped(void **state)
{
	(void)state;
	struct metrics_snapshot *snapshot = empty();
	snapshot->version = "a\"b\\c\nd";
	char *text = format(snapshot);
	assert_line(text, "musicd_build_info{version=\"a\\\"b\\\\c\\nd\"} 1");
	free(text);
	free(snapshot);
}

static void test_process_metrics_appear_once_read(void **state)
{
	(void)state;
	struct metrics_snapshot *snapshot = empty();
	snapshot->have_process = 1;
	snapshot->process = (struct metrics_process){
		.cpu_seconds = 1.5,
		.resident_bytes = 4096000,
		.open_fds = 17,
		.max_fds = 1024,
		.start_time_seconds = 1800000000.25,
	};
	char *text = format(snapshot);
	line_starting(text, "# TYPE process_cpu_seconds_total counter\n");
	assert_line(text, "process_cpu_seconds_total 1.500000");
	assert_line(text, "process_resident_memory_bytes 4096000");
	assert_line(text, "process_open_fds 17");
	assert_line(text, "process_max_fds 1024");
	assert_line(text, "process_start_time_seconds 1800000000.25");
	free(text);
	free(snapshot);
}

static void test_a_small_buffer_is_never_overrun_and_the_length_needed_is_returned(void **state)
{
	(void)state;
	struct metrics_snapshot *snapshot = empty();
	snapshot->requests[200 - METRICS_STATUS_MIN][METRICS_METHOD_GET] = 1;
	char *whole = format(snapshot);
	size_t length = strlen(whole);
	char small[100 + 16];
	memset(small, GUARD, sizeof(small));
	assert_int_equal(metrics_text_format(snapshot, small, 100), length);
	assert_int_equal(small[99], '\0');
	assert_memory_equal(small, whole, 99);
	for (size_t i = 100; i < sizeof(small); i++)
		assert_int_equal((unsigned char)small[i], GUARD);
	assert_int_equal(metrics_text_format(snapshot, NULL, 0), length);
	/* Exactly the length + 1 asked for: the whole text. */
	char *exact = malloc(length + 1);
	assert_non_null(exact);
	assert_int_equal(metrics_text_format(snapshot, exact, length + 1), length);
	assert_string_equal(exact, whole);
	free(exact);
	free(whole);
	free(snapshot);
}

static void test_methods_are_named_case_sensitively_and_others_are_other(void **state)
{
	(void)state;
	assert_int_equal(metrics_method_of("GET"), METRICS_METHOD_GET);
	assert_int_equal(metrics_method_of("HEAD"), METRICS_METHOD_HEAD);
	assert_int_equal(metrics_method_of("PATCH"), METRICS_METHOD_PATCH);
	assert_int_equal(metrics_method_of("get"), METRICS_METHOD_OTHER);
	assert_int_equal(metrics_method_of("BREW"), METRICS_METHOD_OTHER);
	assert_int_equal(metrics_method_of("-"), METRICS_METHOD_OTHER);
	assert_string_equal(metrics_method_name(METRICS_METHOD_OTHER), "other");
	for (unsigned m = 0; m < METRICS_METHOD_OTHER; m++)
		assert_int_equal(metrics_method_of(metrics_method_name(m)), m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_an_empty_snapshot_lists_every_family_with_help_and_type),
		cmocka_unit_test(test_requests_appear_per_code_and_method_once_counted),
		cmocka_unit_test(test_a_histogram_is_cumulative_and_its_inf_bucket_is_its_count),
		cmocka_unit_test(test_a_bound_belongs_to_its_own_bucket),
		cmocka_unit_test(test_every_lookup_error_kind_is_listed_even_at_zero),
		cmocka_unit_test(test_every_url_signing_refusal_reason_is_listed_even_at_zero),
		cmocka_unit_test(test_caches_connections_and_gauges_show_their_values),
		cmocka_unit_test(test_each_limit_is_a_gauge_of_its_own_with_its_value),
		cmocka_unit_test(test_the_version_label_is_escaped),
		cmocka_unit_test(test_process_metrics_appear_once_read),
		cmocka_unit_test(test_a_small_buffer_is_never_overrun_and_the_length_needed_is_returned),
		cmocka_unit_test(test_methods_are_named_case_sensitively_and_others_are_other),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
