/*
 * Unit tests for import/document.h: the inserted document of a new file
 * (every field present, in table order, absent ones left out, a dotted path
 * field nested), the update of a changed one ($set of what is present,
 * $unset of what is not, none when nothing is absent), the filter, and the
 * names a path field may not take. Documents are compared as canonical
 * extended JSON, which shows every type.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "document.h"

static const char *const full_json =
	"{ \"_id\" : { \"$oid\" : \"0123456789abcdef01234567\" }, \"path\" : \"/m/a.mp3\", "
	"\"title\" : \"T\xc3\xaftle\", \"artist\" : \"A\", \"album\" : \"B\", "
	"\"album_artist\" : \"C\", \"genre\" : \"Jazz\", \"year\" : { \"$numberInt\" : \"2001\" }, "
	"\"track\" : { \"$numberInt\" : \"4\" }, \"disc\" : { \"$numberInt\" : \"2\" }, "
	"\"comment\" : \"c\", \"duration\" : { \"$numberDouble\" : \"180.5\" }, "
	"\"bitrate\" : { \"$numberInt\" : \"128\" }, \"sample_rate\" : { \"$numberInt\" : "
	"\"44100\" }, \"channels\" : { \"$numberInt\" : \"2\" }, \"size\" : { \"$numberLong\" : "
	"\"5000000000\" }, \"mtime\" : { \"$date\" : { \"$numberLong\" : \"1700000000123\" } }, "
	"\"sha256\" : \"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\" }";

static struct track full_track(void)
{
	struct track track = {
		.path = "/m/a.mp3", .size = 5000000000LL, .mtime_ms = 1700000000123LL,
		.title = "T\xc3\xaftle", .artist = "A", .album = "B", .album_artist = "C",
		.genre = "Jazz", .comment = "c", .year = 2001, .number = 4, .disc = 2,
		.duration_ms = 180500, .bitrate = 128, .sample_rate = 44100, .channels = 2,
		.has_sha256 = true,
	};
	strcpy(track.sha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	return track;
}

static void assert_json(const bson_t *document, const char *expected)
{
	char *json = bson_as_canonical_extended_json(document, NULL);
	assert_string_equal(json, expected);
	bson_free(json);
}

static bson_oid_t fixed_id(void)
{
	bson_oid_t id;
	bson_oid_init_from_string(&id, "0123456789abcdef01234567");
	return id;
}

static void test_insert_has_every_field_with_its_type(void **state)
{
	(void)state;
	struct track track = full_track();
	bson_oid_t id = fixed_id();
	bson_t document;
	document_for_insert(&track, "path", &id, &document);
	assert_json(&document, full_json);
	bson_destroy(&document);
}

static void test_insert_leaves_absent_fields_out(void **state)
{
	(void)state;
	struct track track = {.path = "/m/b.mp3", .size = 10, .mtime_ms = 1000, .title = "",
			      .sample_rate = 8000, .channels = 1};
	bson_oid_t id = fixed_id();
	bson_t document;
	document_for_insert(&track, "path", &id, &document);
	assert_json(&document,
		    "{ \"_id\" : { \"$oid\" : \"0123456789abcdef01234567\" }, \"path\" : "
		    "\"/m/b.mp3\", \"sample_rate\" : { \"$numberInt\" : \"8000\" }, \"channels\" : "
		    "{ \"$numberInt\" : \"1\" }, \"size\" : { \"$numberLong\" : \"10\" }, "
		    "\"mtime\" : { \"$date\" : { \"$numberLong\" : \"1000\" } } }");
	bson_destroy(&document);
}

static void test_insert_nests_a_dotted_path_field(void **state)
{
	(void)state;
	struct track track = {.path = "/m/c.mp3", .size = 1, .mtime_ms = 2};
	bson_oid_t id = fixed_id();
	bson_t document;
	document_for_insert(&track, "file.location.path", &id, &document);
	assert_json(&document,
		    "{ \"_id\" : { \"$oid\" : \"0123456789abcdef01234567\" }, \"file\" : { "
		    "\"location\" : { \"path\" : \"/m/c.mp3\" } }, \"size\" : { \"$numberLong\" : "
		    "\"1\" }, \"mtime\" : { \"$date\" : { \"$numberLong\" : \"2\" } } }");
	bson_destroy(&document);
}

static void test_update_sets_what_is_present_and_unsets_what_is_not(void **state)
{
	(void)state;
	struct track track = {.path = "/m/d.mp3", .size = 3, .mtime_ms = 4, .title = "New",
			      .duration_ms = 2625};
	bson_t update;
	document_for_update(&track, "file.path", &update);
	assert_json(&update,
		    "{ \"$set\" : { \"file.path\" : \"/m/d.mp3\", \"title\" : \"New\", "
		    "\"duration\" : { \"$numberDouble\" : \"2.625\" }, \"size\" : { \"$numberLong\" : "
		    "\"3\" }, \"mtime\" : { \"$date\" : { \"$numberLong\" : \"4\" } } }, "
		    "\"$unset\" : { \"artist\" : \"\", \"album\" : \"\", \"album_artist\" : \"\", "
		    "\"genre\" : \"\", \"year\" : \"\", \"track\" : \"\", \"disc\" : \"\", "
		    "\"comment\" : \"\", \"bitrate\" : \"\", \"sample_rate\" : \"\", \"channels\" : "
		    "\"\", \"sha256\" : \"\" } }");
	bson_destroy(&update);
}

static void test_update_with_every_field_has_no_unset(void **state)
{
	(void)state;
	struct track track = full_track();
	bson_t update;
	document_for_update(&track, "path", &update);
	bson_iter_t iter;
	assert_true(bson_iter_init_find(&iter, &update, "$set"));
	assert_false(bson_iter_init_find(&iter, &update, "$unset"));
	bson_destroy(&update);
}

static void test_filter_is_the_path(void **state)
{
	(void)state;
	bson_t filter;
	document_filter("/m/e.mp3", "path", &filter);
	assert_json(&filter, "{ \"path\" : \"/m/e.mp3\" }");
	bson_destroy(&filter);
}

static void test_reserved_names(void **state)
{
	(void)state;
	assert_true(document_field_is_reserved("_id"));
	assert_true(document_field_is_reserved("title"));
	assert_true(document_field_is_reserved("mtime"));
	assert_true(document_field_is_reserved("size.path")); /* inside the size field */
	assert_false(document_field_is_reserved("path"));
	assert_false(document_field_is_reserved("file.path"));
	assert_false(document_field_is_reserved("titles"));
	assert_false(document_field_is_reserved("_id2"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_has_every_field_with_its_type),
		cmocka_unit_test(test_insert_leaves_absent_fields_out),
		cmocka_unit_test(test_insert_nests_a_dotted_path_field),
		cmocka_unit_test(test_update_sets_what_is_present_and_unsets_what_is_not),
		cmocka_unit_test(test_update_with_every_field_has_no_unset),
		cmocka_unit_test(test_filter_is_the_path),
		cmocka_unit_test(test_reserved_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
