/*
 * Unit tests for import/known.h and import/plan.h: known documents found by
 * path after sorting, what a stored document's fields count for, the
 * new/changed/unchanged decision (size, millisecond mtime, --hash), and which
 * documents --prune may consider (inside a given directory, not seen).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "known.h"
#include "plan.h"

static void test_known_entries_are_found_by_path_after_sorting(void **state)
{
	(void)state;
	struct known known;
	known_init(&known);
	const char *paths[] = {"/m/z.mp3", "/m/a.mp3", "/m/b/c.mp3", "/m/b.mp3"};
	for (size_t i = 0; i < 4; i++)
		assert_non_null(known_add(&known, paths[i]));
	known_sort(&known);
	for (size_t i = 0; i < 4; i++) {
		struct known_entry *entry = known_find(&known, paths[i]);
		assert_non_null(entry);
		assert_string_equal(entry->path, paths[i]);
	}
	assert_null(known_find(&known, "/m/c.mp3"));
	assert_null(known_find(&known, "/m"));
	known_free(&known);
	assert_null(known_find(&known, "/m/a.mp3"));
}

static void test_many_entries(void **state)
{
	(void)state;
	struct known known;
	known_init(&known);
	char path[64];
	for (int i = 4999; i >= 0; i--) {
		snprintf(path, sizeof(path), "/m/%05d.mp3", i);
		assert_non_null(known_add(&known, path));
	}
	known_sort(&known);
	assert_int_equal(known.count, 5000);
	snprintf(path, sizeof(path), "/m/%05d.mp3", 1234);
	assert_non_null(known_find(&known, path));
	known_free(&known);
}

static void test_a_stored_document_gives_id_size_mtime_and_hash(void **state)
{
	(void)state;
	struct known_entry entry = {0};
	bson_oid_t id;
	bson_oid_init_from_string(&id, "0123456789abcdef01234567");
	bson_t *doc = BCON_NEW("_id", BCON_OID(&id), "size", BCON_INT64(33017), "mtime",
			       BCON_DATE_TIME(1700000000123), "sha256", BCON_UTF8("ab"));
	known_take_document(&entry, doc);
	assert_true(entry.has_oid && entry.has_size && entry.has_mtime && entry.has_sha256);
	assert_true(bson_oid_equal(&entry.id, &id));
	assert_int_equal(entry.size, 33017);
	assert_int_equal(entry.mtime_ms, 1700000000123);
	bson_destroy(doc);
}

static void test_fields_of_other_types_count_as_missing(void **state)
{
	(void)state;
	struct known_entry entry = {0};
	bson_t *doc = BCON_NEW("_id", BCON_UTF8("a string id"), "size", BCON_UTF8("33017"),
			       "mtime", BCON_INT64(1700000000), "sha256", BCON_INT32(1));
	known_take_document(&entry, doc);
	assert_false(entry.has_oid || entry.has_size || entry.has_mtime || entry.has_sha256);
	bson_destroy(doc);
	entry = (struct known_entry){0};
	doc = BCON_NEW("size", BCON_INT32(12));
	known_take_document(&entry, doc);
	assert_true(entry.has_size);
	assert_int_equal(entry.size, 12);
	bson_destroy(doc);
}

static struct known_entry stored(int64_t size, int64_t mtime_ms, bool has_sha256)
{
	return (struct known_entry){.path = "/m/a.mp3", .has_size = true, .has_mtime = true,
				    .size = size, .mtime_ms = mtime_ms, .has_sha256 = has_sha256};
}

static void test_classify(void **state)
{
	(void)state;
	struct known_entry same = stored(100, 5000, false);
	assert_int_equal(plan_classify(NULL, 100, 5000, false), PLAN_ADD);
	assert_int_equal(plan_classify(&same, 100, 5000, false), PLAN_UNCHANGED);
	assert_int_equal(plan_classify(&same, 101, 5000, false), PLAN_UPDATE);
	assert_int_equal(plan_classify(&same, 100, 5001, false), PLAN_UPDATE);
	assert_int_equal(plan_classify(&same, 100, 4999, false), PLAN_UPDATE);
}

static void test_hash_wanted_but_not_stored_is_a_change(void **state)
{
	(void)state;
	struct known_entry without = stored(100, 5000, false);
	struct known_entry with = stored(100, 5000, true);
	assert_int_equal(plan_classify(&without, 100, 5000, true), PLAN_UPDATE);
	assert_int_equal(plan_classify(&with, 100, 5000, true), PLAN_UNCHANGED);
	assert_int_equal(plan_classify(&with, 100, 5000, false), PLAN_UNCHANGED);
}

static void test_a_document_without_size_or_mtime_is_rewritten(void **state)
{
	(void)state;
	struct known_entry entry = {.path = "/m/a.mp3"};
	assert_int_equal(plan_classify(&entry, 0, 0, false), PLAN_UPDATE);
	entry.has_size = true;
	assert_int_equal(plan_classify(&entry, 0, 0, false), PLAN_UPDATE);
}

static void test_a_duration_in_whole_seconds_is_read_again(void **state)
{
	(void)state;
	struct known_entry entry = stored(100, 5000, false);
	bson_t *doc = BCON_NEW("size", BCON_INT64(100), "duration", BCON_INT32(3));
	assert_int_equal(known_take_document(&entry, doc), 0);
	assert_true(entry.stale_duration);
	assert_int_equal(plan_classify(&entry, 100, 5000, false), PLAN_UPDATE);
	bson_destroy(doc);
	doc = BCON_NEW("size", BCON_INT64(100), "duration", BCON_DOUBLE(2.613));
	assert_int_equal(known_take_document(&entry, doc), 0);
	assert_false(entry.stale_duration);
	assert_int_equal(plan_classify(&entry, 100, 5000, false), PLAN_UNCHANGED);
	bson_destroy(doc);
}

static void test_artist_and_title_are_kept_when_fetched(void **state)
{
	(void)state;
	struct known known;
	known_init(&known);
	struct known_entry *entry = known_add(&known, "/m/a.mp3");
	assert_non_null(entry);
	bson_t *doc = BCON_NEW("artist", BCON_UTF8("Ärtist"), "title", BCON_INT32(7));
	assert_int_equal(known_take_document(entry, doc), 0);
	assert_string_equal(entry->artist, "Ärtist");
	assert_null(entry->title); /* not a string: absent */
	bson_destroy(doc);
	known_free(&known);
}

static void test_prune_candidates_are_inside_a_root_and_not_seen(void **state)
{
	(void)state;
	const char *roots[] = {"/music", "/other/dir"};
	struct known_entry entry = {.path = "/music/a/b.mp3"};
	assert_true(plan_prune_candidate(&entry, roots, 2));
	entry.seen = true;
	assert_false(plan_prune_candidate(&entry, roots, 2));
	struct known_entry sibling = {.path = "/music2/a.mp3"};
	struct known_entry outside = {.path = "/elsewhere/a.mp3"};
	struct known_entry second = {.path = "/other/dir/x.mp3"};
	struct known_entry root_itself = {.path = "/music"};
	assert_false(plan_prune_candidate(&sibling, roots, 2));
	assert_false(plan_prune_candidate(&outside, roots, 2));
	assert_true(plan_prune_candidate(&second, roots, 2));
	assert_false(plan_prune_candidate(&root_itself, roots, 2));
	const char *slash[] = {"/"};
	assert_true(plan_prune_candidate(&outside, slash, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_entries_are_found_by_path_after_sorting),
		cmocka_unit_test(test_many_entries),
		cmocka_unit_test(test_a_stored_document_gives_id_size_mtime_and_hash),
		cmocka_unit_test(test_fields_of_other_types_count_as_missing),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_hash_wanted_but_not_stored_is_a_change),
		cmocka_unit_test(test_a_document_without_size_or_mtime_is_rewritten),
		cmocka_unit_test(test_a_duration_in_whole_seconds_is_read_again),
		cmocka_unit_test(test_artist_and_title_are_kept_when_fetched),
		cmocka_unit_test(test_prune_candidates_are_inside_a_root_and_not_seen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
