/*
 * Unit tests for server/config/reload_plan.h and the option table's reload marks
 * (config.h): which settings a SIGHUP applies and which need a restart,
 * written once in config.c and checked here against the list docs/operating.md gives;
 * the plan for a changed file (live changes named, restart-only differences
 * kept and named, order of the table); lists compared item by item; the
 * name list formatted whole or not at all; and config_copy /
 * config_copy_live, which build the snapshot a reload publishes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "config/reload_plan.h"

/* docs/operating.md's "Reloading settings": the settings a SIGHUP applies to new requests. */
static const char *const LIVE_SETTINGS[] = {
	"lookup-cache-ttl", "lookup-cache-negative-ttl", "open-file-cache-valid",
	"open-file-cache-inactive", "cache-control", "error-cache-control", "max-ranges",
	"trusted-proxy", "access-log", "log-level", "cors-origin",
	"url-signing-key-file", "url-signing-leeway", "url-signing-parameter",
	"limit-rate", "limit-rate-after", "max-streams-per-client", "client-ipv6-prefix",
	"disk-queue-timeout", "disk-window",
};
#define LIVE_COUNT (sizeof(LIVE_SETTINGS) / sizeof(LIVE_SETTINGS[0]))

struct fixture {
	struct config given, loaded;
	struct reload_plan plan;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -1;
	config_init(&f->given);
	config_init(&f->loaded);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	config_free(&f->given);
	config_free(&f->loaded);
	free(f);
	return 0;
}

static void set(struct config *config, const char *name, const char *value)
{
	char error[CONFIG_ERROR_MAX];
	if (config_set(config, name, value, error, sizeof(error)) < 0)
		fail_msg("%s", error);
}

static bool listed_live(const char *name)
{
	for (size_t i = 0; i < LIVE_COUNT; i++) {
		if (strcmp(LIVE_SETTINGS[i], name) == 0)
			return true;
	}
	return false;
}

static void test_the_table_marks_exactly_the_documented_settings_live(void **state)
{
	(void)state;
	size_t live = 0;
	for (size_t i = 0; i < config_option_count(); i++) {
		const char *name = config_option_name(i);
		if (config_option_live(i) != listed_live(name))
			fail_msg("%s: marked %s in the option table", name,
				 config_option_live(i) ? "live" : "restart-only");
		live += config_option_live(i);
	}
	assert_int_equal(live, LIVE_COUNT);
}

static void test_the_settings_a_restart_needs_are_not_live(void **state)
{
	(void)state;
	static const char *const restart_only[] = {"listen", "workers", "mongodb-uri", "database",
						   "collection", "media-root", "lookup-threads",
						   "max-connections", "x-accel-redirect",
						   "lookup-cache-entries"};
	for (size_t n = 0; n < sizeof(restart_only) / sizeof(restart_only[0]); n++) {
		size_t i = 0;
		while (i < config_option_count() && strcmp(config_option_name(i), restart_only[n]) != 0)
			i++;
		assert_true(i < config_option_count());
		assert_false(config_option_live(i));
	}
}

static void test_the_same_settings_plan_nothing(void **state)
{
	struct fixture *f = *state;
	set(&f->given, "media-root", "/music");
	set(&f->loaded, "media-root", "/music");
	reload_plan_make(&f->given, &f->loaded, &f->plan);
	assert_int_equal(f->plan.changed_count, 0);
	assert_int_equal(f->plan.kept_count, 0);
}

static void test_live_changes_are_named_to_apply(void **state)
{
	struct fixture *f = *state;
	set(&f->loaded, "cache-control", "no-cache");
	set(&f->loaded, "log-level", "debug");
	set(&f->loaded, "lookup-cache-ttl", "0");
	reload_plan_make(&f->given, &f->loaded, &f->plan);
	assert_int_equal(f->plan.kept_count, 0);
	assert_int_equal(f->plan.changed_count, 3);
	/* In the option table's order. */
	assert_string_equal(f->plan.changed[0], "lookup-cache-ttl");
	assert_string_equal(f->plan.changed[1], "cache-control");
	assert_string_equal(f->plan.changed[2], "log-level");
}

static void test_restart_only_differences_are_named_to_keep(void **state)
{
	struct fixture *f = *state;
	set(&f->loaded, "listen", "127.0.0.1:9999");
	set(&f->loaded, "workers", "3");
	set(&f->loaded, "database", "other");
	set(&f->loaded, "media-root", "/elsewhere");
	set(&f->loaded, "error-cache-control", "off");
	reload_plan_make(&f->given, &f->loaded, &f->plan);
	assert_int_equal(f->plan.kept_count, 4);
	assert_string_equal(f->plan.kept[0], "listen");
	assert_string_equal(f->plan.kept[1], "database");
	assert_string_equal(f->plan.kept[2], "media-root");
	assert_string_equal(f->plan.kept[3], "workers");
	assert_int_equal(f->plan.changed_count, 1);
	assert_string_equal(f->plan.changed[0], "error-cache-control");
}

static void test_a_string_turned_off_or_on_is_a_change(void **state)
{
	struct fixture *f = *state;
	set(&f->loaded, "access-log", "/var/log/musicd.log"); /* off by default */
	reload_plan_make(&f->given, &f->loaded, &f->plan);
	assert_int_equal(f->plan.changed_count, 1);
	assert_string_equal(f->plan.changed[0], "access-log");
	reload_plan_make(&f->loaded, &f->given, &f->plan);
	assert_int_equal(f->plan.changed_count, 1);
}

static void test_lists_differ_by_count_or_by_any_item_or_its_place(void **state)
{
	struct fixture *f = *state;
	set(&f->given, "trusted-proxy", "10.0.0.0/8");
	set(&f->given, "trusted-proxy", "192.168.0.1");
	set(&f->loaded, "trusted-proxy", "192.168.0.1");
	set(&f->loaded, "trusted-proxy", "10.0.0.0/8");
	reload_plan_make(&f->given, &f->loaded, &f->plan);
	assert_int_equal(f->plan.changed_count, 1);
	assert_string_equal(f->plan.changed[0], "trusted-proxy");

	struct config shorter;
	config_init(&shorter);
	set(&shorter, "trusted-proxy", "10.0.0.0/8");
	reload_plan_make(&f->given, &shorter, &f->plan);
	assert_int_equal(f->plan.changed_count, 1);
	config_free(&shorter);
}

static void test_listen_differs_by_host_or_port(void **state)
{
	struct fixture *f = *state;
	set(&f->given, "listen", "127.0.0.1:8000");
	set(&f->loaded, "listen", "127.0.0.2:8000");
	reload_plan_make(&f->given, &f->loaded, &f->plan);
	assert_int_equal(f->plan.kept_count, 1);
	set(&f->loaded, "listen", "127.0.0.1:8001");
	reload_plan_make(&f->given, &f->loaded, &f->plan);
	assert_int_equal(f->plan.kept_count, 1);
	set(&f->loaded, "listen", "127.0.0.1:8000");
	reload_plan_make(&f->given, &f->loaded, &f->plan);
	assert_int_equal(f->plan.kept_count, 0);
}

static void test_names_are_joined_whole_or_not_at_all(void **state)
{
	(void)state;
	const char *names[] = {"listen", "workers", "media-root"};
	char out[64];
	assert_int_equal(reload_plan_names(names, 3, out, sizeof(out)),
			 strlen("listen, workers, media-root"));
	assert_string_equal(out, "listen, workers, media-root");
	assert_int_equal(reload_plan_names(names, 1, out, sizeof(out)), 6);
	assert_string_equal(out, "listen");
	char small[20];
	assert_int_equal(reload_plan_names(names, 3, small, sizeof(small)), 0);
	assert_string_equal(small, "");
	assert_int_equal(reload_plan_names(names, 0, out, sizeof(out)), 0);
	assert_string_equal(out, "");
}

static void test_a_copy_owns_its_values_and_compares_equal(void **state)
{
	struct fixture *f = *state;
	set(&f->given, "media-root", "/music");
	set(&f->given, "media-root", "/more");
	set(&f->given, "cache-control", "no-cache");
	set(&f->given, "access-log", "off");
	set(&f->given, "listen", "[::1]:8080");
	struct config copy;
	assert_int_equal(config_copy(&copy, &f->given), 0);
	config_free(&f->given); /* the copy does not share a string with it (ASan would see) */
	config_init(&f->given);
	set(&f->given, "media-root", "/music");
	set(&f->given, "media-root", "/more");
	set(&f->given, "cache-control", "no-cache");
	set(&f->given, "access-log", "off");
	set(&f->given, "listen", "[::1]:8080");
	for (size_t i = 0; i < config_option_count(); i++)
		assert_true(config_option_equal(i, &copy, &f->given));
	assert_string_equal(copy.listen_host, "::1");
	assert_null(copy.access_log);
	config_free(&copy);
}

static void test_copy_live_takes_only_the_live_settings(void **state)
{
	struct fixture *f = *state;
	set(&f->given, "media-root", "/music");
	set(&f->given, "listen", "127.0.0.1:8000");
	set(&f->loaded, "media-root", "/elsewhere");
	set(&f->loaded, "listen", "127.0.0.1:9000");
	set(&f->loaded, "cache-control", "private");
	set(&f->loaded, "trusted-proxy", "10.1.2.3");
	set(&f->loaded, "max-ranges", "3");
	assert_int_equal(config_copy_live(&f->given, &f->loaded), 0);
	assert_string_equal(f->given.cache_control, "private");
	assert_int_equal(f->given.trusted_proxy_count, 1);
	assert_string_equal(f->given.trusted_proxies[0], "10.1.2.3");
	assert_int_equal(f->given.max_ranges, 3);
	assert_int_equal(f->given.media_root_count, 1);
	assert_string_equal(f->given.media_roots[0], "/music");
	assert_int_equal(f->given.listen_port, 8000);
	/* What remains different is only what a restart changes. */
	reload_plan_make(&f->given, &f->loaded, &f->plan);
	assert_int_equal(f->plan.changed_count, 0);
	assert_int_equal(f->plan.kept_count, 2);
}

int main(void)
{
#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		TEST(test_the_table_marks_exactly_the_documented_settings_live),
		TEST(test_the_settings_a_restart_needs_are_not_live),
		TEST(test_the_same_settings_plan_nothing),
		TEST(test_live_changes_are_named_to_apply),
		TEST(test_restart_only_differences_are_named_to_keep),
		TEST(test_a_string_turned_off_or_on_is_a_change),
		TEST(test_lists_differ_by_count_or_by_any_item_or_its_place),
		TEST(test_listen_differs_by_host_or_port),
		TEST(test_names_are_joined_whole_or_not_at_all),
		TEST(test_a_copy_owns_its_values_and_compares_equal),
		TEST(test_copy_live_takes_only_the_live_settings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
