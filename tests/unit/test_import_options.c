/*
 * Unit tests for import/options.h: musicd's defaults for the database
 * settings, the import-only flags, DIR arguments anywhere and after "--",
 * the precedence defaults < MONGODB_URI < --config file < flags (musicd's
 * own settings in the file accepted), and each usage error with its message.
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

#include "options.h"

struct fixture {
	struct import_options options;
	enum import_action action;
	char error[512];
	char path[64];
	const char *installed; /* the installed config file load passes; NULL: none */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -1;
	import_options_init(&f->options);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	import_options_free(&f->options);
	if (f->path[0] != '\0')
		unlink(f->path);
	free(f);
	return 0;
}

#define LOAD(f, env, ...)                                                                          \
	load(f, env, (char *const[]){"musicd-import", __VA_ARGS__, NULL},                          \
	     (int)(sizeof((const char *[]){"musicd-import", __VA_ARGS__}) / sizeof(char *)))

/* Each load starts from fresh options, as a new process would. */
static int load(struct fixture *f, const char *env, char *const *argv, int argc)
{
	import_options_free(&f->options);
	import_options_init(&f->options);
	return import_options_load(&f->options, argc, argv, env, f->installed, &f->action, f->error,
				   sizeof(f->error));
}

static void write_config(struct fixture *f, const char *text)
{
	strcpy(f->path, "/tmp/test_import_options.XXXXXX");
	int fd = mkstemp(f->path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* -- the installed config file: read as musicd reads it ---------------------------------------- */

static void test_the_installed_config_is_read_without_config(void **state)
{
	struct fixture *f = *state;
	write_config(f, "media-root = /srv\nmongodb-uri = mongodb://installed:1\ndatabase = idb\n");
	f->installed = f->path;
	assert_int_equal(LOAD(f, "mongodb://env:1", "--collection", "flagcoll", "/music"), 0);
	assert_string_equal(f->options.config.mongodb_uri, "mongodb://installed:1");
	assert_string_equal(f->options.config.database, "idb");
	assert_string_equal(f->options.config.collection, "flagcoll");
}

static void test_config_off_or_another_file_reads_not_the_installed_one(void **state)
{
	struct fixture *f = *state;
	write_config(f, "database = idb\n");
	f->installed = f->path;
	assert_int_equal(LOAD(f, NULL, "--config", "off", "/music"), 0);
	assert_string_equal(f->options.config.database, "musicdb");
	char other[] = "/tmp/test_import_options_other.XXXXXX";
	int fd = mkstemp(other);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "database = odb\n", 15), 15);
	close(fd);
	assert_int_equal(LOAD(f, NULL, "--config", other, "/music"), 0);
	unlink(other);
	assert_string_equal(f->options.config.database, "odb");
}

static void test_a_missing_installed_config_is_no_error_and_a_bad_one_is(void **state)
{
	struct fixture *f = *state;
	f->installed = "/nonexistent/musicd.conf";
	assert_int_equal(LOAD(f, NULL, "/music"), 0);
	assert_string_equal(f->options.config.database, "musicdb");
	write_config(f, "workers = many\n");
	f->installed = f->path;
	assert_int_equal(LOAD(f, NULL, "/music"), -1);
	assert_non_null(strstr(f->error, f->path));
}

static void test_defaults_are_musicds(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(LOAD(f, NULL, "/music"), 0);
	assert_int_equal(f->action, IMPORT_RUN);
	assert_string_equal(f->options.config.mongodb_uri, "mongodb://127.0.0.1:27017");
	assert_string_equal(f->options.config.database, "musicdb");
	assert_string_equal(f->options.config.collection, "tracks");
	assert_string_equal(f->options.config.path_field, "path");
	assert_false(f->options.hash || f->options.prune || f->options.dry_run || f->options.json);
	assert_int_equal(f->options.jobs, 0);
	assert_null(f->options.print_urls);
	assert_int_equal(f->options.dir_count, 1);
	assert_string_equal(f->options.dirs[0], "/music");
}

static void test_import_flags(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(LOAD(f, NULL, "--hash", "a", "--prune", "--dry-run", "--jobs", "3", "b",
			      "--json", "--print-urls=http://h:1/"),
			 0);
	assert_true(f->options.hash && f->options.prune && f->options.dry_run && f->options.json);
	assert_int_equal(f->options.jobs, 3);
	assert_string_equal(f->options.print_urls, "http://h:1"); /* trailing slash dropped */
	assert_int_equal(f->options.dir_count, 2);
	assert_string_equal(f->options.dirs[1], "b");
}

static void test_double_dash_makes_the_rest_directories(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(LOAD(f, NULL, "--", "--hash", "-"), 0);
	assert_false(f->options.hash);
	assert_int_equal(f->options.dir_count, 2);
	assert_string_equal(f->options.dirs[0], "--hash");
	assert_string_equal(f->options.dirs[1], "-");
}

static void test_precedence_env_file_flags(void **state)
{
	struct fixture *f = *state;
	write_config(f, "# musicd's file\nlisten = 127.0.0.1:9\nmedia-root = /srv\n"
			"mongodb-uri = mongodb://file:1\ndatabase = filedb\ncollection = filecoll\n");
	assert_int_equal(LOAD(f, "mongodb://env:1", "--config", f->path, "--database", "flagdb",
			      "/music"),
			 0);
	assert_string_equal(f->options.config.mongodb_uri, "mongodb://file:1");
	assert_string_equal(f->options.config.database, "flagdb");
	assert_string_equal(f->options.config.collection, "filecoll");
	assert_string_equal(f->options.config.path_field, "path");
}

static void test_env_over_defaults(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(LOAD(f, "mongodb://env:1", "/music"), 0);
	assert_string_equal(f->options.config.mongodb_uri, "mongodb://env:1");
	assert_int_equal(LOAD(f, "", "/music"), 0); /* empty: ignored */
	assert_string_equal(f->options.config.mongodb_uri, "mongodb://127.0.0.1:27017");
	assert_int_equal(LOAD(f, "mongodb://env:1", "--mongodb-uri", "mongodb://flag:1", "/m"), 0);
	assert_string_equal(f->options.config.mongodb_uri, "mongodb://flag:1");
}

static void test_help_and_version(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(LOAD(f, NULL, "--version"), 0);
	assert_int_equal(f->action, IMPORT_VERSION);
	assert_int_equal(LOAD(f, NULL, "--jobs", "2", "-h"), 0);
	assert_int_equal(f->action, IMPORT_HELP);
}

static void assert_refused(struct fixture *f, int result, const char *message)
{
	assert_int_equal(result, -1);
	assert_string_equal(f->error, message);
}

static void test_usage_errors(void **state)
{
	struct fixture *f = *state;
	assert_refused(f, LOAD(f, NULL, "--frob", "/m"), "unknown option '--frob' (see --help)");
	assert_refused(f, LOAD(f, NULL, "--dry-rn", "/m"),
		       "unknown option '--dry-rn' (did you mean '--dry-run'?)");
	assert_refused(f, LOAD(f, NULL, "-x", "/m"), "unknown option '-x' (see --help)");
	assert_refused(f, LOAD(f, NULL, "--jobs", "0", "/m"),
		       "--jobs: '0' is not a number from 1 to 256");
	assert_refused(f, LOAD(f, NULL, "--jobs", "257", "/m"),
		       "--jobs: '257' is not a number from 1 to 256");
	assert_refused(f, LOAD(f, NULL, "/m", "--jobs"), "option '--jobs' needs a value");
	assert_refused(f, LOAD(f, NULL, "--hash=on", "/m"), "option '--hash' takes no value");
	assert_refused(f, LOAD(f, NULL, "--database=", "/m"), "--database: empty value");
	assert_refused(f, LOAD(f, NULL, "--hash"),
		       "no directory given: musicd-import [options] DIR...");
	assert_refused(f, LOAD(f, NULL, "--path-field", "title", "/m"),
		       "--path-field: 'title' is a field musicd-import writes itself; choose another");
}

static void test_config_file_errors_name_the_file_and_line(void **state)
{
	struct fixture *f = *state;
	write_config(f, "database = ok\nworkers = many\n");
	int result = LOAD(f, NULL, "--config", f->path, "/m");
	assert_int_equal(result, -1);
	char expected[256];
	snprintf(expected, sizeof(expected), "%s:2: workers: 'many' is not a number from 1 to %d",
		 f->path, CONFIG_MAX_WORKERS);
	assert_string_equal(f->error, expected);
	assert_refused(f, LOAD(f, NULL, "--config", "/nonexistent/musicd.conf", "/m"),
		       "config file /nonexistent/musicd.conf: No such file or directory");
}

static void test_help_text_lists_every_flag_with_musicds_defaults(void **state)
{
	(void)state;
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	import_options_usage(out, "musicd-import", "/etc/musicd/musicd.conf");
	fclose(out);
	const char *flags[] = {"--config FILE", "--mongodb-uri URI", "--database NAME",
			       "--collection NAME", "--path-field NAME", "--hash", "--prune",
			       "--dry-run", "--jobs N", "--json", "--print-urls BASE", "--help",
			       "--version"};
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		assert_non_null(strstr(text, flags[i]));
	assert_non_null(strstr(text, "(default musicdb)"));
	assert_non_null(strstr(text, "(default mongodb://127.0.0.1:27017)"));
	assert_non_null(strstr(text, "Without --config, musicd-import reads musicd's "
				     "/etc/musicd/musicd.conf if it exists."));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults_are_musicds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_double_dash_makes_the_rest_directories, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_precedence_env_file_flags, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_over_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_help_and_version, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_the_installed_config_is_read_without_config, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_config_off_or_another_file_reads_not_the_installed_one, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_a_missing_installed_config_is_no_error_and_a_bad_one_is, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_file_errors_name_the_file_and_line, setup,
						teardown),
		cmocka_unit_test(test_help_text_lists_every_flag_with_musicds_defaults),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
