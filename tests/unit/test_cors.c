/*
 * Unit tests for server/http/cors.h: what a --cors-origin value may be, and the
 * exact CORS fields each answer carries for each configuration and Origin
 * (off, "*", a list; actual answers and preflights). The echoed origin is
 * the configured string, never the request's bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http/cors.h"

#define PAGE "http://127.0.0.1:8000"
#define OTHER "https://player.example.com"

static char *list[] = {PAGE, OTHER};
static char *any[] = {"*"};
static char *off[] = {"off"};

/* The value of the field called name among count fields, or NULL. */
static const char *field(const struct response_field *fields, size_t count, const char *name)
{
	for (size_t i = 0; i < count; i++) {
		if (strcmp(fields[i].name, name) == 0)
			return fields[i].value;
	}
	return NULL;
}

static void test_origins_as_browsers_send_them_are_valid(void **state)
{
	(void)state;
	assert_true(cors_origin_is_valid("http://127.0.0.1:8000"));
	assert_true(cors_origin_is_valid("https://player.example.com"));
	assert_true(cors_origin_is_valid("https://a-b.example.com:65535"));
	assert_true(cors_origin_is_valid("http://[::1]:8080"));
	assert_true(cors_origin_is_valid("chrome-extension://abcdef"));
}

static void test_anything_else_is_not_an_origin(void **state)
{
	(void)state;
	const char *bad[] = {
		"",
		"example.com",
		"http://",
		"http://example.com/",
		"http://example.com/player",
		"http://example.com:",
		"http://example.com:0",
		"http://example.com:080",
		"http://example.com:65536",
		"http://example.com:8x",
		"HTTP://example.com",
		"http://Example.com",
		"http://exa mple.com",
		"http://example.com\r\nX-Evil: 1",
		"http://[]:80",
		"http://[::1",
		"http://user@example.com",
		"null",
		"*.example.com",
		"1http://example.com",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (cors_origin_is_valid(bad[i]))
			fail_msg("'%s' was taken for an origin", bad[i]);
	}
}

static void test_star_or_off_must_stand_alone(void **state)
{
	(void)state;
	char error[256];
	char *star_and_page[] = {"*", PAGE};
	char *page_and_off[] = {PAGE, "off"};
	assert_int_equal(cors_check_origins(any, 1, error, sizeof(error)), 0);
	assert_int_equal(cors_check_origins(off, 1, error, sizeof(error)), 0);
	assert_int_equal(cors_check_origins(list, 2, error, sizeof(error)), 0);
	assert_int_equal(cors_check_origins(star_and_page, 2, error, sizeof(error)), -1);
	assert_non_null(strstr(error, "'*' cannot be combined"));
	assert_int_equal(cors_check_origins(page_and_off, 2, error, sizeof(error)), -1);
	assert_non_null(strstr(error, "'off' cannot be combined"));
}

static void test_a_bad_origin_is_named_unless_it_holds_a_control_character(void **state)
{
	(void)state;
	char error[256];
	char *slash[] = {"http://example.com/"};
	char *injected[] = {"http://a\r\nSet-Cookie: x"};
	assert_int_equal(cors_check_origins(slash, 1, error, sizeof(error)), -1);
	assert_non_null(strstr(error, "'http://example.com/' is not an origin"));
	assert_int_equal(cors_check_origins(injected, 1, error, sizeof(error)), -1);
	assert_null(strchr(error, '\r'));
	assert_non_null(strstr(error, "control character"));
}

static void test_modes(void **state)
{
	(void)state;
	assert_int_equal(cors_mode(NULL, 0), CORS_OFF);
	assert_int_equal(cors_mode(off, 1), CORS_OFF);
	assert_int_equal(cors_mode(any, 1), CORS_ANY);
	assert_int_equal(cors_mode(list, 2), CORS_LIST);
	assert_int_equal(cors_mode(list, 1), CORS_LIST);
}

static void test_off_adds_nothing(void **state)
{
	(void)state;
	struct response_field fields[CORS_FIELDS_MAX];
	assert_int_equal(cors_fields(NULL, 0, PAGE, CORS_ACTUAL, fields), 0);
	assert_int_equal(cors_fields(off, 1, PAGE, CORS_PREFLIGHT, fields), 0);
}

static void test_star_allows_every_origin_without_vary(void **state)
{
	(void)state;
	struct response_field fields[CORS_FIELDS_MAX];
	const char *origins[] = {PAGE, "http://anything.example", NULL};
	for (size_t i = 0; i < 3; i++) {
		size_t count = cors_fields(any, 1, origins[i], CORS_ACTUAL, fields);
		assert_int_equal(count, 2);
		assert_string_equal(fields[0].name, "Access-Control-Allow-Origin");
		assert_string_equal(fields[0].value, "*");
		assert_string_equal(fields[1].name, "Access-Control-Expose-Headers");
		assert_string_equal(fields[1].value, "Content-Range, Accept-Ranges, Content-Length, "
						     "ETag, Last-Modified, Content-Disposition");
		assert_null(field(fields, count, "Vary"));
	}
}

static void test_a_listed_origin_is_echoed_as_configured_with_vary(void **state)
{
	(void)state;
	struct response_field fields[CORS_FIELDS_MAX];
	char request_origin[] = OTHER;
	size_t count = cors_fields(list, 2, request_origin, CORS_ACTUAL, fields);
	assert_int_equal(count, 3);
	assert_string_equal(field(fields, count, "Vary"), "Origin");
	/* the configured string itself, not a copy of the request's bytes */
	assert_ptr_equal(field(fields, count, "Access-Control-Allow-Origin"), list[1]);
	assert_non_null(field(fields, count, "Access-Control-Expose-Headers"));
}

static void test_an_unlisted_or_absent_origin_gets_only_vary(void **state)
{
	(void)state;
	struct response_field fields[CORS_FIELDS_MAX];
	const char *requests[] = {
		"http://127.0.0.1:8001", /* another port */
		"http://127.0.0.1:8000/", "HTTP://127.0.0.1:8000", "http://127.0.0.1",
		"http://127.0.0.1:8000 ", /* exact match only */
		"http://127.0.0.1:8000\x01", "*", "null", NULL,
	};
	for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
		size_t count = cors_fields(list, 2, requests[i], CORS_ACTUAL, fields);
		assert_int_equal(count, 1);
		assert_string_equal(fields[0].name, "Vary");
		assert_string_equal(fields[0].value, "Origin");
	}
}

static void test_a_preflight_allows_the_methods_and_the_range_and_conditional_headers(void **state)
{
	(void)state;
	struct response_field fields[CORS_FIELDS_MAX];
	size_t count = cors_fields(list, 2, PAGE, CORS_PREFLIGHT, fields);
	assert_int_equal(count, 5);
	assert_string_equal(field(fields, count, "Vary"), "Origin");
	assert_string_equal(field(fields, count, "Access-Control-Allow-Origin"), PAGE);
	assert_string_equal(field(fields, count, "Access-Control-Allow-Methods"),
			    "GET, HEAD, OPTIONS");
	const char *allowed = field(fields, count, "Access-Control-Allow-Headers");
	assert_non_null(allowed);
	const char *needed[] = {"Range", "If-Range", "If-None-Match", "If-Modified-Since"};
	for (size_t i = 0; i < 4; i++)
		assert_non_null(strstr(allowed, needed[i]));
	assert_string_equal(field(fields, count, "Access-Control-Max-Age"), "7200");
	assert_null(field(fields, count, "Access-Control-Expose-Headers"));

	count = cors_fields(any, 1, PAGE, CORS_PREFLIGHT, fields);
	assert_int_equal(count, 4);
	assert_string_equal(field(fields, count, "Access-Control-Allow-Origin"), "*");
	assert_null(field(fields, count, "Vary"));
}

static void test_a_preflight_from_an_unlisted_origin_is_not_allowed(void **state)
{
	(void)state;
	struct response_field fields[CORS_FIELDS_MAX];
	size_t count = cors_fields(list, 2, "http://evil.example", CORS_PREFLIGHT, fields);
	assert_int_equal(count, 1);
	assert_string_equal(fields[0].name, "Vary");
}

static void test_credentials_are_never_allowed(void **state)
{
	(void)state;
	struct response_field fields[CORS_FIELDS_MAX];
	char **configs[] = {any, list};
	size_t counts[] = {1, 2};
	for (size_t c = 0; c < 2; c++) {
		for (int kind = CORS_ACTUAL; kind <= CORS_PREFLIGHT; kind++) {
			size_t count = cors_fields(configs[c], counts[c], PAGE,
						   (enum cors_answer)kind, fields);
			assert_null(field(fields, count, "Access-Control-Allow-Credentials"));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_origins_as_browsers_send_them_are_valid),
		cmocka_unit_test(test_anything_else_is_not_an_origin),
		cmocka_unit_test(test_star_or_off_must_stand_alone),
		cmocka_unit_test(test_a_bad_origin_is_named_unless_it_holds_a_control_character),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_off_adds_nothing),
		cmocka_unit_test(test_star_allows_every_origin_without_vary),
		cmocka_unit_test(test_a_listed_origin_is_echoed_as_configured_with_vary),
		cmocka_unit_test(test_an_unlisted_or_absent_origin_gets_only_vary),
		cmocka_unit_test(test_a_preflight_allows_the_methods_and_the_range_and_conditional_headers),
		cmocka_unit_test(test_a_preflight_from_an_unlisted_origin_is_not_allowed),
		cmocka_unit_test(test_credentials_are_never_allowed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
