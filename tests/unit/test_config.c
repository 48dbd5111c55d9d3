/*
 * Unit tests for server/config/config.h: the defaults, config_set for each kind of
 * setting (strings, bounded numbers, listen address, repeatable lists,
 * on/off switches, strings or off, log level), config_parse_listen,
 * config-file text, config_validate's cross-checks, and config_load's
 * precedence: defaults < MONGODB_URI < --config file < flags.
 * Each test gets a fresh config_init'd struct and a config_free after it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "config/config_check.h"
#include "config/config_sources.h"
#include "http/range.h"

#define SOURCE "musicd.conf"
#define NO_MEDIA_ROOT_MESSAGE                                                                      \
	"no media root: give at least one --media-root DIR (or media-root in the config file)"

struct fixture {
	struct config config;
	enum config_action action;
	char error[CONFIG_ERROR_MAX];
	char path[64]; /* a temporary config file, "" when none */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -1;
	config_init(&f->config);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	config_free(&f->config);
	if (f->path[0] != '\0')
		unlink(f->path);
	free(f);
	return 0;
}

static int set(struct fixture *f, const char *name, const char *value)
{
	return config_set(&f->config, name, value, f->error, sizeof(f->error));
}

static int validate(struct fixture *f)
{
	return config_validate(&f->config, f->error, sizeof(f->error));
}

static void assert_set_fails_with(struct fixture *f, const char *name, const char *value,
				  const char *message)
{
	assert_int_equal(set(f, name, value), -1);
	assert_string_equal(f->error, message);
}

/* The message starts with "<setting>: " and mentions detail. */
static void assert_error_names(const char *error, const char *setting, const char *detail)
{
	size_t length = strlen(setting);
	if (strncmp(error, setting, length) != 0 || strncmp(error + length, ": ", 2) != 0 ||
	    strstr(error, detail) == NULL)
		fail_msg("error \"%s\" should name %s and say %s", error, setting, detail);
}

static int parse_text(struct fixture *f, const char *text)
{
	return config_parse_text(&f->config, text, SOURCE, f->error, sizeof(f->error));
}

static void assert_parse_fails_with(struct fixture *f, const char *text, const char *message)
{
	assert_int_equal(parse_text(f, text), -1);
	assert_string_equal(f->error, message);
}

/* Writes text to a new file under /tmp, removed by teardown; its path is in f->path. */
static char *write_config_file(struct fixture *f, const char *text)
{
	snprintf(f->path, sizeof(f->path), "/tmp/musicd-test-config.XXXXXX");
	int fd = mkstemp(f->path);
	assert_true(fd >= 0);
	size_t length = strlen(text);
	assert_int_equal(write(fd, text, length), (ssize_t)length);
	close(fd);
	return f->path;
}

/* argv for config_load: the program name, the given arguments, then NULL. */
#define ARGV(...) ((char *[]){"musicd", ##__VA_ARGS__, NULL})

/* config_load with installed as the installed configuration (NULL: none). */
static int load_with(struct fixture *f, const char *env_mongodb_uri, const char *installed,
		     char **argv)
{
	int argc = 0;
	while (argv[argc] != NULL)
		argc++;
	f->action = (enum config_action)-1;
	return config_load(&f->config, argc, argv, env_mongodb_uri, installed, &f->action,
			   f->error, sizeof(f->error));
}

static int load_installed(struct fixture *f, const char *installed, char **argv)
{
	return load_with(f, NULL, installed, argv);
}

static int load(struct fixture *f, const char *env_mongodb_uri, char **argv)
{
	return load_with(f, env_mongodb_uri, NULL, argv);
}

static void assert_load_fails_with(struct fixture *f, char **argv, const char *message)
{
	assert_int_equal(load(f, NULL, argv), -1);
	assert_string_equal(f->error, message);
}

/* A repeatable setting's items are exactly expected, in order. */
static void assert_items(char *const *items, size_t item_count, const char *const *expected,
			 size_t count)
{
	assert_int_equal(item_count, count);
	for (size_t i = 0; i < count; i++)
		assert_string_equal(items[i], expected[i]);
}

static void assert_media_roots(const struct config *config, const char *const *expected,
			       size_t count)
{
	assert_items(config->media_roots, config->media_root_count, expected, count);
}

/* config_init */

static void test_init_sets_every_default(void **state)
{
	struct config *config = &((struct fixture *)*state)->config;
	assert_null(config->config_file);
	assert_string_equal(config->listen_host, "127.0.0.1");
	assert_int_equal(config->listen_port, CONFIG_DEFAULT_PORT);
	assert_int_equal(config->listen_port, 23001);
	assert_string_equal(config->mongodb_uri, "mongodb://127.0.0.1:27017");
	assert_string_equal(config->database, "musicdb");
	assert_string_equal(config->collection, "tracks");
	assert_string_equal(config->path_field, "path");
	assert_int_equal(config->media_root_count, 0);
	assert_int_equal(config->workers, 0);
	assert_int_equal(config->lookup_threads, 8);
	assert_int_equal(config->lookup_timeout_ms, 2000);
	assert_null(config->access_log);
	assert_string_equal(config->cache_control, "public, max-age=86400");
	assert_int_equal(config->max_ranges, RANGE_DEFAULT_MAX_PARTS);
	assert_int_equal(config->max_ranges, 16);
	assert_int_equal(config->max_pending_lookups, 1024);
	assert_int_equal(config->lookup_cache_entries, 10000);
	assert_int_equal(config->lookup_cache_ttl, 30);
	assert_int_equal(config->lookup_cache_negative_ttl, 5);
	assert_int_equal(config->open_file_cache_entries, 1000);
	assert_int_equal(config->open_file_cache_valid, 5);
	assert_int_equal(config->open_file_cache_inactive, 60);
	assert_int_equal(config->log_level, LOG_LEVEL_INFO);
	assert_string_equal(config->error_cache_control, "no-store");
	assert_int_equal(config->x_accel_redirect_count, 0);
	assert_int_equal(config->x_sendfile, 0);
	assert_int_equal(config->trusted_proxy_count, 0);
	assert_int_equal(config->max_connections, 0);
	assert_int_equal(config->max_header_size, 16384);
	assert_int_equal(config->header_timeout, 20);
	assert_int_equal(config->keepalive_timeout, 60);
	assert_int_equal(config->send_timeout, 60);
}

static void test_init_after_free_sets_the_defaults_again(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "database", "other"), 0);
	assert_int_equal(set(f, "max-header-size", "2048"), 0);
	assert_int_equal(set(f, "log-level", "debug"), 0);
	config_free(&f->config);
	config_init(&f->config);
	assert_string_equal(f->config.database, "musicdb");
	assert_int_equal(f->config.max_header_size, 16384);
	assert_int_equal(f->config.log_level, LOG_LEVEL_INFO);
}

/* config_set: strings */

static void test_set_string_settings_replace_their_value(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "mongodb-uri", "mongodb://db.example:27018/?replicaSet=rs0"), 0);
	assert_int_equal(set(f, "database", "music"), 0);
	assert_int_equal(set(f, "collection", "songs"), 0);
	assert_int_equal(set(f, "path-field", "file.location"), 0);
	assert_string_equal(f->config.mongodb_uri, "mongodb://db.example:27018/?replicaSet=rs0");
	assert_string_equal(f->config.database, "music");
	assert_string_equal(f->config.collection, "songs");
	assert_string_equal(f->config.path_field, "file.location");
}

static void test_set_string_twice_keeps_the_last(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "database", "first"), 0);
	assert_int_equal(set(f, "database", "second"), 0);
	assert_string_equal(f->config.database, "second");
}

static void test_set_config_records_the_file(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "config", "/etc/musicd.conf"), 0);
	assert_string_equal(f->config.config_file, "/etc/musicd.conf");
}

static void test_set_empty_value_fails_naming_the_setting(void **state)
{
	struct fixture *f = *state;
	assert_set_fails_with(f, "database", "", "database: empty value");
	assert_set_fails_with(f, "workers", "", "workers: empty value");
	assert_string_equal(f->config.database, "musicdb");
}

static void test_set_unknown_setting_fails_naming_it(void **state)
{
	struct fixture *f = *state;
	assert_set_fails_with(f, "nope", "1", "unknown setting 'nope'");
	/* Names are exact; one near a setting is named with it. */
	assert_set_fails_with(f, "--workers", "1",
			      "unknown setting '--workers' (did you mean 'workers'?)");
	assert_set_fails_with(f, "Workers", "1",
			      "unknown setting 'Workers' (did you mean 'workers'?)");
	assert_set_fails_with(f, "medai-root", "/music",
			      "unknown setting 'medai-root' (did you mean 'media-root'?)");
}

/* config_set: bounded numbers */

static void test_set_workers_accepts_1_to_256(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "workers", "1"), 0);
	assert_int_equal(f->config.workers, 1);
	assert_int_equal(set(f, "workers", "256"), 0);
	assert_int_equal(f->config.workers, 256);
}

static void test_set_workers_out_of_range_fails_naming_the_range(void **state)
{
	struct fixture *f = *state;
	assert_set_fails_with(f, "workers", "0", "workers: '0' is not a number from 1 to 256");
	assert_set_fails_with(f, "workers", "257", "workers: '257' is not a number from 1 to 256");
}

/* Every number setting, its field and its documented range. */
static const struct number_setting {
	const char *name;
	size_t offset;
	unsigned minimum, maximum;
} number_settings[] = {
	{"workers", offsetof(struct config, workers), 1, 256},
	{"lookup-threads", offsetof(struct config, lookup_threads), 1, 256},
	{"lookup-timeout", offsetof(struct config, lookup_timeout_ms), 1, 600000},
	{"max-pending-lookups", offsetof(struct config, max_pending_lookups), 1, 1000000},
	{"lookup-cache-entries", offsetof(struct config, lookup_cache_entries), 0, 100000000},
	{"lookup-cache-ttl", offsetof(struct config, lookup_cache_ttl), 0, 86400},
	{"lookup-cache-negative-ttl", offsetof(struct config, lookup_cache_negative_ttl), 0, 86400},
	{"open-file-cache-entries", offsetof(struct config, open_file_cache_entries), 0, 1000000},
	{"open-file-cache-valid", offsetof(struct config, open_file_cache_valid), 0, 86400},
	{"open-file-cache-inactive", offsetof(struct config, open_file_cache_inactive), 1, 86400},
	{"max-ranges", offsetof(struct config, max_ranges), 1, RANGE_MAX_PARTS_LIMIT},
	{"max-connections", offsetof(struct config, max_connections), 1, 10000000},
	{"max-header-size", offsetof(struct config, max_header_size), 1024, 1048576},
	{"header-timeout", offsetof(struct config, header_timeout), 1, 3600},
	{"keepalive-timeout", offsetof(struct config, keepalive_timeout), 1, 3600},
	{"send-timeout", offsetof(struct config, send_timeout), 1, 3600},
};

#define NUMBER_SETTING_COUNT (sizeof(number_settings) / sizeof(number_settings[0]))

static unsigned number_field(const struct config *config, const struct number_setting *setting)
{
	return *(const unsigned *)((const char *)config + setting->offset);
}

static void test_set_each_number_accepts_its_bounds(void **state)
{
	struct fixture *f = *state;
	for (size_t i = 0; i < NUMBER_SETTING_COUNT; i++) {
		const struct number_setting *setting = &number_settings[i];
		const unsigned bounds[] = {setting->minimum, setting->maximum};
		for (size_t j = 0; j < 2; j++) {
			char value[16];
			snprintf(value, sizeof(value), "%u", bounds[j]);
			if (set(f, setting->name, value) != 0)
				fail_msg("%s = %s: %s", setting->name, value, f->error);
			assert_int_equal(number_field(&f->config, setting), bounds[j]);
		}
	}
}

static void test_set_each_number_rejects_values_past_its_bounds(void **state)
{
	struct fixture *f = *state;
	for (size_t i = 0; i < NUMBER_SETTING_COUNT; i++) {
		const struct number_setting *setting = &number_settings[i];
		/* Below a minimum of 0 is "-1", a non-number, tested separately. */
		const unsigned outside[] = {setting->minimum - 1, setting->maximum + 1};
		for (size_t j = setting->minimum == 0 ? 1 : 0; j < 2; j++) {
			char value[16], expected[CONFIG_ERROR_MAX];
			snprintf(value, sizeof(value), "%u", outside[j]);
			snprintf(expected, sizeof(expected),
				 "%s: '%s' is not a number from %u to %u", setting->name, value,
				 setting->minimum, setting->maximum);
			assert_set_fails_with(f, setting->name, value, expected);
		}
	}
}

static void test_set_number_rejects_anything_but_decimal_digits(void **state)
{
	struct fixture *f = *state;
	const char *const values[] = {"abc", "-1",	 "+5",	" 5",  "5 ", "5x",
				      "1e3", "0x10", "4.0", "1,0", "99999999999999999999"};
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		char expected[CONFIG_ERROR_MAX];
		snprintf(expected, sizeof(expected), "workers: '%s' is not a number from 1 to 256",
			 values[i]);
		assert_set_fails_with(f, "workers", values[i], expected);
	}
}

static void test_set_max_header_size_outside_its_bounds_fails_naming_them(void **state)
{
	struct fixture *f = *state;
	assert_set_fails_with(f, "max-header-size", "1023",
			      "max-header-size: '1023' is not a number from 1024 to 1048576");
	assert_set_fails_with(f, "max-header-size", "1048577",
			      "max-header-size: '1048577' is not a number from 1024 to 1048576");
	assert_int_equal(f->config.max_header_size, 16384);
}

static void test_set_timeouts_are_independent_of_each_other(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "header-timeout", "3600"), 0);
	assert_int_equal(set(f, "keepalive-timeout", "1"), 0);
	assert_int_equal(set(f, "send-timeout", "7"), 0);
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_int_equal(validate(f), 0);
	assert_int_equal(f->config.header_timeout, 3600);
	assert_int_equal(f->config.keepalive_timeout, 1);
	assert_int_equal(f->config.send_timeout, 7);
}

static void test_set_number_ignores_leading_zeros(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "workers", "008"), 0);
	assert_int_equal(f->config.workers, 8);
}

/* config_set: listen */

static void test_set_listen_sets_host_and_port(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "listen", "0.0.0.0:8080"), 0);
	assert_string_equal(f->config.listen_host, "0.0.0.0");
	assert_int_equal(f->config.listen_port, 8080);
}

static void test_set_listen_accepts_bracketed_ipv6(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "listen", "[::1]:9000"), 0);
	assert_string_equal(f->config.listen_host, "::1");
	assert_int_equal(f->config.listen_port, 9000);
}

static void test_set_listen_invalid_fails_naming_the_setting(void **state)
{
	struct fixture *f = *state;
	assert_set_fails_with(f, "listen", "::1:80",
			      "listen: '::1:80' is not ADDR:PORT (IPv6 as [ADDR]:PORT, port "
			      "1-65535)");
	assert_set_fails_with(f, "listen", "127.0.0.1:0",
			      "listen: '127.0.0.1:0' is not ADDR:PORT (IPv6 as [ADDR]:PORT, port "
			      "1-65535)");
	assert_string_equal(f->config.listen_host, "127.0.0.1");
	assert_int_equal(f->config.listen_port, 23001);
}

/* config_set: media roots */

static void test_set_media_root_appends_in_order(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_int_equal(set(f, "media-root", "/podcasts"), 0);
	assert_int_equal(set(f, "media-root", "/music"), 0);
	const char *const expected[] = {"/music", "/podcasts", "/music"};
	assert_media_roots(&f->config, expected, 3);
}

/* Sets name count times, the i-th value "<prefix><i><suffix>", each accepted. */
static void fill_list(struct fixture *f, const char *name, const char *prefix, const char *suffix,
		      int count)
{
	for (int i = 0; i < count; i++) {
		char value[64];
		snprintf(value, sizeof(value), "%s%d%s", prefix, i, suffix);
		if (set(f, name, value) != 0)
			fail_msg("%s = %s: %s", name, value, f->error);
	}
}

static void test_set_media_root_beyond_the_maximum_fails(void **state)
{
	struct fixture *f = *state;
	fill_list(f, "media-root", "/music/", "", CONFIG_MAX_MEDIA_ROOTS);
	assert_int_equal(set(f, "media-root", "/one-too-many"), -1);
	assert_error_names(f->error, "media-root", "32");
	assert_int_equal(f->config.media_root_count, CONFIG_MAX_MEDIA_ROOTS);
	assert_string_equal(f->config.media_roots[CONFIG_MAX_MEDIA_ROOTS - 1], "/music/31");
}

static void test_set_trusted_proxy_appends_in_order(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "trusted-proxy", "10.0.0.0/8"), 0);
	assert_int_equal(set(f, "trusted-proxy", "::1"), 0);
	assert_int_equal(f->config.trusted_proxy_count, 2);
	assert_string_equal(f->config.trusted_proxies[0], "10.0.0.0/8");
	assert_string_equal(f->config.trusted_proxies[1], "::1");
}

static void test_set_trusted_proxy_beyond_the_maximum_fails(void **state)
{
	struct fixture *f = *state;
	fill_list(f, "trusted-proxy", "10.0.0.", "", CONFIG_MAX_TRUSTED_PROXIES);
	assert_int_equal(set(f, "trusted-proxy", "10.0.1.0"), -1);
	assert_error_names(f->error, "trusted-proxy", "64");
	assert_int_equal(f->config.trusted_proxy_count, CONFIG_MAX_TRUSTED_PROXIES);
}

static void test_set_x_accel_redirect_appends_in_order(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "x-accel-redirect", "/internal/music/"), 0);
	assert_int_equal(set(f, "x-accel-redirect", "/internal/podcasts/"), 0);
	assert_int_equal(f->config.x_accel_redirect_count, 2);
	assert_string_equal(f->config.x_accel_redirects[0], "/internal/music/");
	assert_string_equal(f->config.x_accel_redirects[1], "/internal/podcasts/");
}

/* config_set: switches */

static void test_set_switch_on_words_turn_it_on(void **state)
{
	struct fixture *f = *state;
	const char *const words[] = {"on", "yes", "true"};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		f->config.x_sendfile = 0;
		assert_int_equal(set(f, "x-sendfile", words[i]), 0);
		assert_int_equal(f->config.x_sendfile, 1);
	}
}

static void test_set_switch_off_words_turn_it_off(void **state)
{
	struct fixture *f = *state;
	const char *const words[] = {"off", "no", "false"};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		f->config.x_sendfile = 1;
		assert_int_equal(set(f, "x-sendfile", words[i]), 0);
		assert_int_equal(f->config.x_sendfile, 0);
	}
}

static void test_set_switch_other_words_fail(void **state)
{
	struct fixture *f = *state;
	assert_set_fails_with(f, "x-sendfile", "maybe", "x-sendfile: 'maybe' is not on or off");
	assert_set_fails_with(f, "x-sendfile", "1", "x-sendfile: '1' is not on or off");
	assert_int_equal(f->config.x_sendfile, 0);
}

/* config_set: strings or off */

static void test_set_error_cache_control_replaces_it(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "error-cache-control", "max-age=5"), 0);
	assert_string_equal(f->config.error_cache_control, "max-age=5");
}

static void test_set_error_cache_control_off_turns_it_off(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "error-cache-control", "off"), 0);
	assert_null(f->config.error_cache_control);
}

/* config_set: access log */

static void test_set_access_log_to_a_path(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "access-log", "/var/log/musicd/access.log"), 0);
	assert_string_equal(f->config.access_log, "/var/log/musicd/access.log");
}

static void test_set_access_log_to_stdout(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "access-log", "-"), 0);
	assert_string_equal(f->config.access_log, "-");
}

static void test_set_access_log_off_turns_it_off(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "access-log", "/tmp/access.log"), 0);
	assert_int_equal(set(f, "access-log", "off"), 0);
	assert_null(f->config.access_log);
}

static void test_set_cache_control_replaces_it(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "cache-control", "no-cache"), 0);
	assert_string_equal(f->config.cache_control, "no-cache");
}

static void test_set_cache_control_off_turns_it_off(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "cache-control", "off"), 0);
	assert_null(f->config.cache_control);
}

/* config_set: log level */

static void test_set_log_level_accepts_each_level(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "log-level", "debug"), 0);
	assert_int_equal(f->config.log_level, LOG_LEVEL_DEBUG);
	assert_int_equal(set(f, "log-level", "warn"), 0);
	assert_int_equal(f->config.log_level, LOG_LEVEL_WARN);
	assert_int_equal(set(f, "log-level", "error"), 0);
	assert_int_equal(f->config.log_level, LOG_LEVEL_ERROR);
	assert_int_equal(set(f, "log-level", "info"), 0);
	assert_int_equal(f->config.log_level, LOG_LEVEL_INFO);
}

static void test_set_log_level_unknown_fails_listing_the_levels(void **state)
{
	struct fixture *f = *state;
	assert_set_fails_with(f, "log-level", "verbose",
			      "log-level: 'verbose' is not one of debug, info, warn, error");
}

/* config_parse_listen */

static int parse_listen(const char *text, char *host, size_t host_size, uint16_t *port)
{
	return config_parse_listen(text, host, host_size, port);
}

static void assert_listen(const char *text, const char *expected_host, uint16_t expected_port)
{
	char host[256] = "unset";
	uint16_t port = 1;
	if (parse_listen(text, host, sizeof(host), &port) != 0)
		fail_msg("config_parse_listen(\"%s\") failed", text);
	assert_string_equal(host, expected_host);
	assert_int_equal(port, expected_port);
}

static void assert_listen_rejected(const char *text)
{
	char host[256];
	uint16_t port;
	if (parse_listen(text, host, sizeof(host), &port) != -1)
		fail_msg("config_parse_listen(\"%s\") accepted it", text);
}

static void test_listen_ipv4_and_port(void **state)
{
	(void)state;
	assert_listen("127.0.0.1:23001", "127.0.0.1", 23001);
	assert_listen("192.0.2.10:80", "192.0.2.10", 80);
}

static void test_listen_host_name_and_port(void **state)
{
	(void)state;
	assert_listen("localhost:8080", "localhost", 8080);
}

static void test_listen_bracketed_ipv6_and_port(void **state)
{
	(void)state;
	assert_listen("[::1]:8080", "::1", 8080);
	assert_listen("[2001:db8::1]:443", "2001:db8::1", 443);
	assert_listen("[::]:23001", "::", 23001);
}

static void test_listen_port_alone_is_any_address(void **state)
{
	(void)state;
	assert_listen(":9000", "::", 9000); /* every address: IPv4 and IPv6 */
}

static void test_listen_port_1_and_65535_are_accepted(void **state)
{
	(void)state;
	assert_listen("127.0.0.1:1", "127.0.0.1", 1);
	assert_listen("127.0.0.1:65535", "127.0.0.1", 65535);
}

static void test_listen_bad_ports_are_rejected(void **state)
{
	(void)state;
	assert_listen_rejected("127.0.0.1:0");
	assert_listen_rejected("127.0.0.1:65536");
	assert_listen_rejected("127.0.0.1:abc");
	assert_listen_rejected("127.0.0.1:-1");
	assert_listen_rejected("127.0.0.1:80x");
	assert_listen_rejected("127.0.0.1:99999999999");
	assert_listen_rejected("[::1]:0");
	assert_listen_rejected("[::1]:65536");
	assert_listen_rejected(":0");
}

static void test_listen_missing_port_is_rejected(void **state)
{
	(void)state;
	assert_listen_rejected("127.0.0.1");
	assert_listen_rejected("127.0.0.1:");
	assert_listen_rejected("[::1]");
	assert_listen_rejected("[::1]:");
	assert_listen_rejected(":");
	assert_listen_rejected("");
}

static void test_listen_bare_ipv6_is_rejected(void **state)
{
	(void)state;
	assert_listen_rejected("::1:80");
	assert_listen_rejected("2001:db8::1:443");
	assert_listen_rejected("::1");
}

static void test_listen_malformed_brackets_are_rejected(void **state)
{
	(void)state;
	assert_listen_rejected("[]:80");
	assert_listen_rejected("[::1]8080");
	assert_listen_rejected("[::1:8080");
	assert_listen_rejected("[::1]x:8080");
}

static void test_listen_host_too_long_for_the_buffer_is_rejected(void **state)
{
	(void)state;
	char host[4];
	uint16_t port = 0;
	assert_int_equal(parse_listen("abc:80", host, sizeof(host), &port), 0);
	assert_string_equal(host, "abc");
	assert_int_equal(port, 80);
	assert_int_equal(parse_listen("abcd:80", host, sizeof(host), &port), -1);
}

/* config_parse_text */

static void test_text_applies_name_value_lines(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, "workers = 4\ndatabase = music\n"), 0);
	assert_int_equal(f->config.workers, 4);
	assert_string_equal(f->config.database, "music");
}

static void test_text_allows_spaces_and_tabs_around_equals(void **state)
{
	struct fixture *f = *state;
	const char *text = "workers=4\n  database \t=\t music  \n\tcollection =songs\t\n";
	assert_int_equal(parse_text(f, text), 0);
	assert_int_equal(f->config.workers, 4);
	assert_string_equal(f->config.database, "music");
	assert_string_equal(f->config.collection, "songs");
}

static void test_text_skips_comments_and_blank_lines(void **state)
{
	struct fixture *f = *state;
	const char *text = "# musicd settings\n\n   \n\t\n  # workers = 99\nworkers = 3\n";
	assert_int_equal(parse_text(f, text), 0);
	assert_int_equal(f->config.workers, 3);
}

static void test_text_accepts_crlf_line_endings(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, "# comment\r\n\r\nworkers = 4\r\ndatabase = music\r\n"), 0);
	assert_int_equal(f->config.workers, 4);
	assert_string_equal(f->config.database, "music");
}

static void test_text_last_line_needs_no_newline(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, "workers = 4\ndatabase = music"), 0);
	assert_string_equal(f->config.database, "music");
}

static void test_text_value_may_contain_equals(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, "mongodb-uri = mongodb://db/?replicaSet=rs0&w=1\n"), 0);
	assert_string_equal(f->config.mongodb_uri, "mongodb://db/?replicaSet=rs0&w=1");
}

static void test_text_empty_applies_nothing(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, ""), 0);
	assert_int_equal(f->config.lookup_threads, 8);
	assert_string_equal(f->config.database, "musicdb");
}

static void test_text_repeated_media_root_appends(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, "media-root = /music\nmedia-root = /podcasts\n"
				       "media-root = /audiobooks\n"),
			 0);
	const char *const expected[] = {"/music", "/podcasts", "/audiobooks"};
	assert_media_roots(&f->config, expected, 3);
}

static void test_text_bad_value_error_names_source_and_line(void **state)
{
	struct fixture *f = *state;
	assert_parse_fails_with(f, "database = music\n# comment\nworkers = 0\n",
				SOURCE ":3: workers: '0' is not a number from 1 to 256");
}

static void test_text_line_numbers_count_blank_crlf_lines(void **state)
{
	struct fixture *f = *state;
	assert_parse_fails_with(f, "\r\n# x\r\n\r\nlog-level = loud\r\n",
				SOURCE ":4: log-level: 'loud' is not one of debug, info, warn, "
				       "error");
}

static void test_text_unknown_setting_fails(void **state)
{
	struct fixture *f = *state;
	assert_parse_fails_with(f, "workers = 2\nnope = 1\n", SOURCE ":2: unknown setting 'nope'");
	assert_parse_fails_with(f, "lookup-timout = 10\n",
				SOURCE ":1: unknown setting 'lookup-timout' (did you mean "
				       "'lookup-timeout'?)");
}

static void test_text_line_without_equals_fails(void **state)
{
	struct fixture *f = *state;
	assert_parse_fails_with(f, "workers 4\n",
				SOURCE ":1: expected 'name = value', got 'workers 4'");
}

static void test_text_config_setting_is_not_allowed(void **state)
{
	struct fixture *f = *state;
	assert_parse_fails_with(f, "\nconfig = /etc/other.conf\n",
				SOURCE ":2: 'config' only works on the command line");
	assert_null(f->config.config_file);
}

static void test_text_empty_value_fails(void **state)
{
	struct fixture *f = *state;
	assert_parse_fails_with(f, "database =\n", SOURCE ":1: database: empty value");
}

static void test_text_overlong_line_fails(void **state)
{
	struct fixture *f = *state;
	size_t length = 8192;
	char *text = malloc(length + 1);
	assert_non_null(text);
	memcpy(text, "database = ", 11);
	memset(text + 11, 'x', length - 11);
	text[length] = '\0';
	int result = parse_text(f, text);
	free(text);
	assert_int_equal(result, -1);
	assert_string_equal(f->error, SOURCE ":1: line too long");
}

/* config_validate */

static void assert_validate_fails_with(struct fixture *f, const char *message)
{
	assert_int_equal(validate(f), -1);
	assert_string_equal(f->error, message);
}

static void test_validate_accepts_a_media_root(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_int_equal(validate(f), 0);
}

static void test_validate_without_media_root_fails(void **state)
{
	struct fixture *f = *state;
	assert_validate_fails_with(f, NO_MEDIA_ROOT_MESSAGE);
}

#define METRICS_ON_THE_TRACK_PORT                                                                 \
	"metrics-listen: port 23001 on that address is where musicd serves tracks (listen); give " \
	"the metrics a port of their own"

static void test_validate_refuses_metrics_on_the_listen_address_and_port(void **state)
{
	/* Both SO_REUSEPORT: the kernel would spread the tracks' clients over /metrics too. */
	struct fixture *f = *state;
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_int_equal(set(f, "listen", "127.0.0.1:23001"), 0);
	assert_int_equal(set(f, "metrics-listen", "127.0.0.1:23001"), 0);
	assert_validate_fails_with(f, METRICS_ON_THE_TRACK_PORT);
}

static void test_validate_refuses_metrics_where_a_wildcard_covers_the_other(void **state)
{
	static const char *const pairs[][2] = {
		{"0.0.0.0:23001", "127.0.0.1:23001"}, {"127.0.0.1:23001", "0.0.0.0:23001"},
		{"[::]:23001", "127.0.0.1:23001"},   {"[::1]:23001", "[::]:23001"},
		{"[::1]:23001", "[::1]:23001"},
	};
	struct fixture *f = *state;
	assert_int_equal(set(f, "media-root", "/music"), 0);
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		assert_int_equal(set(f, "listen", pairs[i][0]), 0);
		assert_int_equal(set(f, "metrics-listen", pairs[i][1]), 0);
		assert_validate_fails_with(f, METRICS_ON_THE_TRACK_PORT);
	}
}

static void test_validate_accepts_metrics_on_another_port_or_address(void **state)
{
	static const char *const pairs[][2] = {
		{"127.0.0.1:23001", "127.0.0.1:23002"}, /* the defaults */
		{"127.0.0.1:23001", "127.0.0.2:23001"},
		{"0.0.0.0:23001", "[::1]:23001"}, /* an IPv4 wildcard leaves IPv6 alone */
	};
	struct fixture *f = *state;
	assert_int_equal(set(f, "media-root", "/music"), 0);
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		assert_int_equal(set(f, "listen", pairs[i][0]), 0);
		assert_int_equal(set(f, "metrics-listen", pairs[i][1]), 0);
		assert_int_equal(validate(f), 0);
	}
	assert_int_equal(set(f, "listen", "127.0.0.1:23001"), 0);
	assert_int_equal(set(f, "metrics-listen", "off"), 0);
	assert_int_equal(validate(f), 0);
}

static void test_validate_accepts_one_redirect_prefix_per_media_root(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, "media-root = /music\nmedia-root = /podcasts\n"
				       "x-accel-redirect = /internal/music/\n"
				       "x-accel-redirect = /internal/podcasts/\n"),
			 0);
	assert_int_equal(validate(f), 0);
}

static void test_validate_redirect_count_must_match_media_roots(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, "media-root = /music\nmedia-root = /podcasts\n"
				       "x-accel-redirect = /internal/music/\n"),
			 0);
	assert_validate_fails_with(f, "x-accel-redirect: given 1 times for 2 media roots; give one "
				      "prefix per media root, in the same order");
}

static void test_validate_redirect_prefix_must_start_with_a_slash(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, "media-root = /music\nx-accel-redirect = internal/\n"), 0);
	assert_validate_fails_with(f, "x-accel-redirect: 'internal/' must start with /");
}

static void test_validate_redirect_and_sendfile_together_fail(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, "media-root = /music\nx-accel-redirect = /internal/\n"
				       "x-sendfile = on\n"),
			 0);
	assert_validate_fails_with(f, "x-accel-redirect and x-sendfile cannot both be on");
}

static void test_validate_accepts_trusted_proxy_addresses_and_cidrs(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, "media-root = /music\ntrusted-proxy = 127.0.0.1\n"
				       "trusted-proxy = 10.0.0.0/8\ntrusted-proxy = ::1\n"
				       "trusted-proxy = fd00::/8\n"),
			 0);
	assert_int_equal(validate(f), 0);
}

static void test_validate_bad_trusted_proxy_fails(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(parse_text(f, "media-root = /music\ntrusted-proxy = proxy.local\n"), 0);
	assert_validate_fails_with(f, "trusted-proxy: 'proxy.local' is not an address or CIDR "
				      "(e.g. 10.0.0.0/8)");
}

/* config_validate: values written into response heads */

/* Sets name to value and expects config_validate to refuse it with message. */
static void assert_header_value_refused(struct fixture *f, const char *name, const char *value,
					const char *message)
{
	assert_int_equal(set(f, name, value), 0);
	assert_validate_fails_with(f, message);
}

static void test_validate_cache_control_with_cr_or_lf_fails(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_header_value_refused(f, "cache-control", "public\r\nX-Forged: 1",
				    "cache-control: control character 0x0d at byte 7; a header "
				    "value may not hold one");
	assert_header_value_refused(f, "cache-control", "public\nX-Forged: 1",
				    "cache-control: control character 0x0a at byte 7; a header "
				    "value may not hold one");
}

static void test_validate_error_cache_control_with_cr_or_lf_fails(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_header_value_refused(f, "error-cache-control", "no-store\r",
				    "error-cache-control: control character 0x0d at byte 9; a "
				    "header value may not hold one");
	assert_header_value_refused(f, "error-cache-control", "\nno-store",
				    "error-cache-control: control character 0x0a at byte 1; a "
				    "header value may not hold one");
}

static void test_validate_header_values_with_other_controls_fail(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_header_value_refused(f, "cache-control", "max-age=5\x7f",
				    "cache-control: control character 0x7f at byte 10; a header "
				    "value may not hold one");
	assert_int_equal(set(f, "cache-control", "max-age=5"), 0);
	assert_header_value_refused(f, "error-cache-control", "no\x01store",
				    "error-cache-control: control character 0x01 at byte 3; a "
				    "header value may not hold one");
}

static void test_validate_header_values_may_hold_tabs(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_int_equal(set(f, "cache-control", "public,\tmax-age=60"), 0);
	assert_int_equal(set(f, "error-cache-control", "no-store,\tno-cache"), 0);
	assert_int_equal(validate(f), 0);
}

/* A value of length bytes: "max-age=0, " then 'x's. */
static char *header_value_of_length(size_t length)
{
	char *value = malloc(length + 1);
	assert_non_null(value);
	memset(value, 'x', length);
	memcpy(value, "max-age=0, ", 11);
	value[length] = '\0';
	return value;
}

static void test_validate_header_values_up_to_the_maximum_pass(void **state)
{
	struct fixture *f = *state;
	char *value = header_value_of_length(CONFIG_HEADER_VALUE_MAX);
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_int_equal(set(f, "cache-control", value), 0);
	assert_int_equal(set(f, "error-cache-control", value), 0);
	int result = validate(f);
	free(value);
	assert_int_equal(result, 0);
}

static void test_validate_header_values_past_the_maximum_fail(void **state)
{
	struct fixture *f = *state;
	char *value = header_value_of_length(CONFIG_HEADER_VALUE_MAX + 1);
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_int_equal(set(f, "error-cache-control", value), 0);
	assert_int_equal(validate(f), -1);
	assert_string_equal(f->error, "error-cache-control: 1025 bytes long; a header value may be "
				      "at most 1024");
	assert_int_equal(set(f, "error-cache-control", "no-store"), 0);
	assert_int_equal(set(f, "cache-control", value), 0);
	free(value);
	assert_validate_fails_with(f, "cache-control: 1025 bytes long; a header value may be at "
				      "most 1024");
}

static void test_validate_header_values_off_pass(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_int_equal(set(f, "cache-control", "off"), 0);
	assert_int_equal(set(f, "error-cache-control", "off"), 0);
	assert_int_equal(validate(f), 0);
}

static void test_validate_redirect_prefix_with_a_control_character_fails(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(set(f, "media-root", "/music"), 0);
	assert_header_value_refused(f, "x-accel-redirect", "/internal/\r\nX-Forged: 1",
				    "x-accel-redirect: control character 0x0d at byte 11; a header "
				    "value may not hold one");
}

/* config_load */

static void test_load_with_a_media_root_runs_with_defaults(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL, ARGV("--media-root", "/music")), 0);
	assert_int_equal(f->action, CONFIG_ACTION_RUN);
	const char *const expected[] = {"/music"};
	assert_media_roots(&f->config, expected, 1);
	assert_string_equal(f->config.mongodb_uri, "mongodb://127.0.0.1:27017");
	assert_int_equal(f->config.lookup_threads, 8);
	assert_null(f->config.config_file);
}

static void test_load_flag_value_may_follow_an_equals_sign(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL,
			      ARGV("--media-root=/music", "--workers=4", "--listen=:8080",
				   "--mongodb-uri=mongodb://h/?a=b")),
			 0);
	assert_int_equal(f->config.workers, 4);
	assert_string_equal(f->config.listen_host, "::");
	assert_int_equal(f->config.listen_port, 8080);
	assert_string_equal(f->config.mongodb_uri, "mongodb://h/?a=b");
	assert_string_equal(f->config.media_roots[0], "/music");
}

static void test_load_flag_value_may_be_the_next_argument(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL,
			      ARGV("--media-root", "/music", "--workers", "4", "--log-level",
				   "debug", "--access-log", "-")),
			 0);
	assert_int_equal(f->config.workers, 4);
	assert_int_equal(f->config.log_level, LOG_LEVEL_DEBUG);
	assert_string_equal(f->config.access_log, "-");
}

static void test_load_later_flag_overrides_earlier(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(
		load(f, NULL, ARGV("--media-root", "/music", "--workers", "4", "--workers=6")), 0);
	assert_int_equal(f->config.workers, 6);
}

static void test_load_env_mongodb_uri_overrides_the_default(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, "mongodb://env-host:27017", ARGV("--media-root", "/music")), 0);
	assert_string_equal(f->config.mongodb_uri, "mongodb://env-host:27017");
}

static void test_load_file_overrides_env_mongodb_uri(void **state)
{
	struct fixture *f = *state;
	char *path = write_config_file(f, "mongodb-uri = mongodb://file-host:27017\n"
						"media-root = /music\n");
	assert_int_equal(load(f, "mongodb://env-host:27017", ARGV("--config", path)), 0);
	assert_string_equal(f->config.mongodb_uri, "mongodb://file-host:27017");
}

static void test_load_flags_override_the_file(void **state)
{
	struct fixture *f = *state;
	char *path = write_config_file(f, "workers = 2\ndatabase = filedb\nlookup-threads = 3\n"
						"media-root = /music\n");
	assert_int_equal(load(f, "mongodb://env-host:27017",
			      ARGV("--workers", "5", "--config", path, "--mongodb-uri",
				   "mongodb://flag-host:27017")),
			 0);
	assert_int_equal(f->config.workers, 5);
	assert_string_equal(f->config.mongodb_uri, "mongodb://flag-host:27017");
	assert_string_equal(f->config.database, "filedb");
	assert_int_equal(f->config.lookup_threads, 3);
}

static void test_load_records_the_config_file(void **state)
{
	struct fixture *f = *state;
	char *path = write_config_file(f, "media-root = /music\n");
	assert_int_equal(load(f, NULL, ARGV("--config", path)), 0);
	assert_string_equal(f->config.config_file, path);
}

static void test_load_keeps_the_file_media_roots_without_flags(void **state)
{
	struct fixture *f = *state;
	char *path = write_config_file(f, "media-root = /music\nmedia-root = /podcasts\n");
	assert_int_equal(load(f, NULL, ARGV("--config", path)), 0);
	const char *const expected[] = {"/music", "/podcasts"};
	assert_media_roots(&f->config, expected, 2);
}

static void test_load_media_root_flags_replace_the_file_list(void **state)
{
	struct fixture *f = *state;
	char *path = write_config_file(f, "media-root = /music\nmedia-root = /podcasts\n");
	char **argv = ARGV("--media-root", "/srv/a", "--config", path, "--media-root=/srv/b");
	assert_int_equal(load(f, NULL, argv), 0);
	const char *const expected[] = {"/srv/a", "/srv/b"};
	assert_media_roots(&f->config, expected, 2);
}

static void test_load_list_flags_replace_the_file_list(void **state)
{
	struct fixture *f = *state;
	char *path = write_config_file(f, "media-root = /music\ntrusted-proxy = 10.0.0.1\n"
					  "trusted-proxy = 10.0.0.2\n");
	assert_int_equal(load(f, NULL, ARGV("--config", path, "--trusted-proxy", "192.0.2.1")), 0);
	assert_int_equal(f->config.trusted_proxy_count, 1);
	assert_string_equal(f->config.trusted_proxies[0], "192.0.2.1");
}

static void test_load_bare_switch_flag_turns_it_on(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL, ARGV("--x-sendfile", "--media-root", "/music")), 0);
	assert_int_equal(f->config.x_sendfile, 1);
}

static void test_load_switch_flag_takes_a_value_after_equals(void **state)
{
	struct fixture *f = *state;
	char *path = write_config_file(f, "media-root = /music\nx-sendfile = on\n");
	assert_int_equal(load(f, NULL, ARGV("--config", path, "--x-sendfile=off")), 0);
	assert_int_equal(f->config.x_sendfile, 0);
}

static void test_load_checks_settings_against_each_other(void **state)
{
	struct fixture *f = *state;
	assert_load_fails_with(f,
			       ARGV("--media-root", "/music", "--x-sendfile", "--x-accel-redirect",
				    "/internal/"),
			       "x-accel-redirect and x-sendfile cannot both be on");
}

static void test_load_header_value_with_a_cr_in_the_file_fails(void **state)
{
	struct fixture *f = *state;
	/* The file's lines end at LF; a CR inside one survives into the value. */
	char *path = write_config_file(f, "media-root = /music\n"
					  "error-cache-control = no-store\rX-Forged: 1\n");
	assert_load_fails_with(f, ARGV("--config", path),
			       "error-cache-control: control character 0x0d at byte 9; a header "
			       "value may not hold one");
}

static void test_load_header_value_with_a_lf_in_a_flag_fails(void **state)
{
	struct fixture *f = *state;
	assert_load_fails_with(f,
			       ARGV("--media-root", "/music", "--cache-control",
				    "public\nX-Forged: 1"),
			       "cache-control: control character 0x0a at byte 7; a header value "
			       "may not hold one");
}

static void test_load_without_media_root_fails(void **state)
{
	struct fixture *f = *state;
	assert_load_fails_with(f, ARGV("--workers", "2"), NO_MEDIA_ROOT_MESSAGE);
	assert_load_fails_with(f, ARGV(), NO_MEDIA_ROOT_MESSAGE);
}

static void test_load_unknown_option_fails(void **state)
{
	struct fixture *f = *state;
	assert_load_fails_with(f, ARGV("--media-root", "/music", "--nope", "1"),
			       "unknown option '--nope' (see --help)");
	assert_load_fails_with(f, ARGV("--nope=1"), "unknown option '--nope' (see --help)");
	assert_load_fails_with(f, ARGV("--medai-root", "/music"),
			       "unknown option '--medai-root' (did you mean '--media-root'?)");
	/* The words outside the table are suggested too. */
	assert_load_fails_with(f, ARGV("--check-confg"),
			       "unknown option '--check-confg' (did you mean '--check-config'?)");
	assert_load_fails_with(f, ARGV("--sign-ulr", "x"),
			       "unknown option '--sign-ulr' (did you mean '--sign-url'?)");
}

static void test_load_argument_without_dashes_fails(void **state)
{
	struct fixture *f = *state;
	assert_load_fails_with(f, ARGV("serve"),
			       "unexpected argument 'serve' (options start with --)");
	assert_load_fails_with(f, ARGV("-w", "4"),
			       "unexpected argument '-w' (options start with --)");
}

static void test_load_option_missing_its_value_fails(void **state)
{
	struct fixture *f = *state;
	assert_load_fails_with(f, ARGV("--media-root", "/music", "--workers"),
			       "option '--workers' needs a value");
}

static void test_load_bad_flag_value_fails_naming_the_flag(void **state)
{
	struct fixture *f = *state;
	assert_load_fails_with(f, ARGV("--media-root", "/music", "--workers", "0"),
			       "--workers: '0' is not a number from 1 to 256");
	assert_load_fails_with(f, ARGV("--media-root", "/music", "--listen=nowhere"),
			       "--listen: 'nowhere' is not ADDR:PORT (IPv6 as [ADDR]:PORT, port "
			       "1-65535)");
}

static void test_load_reads_the_installed_file_without_config(void **state)
{
	struct fixture *f = *state;
	char *installed = write_config_file(f, "media-root = /installed\nworkers = 3\n");
	assert_int_equal(load_installed(f, installed, ARGV("--workers", "2")), 0);
	assert_string_equal(f->config.media_roots[0], "/installed");
	assert_int_equal(f->config.workers, 2); /* flags override it, as they do --config's */
	assert_string_equal(f->config.config_file, installed);
}

static void test_load_reads_nothing_when_the_installed_file_is_missing(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load_installed(f, "/nonexistent-musicd-dir/musicd.conf",
					ARGV("--media-root", "/music")),
			 0);
	assert_null(f->config.config_file);
	assert_false(f->config.config_off);
}

static void test_load_reports_an_installed_file_it_cannot_read(void **state)
{
	struct fixture *f = *state;
	/* A directory where the file should be: it exists, so it is read, and fails. */
	assert_int_equal(load_installed(f, "/tmp", ARGV("--media-root", "/music")), -1);
	assert_non_null(strstr(f->error, "config file /tmp"));
}

static void test_load_config_off_reads_no_file_not_even_the_installed_one(void **state)
{
	struct fixture *f = *state;
	char *installed = write_config_file(f, "media-root = /installed\n");
	assert_int_equal(load_installed(f, installed, ARGV("--config", "off", "--media-root", "/m")),
			 0);
	assert_string_equal(f->config.media_roots[0], "/m");
	assert_int_equal(f->config.media_root_count, 1);
	assert_null(f->config.config_file);
	assert_true(f->config.config_off);
	config_free(&f->config);
	config_init(&f->config);
	assert_int_equal(load_installed(f, installed, ARGV("--config=off")), -1);
	assert_string_equal(f->error, NO_MEDIA_ROOT_MESSAGE);
}

static void test_load_config_names_the_file_instead_of_the_installed_one(void **state)
{
	struct fixture *f = *state;
	char *given = write_config_file(f, "media-root = /given\n");
	assert_int_equal(load_installed(f, "/nonexistent-musicd-dir/musicd.conf",
					ARGV("--config", given)),
			 0);
	assert_string_equal(f->config.media_roots[0], "/given");
	assert_string_equal(f->config.config_file, given);
}

static void test_load_bad_file_line_fails_naming_file_and_line(void **state)
{
	struct fixture *f = *state;
	char *path = write_config_file(f, "media-root = /music\nnope = 1\n");
	char expected[CONFIG_ERROR_MAX];
	snprintf(expected, sizeof(expected), "%s:2: unknown setting 'nope'", path);
	assert_load_fails_with(f, ARGV("--config", path), expected);
}

static void test_load_missing_config_file_fails(void **state)
{
	struct fixture *f = *state;
	char **argv = ARGV("--media-root", "/music", "--config", "/nonexistent/musicd.conf");
	assert_load_fails_with(f, argv,
			       "config file /nonexistent/musicd.conf: No such file or directory");
}

static void test_load_help_asks_for_help(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL, ARGV("--help")), 0);
	assert_int_equal(f->action, CONFIG_ACTION_HELP);
}

static void test_load_short_help_asks_for_help(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL, ARGV("-h")), 0);
	assert_int_equal(f->action, CONFIG_ACTION_HELP);
}

static void test_load_help_wins_over_a_missing_config_file(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL, ARGV("--config", "/nonexistent/musicd.conf", "--help")), 0);
	assert_int_equal(f->action, CONFIG_ACTION_HELP);
}

static void test_load_version_asks_for_the_version(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL, ARGV("--version")), 0);
	assert_int_equal(f->action, CONFIG_ACTION_VERSION);
}

static void test_load_check_config_asks_for_a_check_after_loading_everything(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL, ARGV("-t", "--media-root", "/music", "--workers", "3")), 0);
	assert_int_equal(f->action, CONFIG_ACTION_CHECK);
	assert_int_equal(f->config.workers, 3);
	assert_int_equal(load(f, NULL, ARGV("--media-root", "/music", "--check-config")), 0);
	assert_int_equal(f->action, CONFIG_ACTION_CHECK);
}

static void test_load_check_config_still_refuses_a_bad_setting(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL, ARGV("-t", "--media-root", "/music", "--workers", "0")), -1);
	assert_non_null(strstr(f->error, "workers"));
}

/* -- --gridfs-cache-size: a 64-bit byte count, with binary suffixes -------------------------- */

/* "<before>'<value>'<after>" in out: an expected message that quotes the value. */
static const char *quoting(char out[CONFIG_ERROR_MAX], const char *before, const char *value,
			   const char *after)
{
	snprintf(out, CONFIG_ERROR_MAX, "%s'%s'%s", before, value, after);
	return out;
}

/* Setting name to value fails, saying it is not a size within range ("0 to 1024"). */
static void assert_size_refused(struct fixture *f, const char *name, const char *value,
				const char *range)
{
	char expected[CONFIG_ERROR_MAX];
	snprintf(expected, sizeof(expected),
		 "%s: '%s' is not a size from %s bytes (digits, optionally followed by K, M, G, T "
		 "or P)",
		 name, value, range);
	assert_set_fails_with(f, name, value, expected);
}

struct size_text {
	const char *text;
	uint64_t bytes;
};

/* Each text sets --gridfs-cache-size to its bytes. */
static void assert_sizes(struct fixture *f, const struct size_text *sizes, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		if (set(f, "gridfs-cache-size", sizes[i].text) != 0)
			fail_msg("gridfs-cache-size = %s: %s", sizes[i].text, f->error);
		assert_true(f->config.gridfs_cache_size == sizes[i].bytes);
	}
}

static void test_gridfs_cache_size_defaults_to_1_gib(void **state)
{
	struct fixture *f = *state;
	assert_true(f->config.gridfs_cache_size == (uint64_t)1 << 30);
}

static void test_gridfs_cache_size_takes_bytes_from_0_to_2_to_the_62(void **state)
{
	struct fixture *f = *state;
	const struct size_text sizes[] = {
		{"0", 0},
		{"4294967295", 4294967295u},
		{"4294967296", (uint64_t)1 << 32},
		{"5000000000000", 5000000000000u},
		{"4611686018427387904", (uint64_t)1 << 62},
	};
	assert_sizes(f, sizes, sizeof(sizes) / sizeof(sizes[0]));
	assert_true(CONFIG_MAX_GRIDFS_CACHE_SIZE == (uint64_t)1 << 62);
}

static void test_gridfs_cache_size_suffixes_are_powers_of_1024(void **state)
{
	struct fixture *f = *state;
	const struct size_text sizes[] = {
		{"0K", 0},
		{"1K", 1024},
		{"512M", (uint64_t)512 << 20},
		{"8G", (uint64_t)8 << 30},
		{"20T", (uint64_t)20 << 40},
		{"4096P", (uint64_t)1 << 62},
	};
	assert_sizes(f, sizes, sizeof(sizes) / sizeof(sizes[0]));
}

static void test_gridfs_cache_size_past_2_to_the_62_or_malformed_fails_and_keeps_the_value(
	void **state)
{
	struct fixture *f = *state;
	const char *const values[] = {
		"4611686018427387905", "4097P", "4194305T", "18446744073709551615",
		"18446744073709551616", "99999999999999999999999", "-1", "+1", " 1", "1 ",
		"1k", "1KB", "1KiB", "1E", "1.5G", "0x10", "G", "1GG",
	};
	assert_int_equal(set(f, "gridfs-cache-size", "8G"), 0);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		assert_size_refused(f, "gridfs-cache-size", values[i], "0 to 4611686018427387904");
		assert_true(f->config.gridfs_cache_size == (uint64_t)8 << 30);
	}
}

static void test_gridfs_cache_size_from_the_file_is_replaced_by_the_flag(void **state)
{
	struct fixture *f = *state;
	char *path = write_config_file(f, "media-root = /music\ngridfs-cache-size = 6T\n");
	assert_int_equal(load(f, NULL, ARGV("--config", path)), 0);
	assert_true(f->config.gridfs_cache_size == (uint64_t)6 << 40);
	assert_int_equal(load(f, NULL, ARGV("--config", path, "--gridfs-cache-size=5000000000")), 0);
	assert_true(f->config.gridfs_cache_size == 5000000000u);
}

/* -- the config file is a regular file: a FIFO would hold the start forever ---------------------- */

static void test_a_config_path_that_is_not_a_regular_file_is_refused_at_once(void **state)
{
	struct fixture *f = *state;
	snprintf(f->path, sizeof(f->path), "/tmp/musicd-test-config.XXXXXX");
	assert_non_null(mkdtemp(f->path));
	char fifo[sizeof(f->path) + 8];
	snprintf(fifo, sizeof(fifo), "%s/fifo", f->path);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* No writer: an open that blocked would never return, and the test would hang. */
	char expected[CONFIG_ERROR_MAX];
	snprintf(expected, sizeof(expected), "config file %s: not a regular file", fifo);
	assert_load_fails_with(f, ARGV("--config", fifo), expected);
	snprintf(expected, sizeof(expected), "config file %s: not a regular file", f->path);
	assert_load_fails_with(f, ARGV("--config", f->path), expected);
	unlink(fifo);
	rmdir(f->path);
	f->path[0] = '\0';
}

/* -- the windows: sizes too, with a smallest one ----------------------------------------------- */

static void test_the_windows_take_a_size_with_a_suffix(void **state)
{
	struct fixture *f = *state;
	const struct {
		const char *name, *text;
		uint64_t bytes;
		const uint64_t *field;
	} sizes[] = {
		{"disk-window", "256K", 262144, &f->config.disk_window},
		{"disk-window", "65536", 65536, &f->config.disk_window},
		{"disk-window", "64M", (uint64_t)64 << 20, &f->config.disk_window},
		{"gridfs-window", "1K", 1024, &f->config.gridfs_window},
		{"gridfs-window", "1G", (uint64_t)1 << 30, &f->config.gridfs_window},
	};
	assert_true(f->config.disk_window == 524288 && f->config.gridfs_window == 1048576);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (set(f, sizes[i].name, sizes[i].text) != 0)
			fail_msg("%s = %s: %s", sizes[i].name, sizes[i].text, f->error);
		assert_true(*sizes[i].field == sizes[i].bytes);
	}
}

static void test_a_window_outside_its_sizes_fails_and_keeps_the_value(void **state)
{
	struct fixture *f = *state;
	const char *const values[] = {"65535", "32K", "67108865", "65M", "1G", "0", "256k", "1.5M"};
	assert_int_equal(set(f, "disk-window", "512K"), 0);
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		assert_size_refused(f, "disk-window", values[i], "65536 to 67108864");
		assert_true(f->config.disk_window == 524288);
	}
	assert_size_refused(f, "gridfs-window", "1023", "1024 to 1073741824");
	assert_true(f->config.gridfs_window == 1048576);
}

static void test_gridfs_cache_size_is_copied_whole(void **state)
{
	struct fixture *f = *state;
	struct config copy;
	assert_int_equal(set(f, "gridfs-cache-size", "4611686018427387904"), 0);
	assert_int_equal(config_copy(&copy, &f->config), 0);
	assert_true(copy.gridfs_cache_size == (uint64_t)1 << 62);
	config_free(&copy);
}

/* -- --cors-origin: repeatable, or "*" or "off" alone; anything else refused by name ---------- */

static void test_cors_origin_is_off_unless_given(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL, ARGV("--media-root", "/music")), 0);
	assert_int_equal(f->config.cors_origin_count, 0);
}

static void test_cors_origin_flags_repeat_in_order(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL,
			      ARGV("--media-root", "/music", "--cors-origin",
				   "https://player.example.com", "--cors-origin=http://127.0.0.1:8000",
				   "--cors-origin", "http://[::1]:8080")),
			 0);
	const char *const expected[] = {"https://player.example.com", "http://127.0.0.1:8000",
					"http://[::1]:8080"};
	assert_items(f->config.cors_origins, f->config.cors_origin_count, expected, 3);
}

static void test_cors_origin_flags_replace_the_file_list(void **state)
{
	struct fixture *f = *state;
	char *path = write_config_file(f, "media-root = /music\n"
					  "cors-origin = https://a.example\n"
					  "cors-origin = https://b.example\n");
	assert_int_equal(load(f, NULL, ARGV("--config", path)), 0);
	assert_int_equal(f->config.cors_origin_count, 2);
	assert_int_equal(load(f, NULL, ARGV("--config", path, "--cors-origin", "off")), 0);
	assert_int_equal(f->config.cors_origin_count, 1);
	assert_string_equal(f->config.cors_origins[0], "off");
}

static void test_cors_origin_star_and_off_are_accepted_alone(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL, ARGV("--media-root", "/music", "--cors-origin", "*")), 0);
	assert_string_equal(f->config.cors_origins[0], "*");
	assert_int_equal(load(f, NULL, ARGV("--media-root", "/music", "--cors-origin", "off")), 0);
	assert_string_equal(f->config.cors_origins[0], "off");
}

static void test_cors_origin_star_or_off_beside_an_origin_fails(void **state)
{
	struct fixture *f = *state;
	assert_load_fails_with(f,
			       ARGV("--media-root", "/music", "--cors-origin", "https://a.example",
				    "--cors-origin", "*"),
			       "cors-origin: '*' cannot be combined with other origins");
	assert_load_fails_with(f,
			       ARGV("--media-root", "/music", "--cors-origin", "off",
				    "--cors-origin", "https://a.example"),
			       "cors-origin: 'off' cannot be combined with other origins");
}

static void test_cors_origin_that_is_not_an_origin_fails_naming_it(void **state)
{
	struct fixture *f = *state;
	char *const bad[] = {
		"https://player.example.com/", "https://player.example.com/app",
		"player.example.com",	       "HTTPS://player.example.com",
		"https://Player.example.com",  "https://player.example.com:0",
		"https://player.example.com:65536", "https://user@player.example.com",
		"null",			       "OFF",
		"**",			       "https://*.example.com",
		"http://.",		       "http://.example.com",
		"http://a..example.com",      "http://example.com..",
		"http://[1.2.3.4]",	       "http://[:]",
		"http://[]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char expected[CONFIG_ERROR_MAX];
		assert_load_fails_with(f, ARGV("--media-root", "/music", "--cors-origin", bad[i]),
				       quoting(expected, "cors-origin: ", bad[i],
					       " is not an origin: give scheme://host[:port] in lower "
					       "case as browsers send it (no path, no trailing slash), "
					       "* or off"));
	}
}

static void test_cors_origin_with_a_control_character_fails_without_echoing_it(void **state)
{
	struct fixture *f = *state;
	char *path = write_config_file(f, "media-root = /music\n"
					  "cors-origin = https://a.example\x01\n");
	assert_int_equal(load(f, NULL, ARGV("--config", path)), -1);
	assert_null(strchr(f->error, '\x01'));
	assert_error_names(f->error, "cors-origin", "control character");
}

static void test_cors_origin_names_keep_a_single_trailing_dot(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, NULL,
			      ARGV("--media-root", "/music", "--cors-origin", "https://example.com.",
				   "--cors-origin", "http://[::]:80")),
			 0);
	assert_int_equal(f->config.cors_origin_count, 2);
}

static void test_cors_origin_beyond_the_maximum_fails(void **state)
{
	struct fixture *f = *state;
	fill_list(f, "cors-origin", "https://p", ".example", CONFIG_MAX_CORS_ORIGINS);
	assert_set_fails_with(f, "cors-origin", "https://one-too-many.example",
			      "cors-origin: given more than 32 times");
}

int main(void)
{
#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		TEST(test_validate_refuses_metrics_on_the_listen_address_and_port),
		TEST(test_validate_refuses_metrics_where_a_wildcard_covers_the_other),
		TEST(test_validate_accepts_metrics_on_another_port_or_address),
		TEST(test_gridfs_cache_size_defaults_to_1_gib),
		TEST(test_gridfs_cache_size_takes_bytes_from_0_to_2_to_the_62),
		TEST(test_gridfs_cache_size_suffixes_are_powers_of_1024),
		TEST(test_gridfs_cache_size_past_2_to_the_62_or_malformed_fails_and_keeps_the_value),
		TEST(test_gridfs_cache_size_from_the_file_is_replaced_by_the_flag),
		TEST(test_gridfs_cache_size_is_copied_whole),
		TEST(test_a_config_path_that_is_not_a_regular_file_is_refused_at_once),
		TEST(test_the_windows_take_a_size_with_a_suffix),
		TEST(test_a_window_outside_its_sizes_fails_and_keeps_the_value),
		TEST(test_cors_origin_is_off_unless_given),
		TEST(test_cors_origin_flags_repeat_in_order),
		TEST(test_cors_origin_flags_replace_the_file_list),
		TEST(test_cors_origin_star_and_off_are_accepted_alone),
		TEST(test_cors_origin_star_or_off_beside_an_origin_fails),
		TEST(test_cors_origin_that_is_not_an_origin_fails_naming_it),
		TEST(test_cors_origin_with_a_control_character_fails_without_echoing_it),
		TEST(test_cors_origin_names_keep_a_single_trailing_dot),
		TEST(test_cors_origin_beyond_the_maximum_fails),
		TEST(test_load_check_config_asks_for_a_check_after_loading_everything),
		TEST(test_load_check_config_still_refuses_a_bad_setting),
		TEST(test_init_sets_every_default),
		TEST(test_init_after_free_sets_the_defaults_again),
		TEST(test_set_string_settings_replace_their_value),
		TEST(test_set_string_twice_keeps_the_last),
		TEST(test_set_config_records_the_file),
		TEST(test_set_empty_value_fails_naming_the_setting),
		TEST(test_set_unknown_setting_fails_naming_it),
		TEST(test_set_workers_accepts_1_to_256),
		TEST(test_set_workers_out_of_range_fails_naming_the_range),
		TEST(test_set_each_number_accepts_its_bounds),
		TEST(test_set_each_number_rejects_values_past_its_bounds),
		TEST(test_set_number_rejects_anything_but_decimal_digits),
		TEST(test_set_max_header_size_outside_its_bounds_fails_naming_them),
		TEST(test_set_timeouts_are_independent_of_each_other),
		TEST(test_set_number_ignores_leading_zeros),
		TEST(test_set_listen_sets_host_and_port),
		TEST(test_set_listen_accepts_bracketed_ipv6),
		TEST(test_set_listen_invalid_fails_naming_the_setting),
		TEST(test_set_media_root_appends_in_order),
		TEST(test_set_media_root_beyond_the_maximum_fails),
		TEST(test_set_trusted_proxy_appends_in_order),
		TEST(test_set_trusted_proxy_beyond_the_maximum_fails),
		TEST(test_set_x_accel_redirect_appends_in_order),
		TEST(test_set_switch_on_words_turn_it_on),
		TEST(test_set_switch_off_words_turn_it_off),
		TEST(test_set_switch_other_words_fail),
		TEST(test_set_error_cache_control_replaces_it),
		TEST(test_set_error_cache_control_off_turns_it_off),
		TEST(test_set_access_log_to_a_path),
		TEST(test_set_access_log_to_stdout),
		TEST(test_set_access_log_off_turns_it_off),
		TEST(test_set_cache_control_replaces_it),
		TEST(test_set_cache_control_off_turns_it_off),
		TEST(test_set_log_level_accepts_each_level),
		TEST(test_set_log_level_unknown_fails_listing_the_levels),
		TEST(test_listen_ipv4_and_port),
		TEST(test_listen_host_name_and_port),
		TEST(test_listen_bracketed_ipv6_and_port),
		TEST(test_listen_port_alone_is_any_address),
		TEST(test_listen_port_1_and_65535_are_accepted),
		TEST(test_listen_bad_ports_are_rejected),
		TEST(test_listen_missing_port_is_rejected),
		TEST(test_listen_bare_ipv6_is_rejected),
		TEST(test_listen_malformed_brackets_are_rejected),
		TEST(test_listen_host_too_long_for_the_buffer_is_rejected),
		TEST(test_text_applies_name_value_lines),
		TEST(test_text_allows_spaces_and_tabs_around_equals),
		TEST(test_text_skips_comments_and_blank_lines),
		TEST(test_text_accepts_crlf_line_endings),
		TEST(test_text_last_line_needs_no_newline),
		TEST(test_text_value_may_contain_equals),
		TEST(test_text_empty_applies_nothing),
		TEST(test_text_repeated_media_root_appends),
		TEST(test_text_bad_value_error_names_source_and_line),
		TEST(test_text_line_numbers_count_blank_crlf_lines),
		TEST(test_text_unknown_setting_fails),
		TEST(test_text_line_without_equals_fails),
		TEST(test_text_config_setting_is_not_allowed),
		TEST(test_text_empty_value_fails),
		TEST(test_text_overlong_line_fails),
		TEST(test_validate_accepts_a_media_root),
		TEST(test_validate_without_media_root_fails),
		TEST(test_validate_accepts_one_redirect_prefix_per_media_root),
		TEST(test_validate_redirect_count_must_match_media_roots),
		TEST(test_validate_redirect_prefix_must_start_with_a_slash),
		TEST(test_validate_redirect_and_sendfile_together_fail),
		TEST(test_validate_accepts_trusted_proxy_addresses_and_cidrs),
		TEST(test_validate_bad_trusted_proxy_fails),
		TEST(test_validate_cache_control_with_cr_or_lf_fails),
		TEST(test_validate_error_cache_control_with_cr_or_lf_fails),
		TEST(test_validate_header_values_with_other_controls_fail),
		TEST(test_validate_header_values_may_hold_tabs),
		TEST(test_validate_header_values_up_to_the_maximum_pass),
		TEST(test_validate_header_values_past_the_maximum_fail),
		TEST(test_validate_header_values_off_pass),
		TEST(test_validate_redirect_prefix_with_a_control_character_fails),
		TEST(test_load_with_a_media_root_runs_with_defaults),
		TEST(test_load_flag_value_may_follow_an_equals_sign),
		TEST(test_load_flag_value_may_be_the_next_argument),
		TEST(test_load_later_flag_overrides_earlier),
		TEST(test_load_env_mongodb_uri_overrides_the_default),
		TEST(test_load_file_overrides_env_mongodb_uri),
		TEST(test_load_flags_override_the_file),
		TEST(test_load_records_the_config_file),
		TEST(test_load_keeps_the_file_media_roots_without_flags),
		TEST(test_load_media_root_flags_replace_the_file_list),
		TEST(test_load_list_flags_replace_the_file_list),
		TEST(test_load_bare_switch_flag_turns_it_on),
		TEST(test_load_switch_flag_takes_a_value_after_equals),
		TEST(test_load_checks_settings_against_each_other),
		TEST(test_load_header_value_with_a_cr_in_the_file_fails),
		TEST(test_load_header_value_with_a_lf_in_a_flag_fails),
		TEST(test_load_without_media_root_fails),
		TEST(test_load_unknown_option_fails),
		TEST(test_load_argument_without_dashes_fails),
		TEST(test_load_option_missing_its_value_fails),
		TEST(test_load_bad_flag_value_fails_naming_the_flag),
		TEST(test_load_reads_the_installed_file_without_config),
		TEST(test_load_reads_nothing_when_the_installed_file_is_missing),
		TEST(test_load_reports_an_installed_file_it_cannot_read),
		TEST(test_load_config_off_reads_no_file_not_even_the_installed_one),
		TEST(test_load_config_names_the_file_instead_of_the_installed_one),
		TEST(test_load_bad_file_line_fails_naming_file_and_line),
		TEST(test_load_missing_config_file_fails),
		TEST(test_load_help_asks_for_help),
		TEST(test_load_short_help_asks_for_help),
		TEST(test_load_help_wins_over_a_missing_config_file),
		TEST(test_load_version_asks_for_the_version),
	};
#undef TEST
	return cmocka_run_group_tests(tests, NULL, NULL);
}
