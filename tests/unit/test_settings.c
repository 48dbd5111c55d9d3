/*
 * Unit tests for server/config/settings.h: a snapshot is a private copy of the
 * configuration (the caller's may go at once), numbered one generation after
 * its predecessor, sharing the predecessor's access log when the target is
 * the same and opening a new one when it is not; a slot adopts what the board
 * offered at its next settings_slot_current, while a request's reference
 * keeps the old snapshot valid; offers never adopted are given back; and
 * workers reading their slots while the main thread publishes see every
 * snapshot whole and generations only growing (run again under TSan as
 * test_settings_tsan; ASan's leak check counts every reference).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "base/log_writer.h"
#include "config/settings.h"

#define READERS 3
#define PUBLISHES 300
#define READS_MAX 5000000 /* per reader: bounded even if it never sees the last generation */

static void set(struct config *config, const char *name, const char *value)
{
	char error[CONFIG_ERROR_MAX];
	if (config_set(config, name, value, error, sizeof(error)) < 0)
		fail_msg("%s", error);
}

/* A snapshot of the defaults with cache-control given, after previous (may be NULL). */
static struct settings *snapshot(const char *cache_control, const char *access_log,
				 const struct settings *previous)
{
	struct config config;
	char error[CONFIG_ERROR_MAX];
	config_init(&config);
	set(&config, "cache-control", cache_control);
	set(&config, "access-log", access_log);
	set(&config, "trusted-proxy", "10.0.0.0/8");
	struct settings *settings = settings_new(&config, previous, error, sizeof(error));
	config_free(&config); /* the snapshot has its own copy */
	if (settings == NULL)
		fail_msg("%s", error);
	return settings;
}

static void temporary_path(char *out, size_t size)
{
	snprintf(out, size, "/tmp/test_settings.%d.log", (int)getpid());
}

static void test_a_snapshot_copies_its_settings_and_counts_generations(void **state)
{
	(void)state;
	struct settings *first = snapshot("public, max-age=60", "off", NULL);
	assert_int_equal(first->generation, 1);
	assert_string_equal(first->config.cache_control, "public, max-age=60");
	assert_int_equal(first->trusted_proxy_count, 1);
	assert_null(first->access_log);
	struct settings *second = snapshot("no-cache", "off", first);
	assert_int_equal(second->generation, 2);
	assert_string_equal(first->config.cache_control, "public, max-age=60");
	settings_unref(first);
	assert_string_equal(second->config.cache_control, "no-cache");
	settings_unref(second);
}

static void test_file_lines_stay_keyed_until_cache_control_changes(void **state)
{
	(void)state;
	struct settings *first = snapshot("public", "off", NULL);
	assert_int_equal(first->file_lines_generation, 1);
	struct settings *same = snapshot("public", "off", first); /* another setting changed */
	assert_int_equal(same->generation, 2);
	assert_int_equal(same->file_lines_generation, 1);
	struct settings *changed = snapshot("private", "off", same);
	assert_int_equal(changed->file_lines_generation, 3);
	struct settings *back = snapshot("public", "off", changed);
	assert_int_equal(back->file_lines_generation, 4); /* what generation 1 made is stale */
	settings_unref(first);
	settings_unref(same);
	settings_unref(changed);
	settings_unref(back);
}

static void test_the_same_access_log_target_is_shared_a_new_one_opened(void **state)
{
	(void)state;
	char path[64];
	temporary_path(path, sizeof(path));
	struct settings *first = snapshot("no-cache", path, NULL);
	assert_non_null(first->access_log);
	struct settings *same = snapshot("private", path, first);
	assert_ptr_equal(same->access_log, first->access_log);
	struct settings *off = snapshot("private", "off", same);
	assert_null(off->access_log);
	struct settings *again = snapshot("private", path, off);
	assert_non_null(again->access_log);
	assert_ptr_not_equal(again->access_log, first->access_log);
	/* The shared log outlives the first snapshot holding it. */
	settings_unref(first);
	struct access_entry entry = {.client = "127.0.0.1", .method = "GET", .target = "/",
				     .http_major = 1, .http_minor = 1, .status = 200};
	access_log_write(same->access_log, &entry);
	settings_unref(same);
	settings_unref(off);
	settings_unref(again);
	assert_int_equal(log_writer_wait_released(5000), 0); /* every log let go wrote and closed */
	unlink(path);
}

static void test_an_access_log_that_cannot_be_opened_gives_no_snapshot(void **state)
{
	(void)state;
	struct config config;
	char error[CONFIG_ERROR_MAX];
	config_init(&config);
	set(&config, "access-log", "/nonexistent-directory/access.log");
	assert_null(settings_new(&config, NULL, error, sizeof(error)));
	assert_non_null(strstr(error, "/nonexistent-directory/access.log"));
	config_free(&config);
}

static void test_a_slot_adopts_the_published_snapshot_at_its_next_look(void **state)
{
	(void)state;
	struct settings_board *board = settings_board_new(snapshot("a", "off", NULL), 2);
	assert_non_null(board);
	struct settings_slot *slot = settings_board_slot(board, 0);
	struct settings *request = settings_ref(settings_slot_current(slot));
	assert_string_equal(request->config.cache_control, "a");

	settings_board_publish(board, snapshot("b", "off", settings_board_current(board)));
	assert_int_equal(settings_board_current(board)->generation, 2);
	struct settings *next = settings_slot_current(slot);
	assert_string_equal(next->config.cache_control, "b");
	assert_int_equal(next->generation, 2);
	/* The request that began before keeps its snapshot, whole, to its end. */
	assert_string_equal(request->config.cache_control, "a");
	settings_unref(request);
	assert_string_equal(settings_slot_current(settings_board_slot(board, 1))->config.cache_control,
			    "b");
	settings_board_free(board);
}

static void test_offers_never_adopted_are_given_back(void **state)
{
	(void)state;
	struct settings_board *board = settings_board_new(snapshot("a", "off", NULL), 1);
	assert_non_null(board);
	for (int i = 0; i < 5; i++)
		settings_board_publish(board, snapshot("b", "off", settings_board_current(board)));
	/* The slot skips the ones it never looked at: the newest is what it adopts. */
	assert_int_equal(settings_slot_current(settings_board_slot(board, 0))->generation, 6);
	settings_board_publish(board, snapshot("c", "off", settings_board_current(board)));
	settings_board_free(board); /* with an offer pending: LeakSanitizer counts it */
}

struct reader {
	struct settings_slot *slot;
	atomic_bool *done;
	uint64_t last_generation;
	int torn; /* a snapshot whose contents did not match its generation */
	int went_back;
};

static void *read_slot(void *arg)
{
	struct reader *reader = arg;
	char expected[32];
	for (long i = 0; i < READS_MAX && !atomic_load(reader->done); i++) {
		/* What each request does: take the newest, keep it, read it, give it back. */
		struct settings *settings = settings_ref(settings_slot_current(reader->slot));
		snprintf(expected, sizeof(expected), "g%llu",
			 (unsigned long long)settings->generation);
		if (strcmp(settings->config.cache_control, expected) != 0)
			reader->torn++;
		if (settings->generation < reader->last_generation)
			reader->went_back++;
		reader->last_generation = settings->generation;
		settings_unref(settings);
	}
	return NULL;
}

static void test_workers_reading_while_the_main_thread_publishes(void **state)
{
	(void)state;
	struct settings_board *board = settings_board_new(snapshot("g1", "off", NULL), READERS);
	assert_non_null(board);
	atomic_bool done = false;
	struct reader readers[READERS];
	pthread_t threads[READERS];
	for (int i = 0; i < READERS; i++) {
		readers[i] = (struct reader){.slot = settings_board_slot(board, (size_t)i),
					     .done = &done};
		assert_int_equal(pthread_create(&threads[i], NULL, read_slot, &readers[i]), 0);
	}
	char value[32];
	for (int i = 2; i <= PUBLISHES; i++) {
		snprintf(value, sizeof(value), "g%d", i);
		settings_board_publish(board, snapshot(value, "off", settings_board_current(board)));
	}
	atomic_store(&done, true);
	for (int i = 0; i < READERS; i++) {
		pthread_join(threads[i], NULL);
		assert_int_equal(readers[i].torn, 0);
		assert_int_equal(readers[i].went_back, 0);
		/* Its next look, after the last publish, sees the last snapshot. */
		assert_int_equal(settings_slot_current(readers[i].slot)->generation, PUBLISHES);
	}
	settings_board_free(board);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_snapshot_copies_its_settings_and_counts_generations),
		cmocka_unit_test(test_file_lines_stay_keyed_until_cache_control_changes),
		cmocka_unit_test(test_the_same_access_log_target_is_shared_a_new_one_opened),
		cmocka_unit_test(test_an_access_log_that_cannot_be_opened_gives_no_snapshot),
		cmocka_unit_test(test_a_slot_adopts_the_published_snapshot_at_its_next_look),
		cmocka_unit_test(test_offers_never_adopted_are_given_back),
		cmocka_unit_test(test_workers_reading_while_the_main_thread_publishes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
