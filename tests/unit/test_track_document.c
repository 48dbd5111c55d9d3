/*
 * Unit tests for server/db/track_document.h: what a document yields (a path,
 * a GridFS file's id, or a data problem saying why), the fields an answer
 * takes from it (--etag-field and --content-type-field: taken when valid, ""
 * when off, absent, not a string or not an ETag or media type), the projection a find asks for, and the packed
 * form the lookup cache keeps (every part back exactly, texts by their
 * length, a document with an unterminated text refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "db/track_document.h"

#define MID "65f0c0ffee0000000000abcd"
#define PATH "/music/Artist/Album/01 Track.mp3"
#define HASH "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define FILE_ID "65f0c0ffee0000000000f11e"

struct fixture {
	struct config config;
	struct track_document document;
	bson_oid_t gridfs_id;
	char detail[256];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	config_init(&f->config);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	config_free(&f->config);
	free(f);
	return 0;
}

static void set(struct fixture *f, const char *name, const char *value)
{
	char error[CONFIG_ERROR_MAX];
	assert_int_equal(config_set(&f->config, name, value, error, sizeof(error)), 0);
}

/* Reads the document that json describes. */
static enum lookup_status read_json(struct fixture *f, const char *json)
{
	bson_error_t error;
	bson_t *document = bson_new_from_json((const uint8_t *)json, -1, &error);
	if (document == NULL)
		fail_msg("%s: %s", json, error.message);
	f->detail[0] = '\0';
	enum lookup_status found = track_document_read(document, &f->config, MID, &f->document,
						       &f->gridfs_id, f->detail, sizeof(f->detail));
	bson_destroy(document);
	return found;
}

/* --- Where the bytes are --- */

static void test_a_string_path_is_the_file(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(read_json(f, "{\"path\": \"" PATH "\"}"), LOOKUP_FOUND);
	assert_string_equal(f->document.path, PATH);
	assert_string_equal(f->document.fields.etag, "");
}

static void test_the_path_field_is_the_configured_one_and_may_be_nested(void **state)
{
	struct fixture *f = *state;
	set(f, "path-field", "file.location");
	assert_int_equal(read_json(f, "{\"file\": {\"location\": \"" PATH "\"}, \"path\": \"/x\"}"),
			 LOOKUP_FOUND);
	assert_string_equal(f->document.path, PATH);
}

static void test_a_path_that_cannot_name_a_file_is_a_data_problem(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(read_json(f, "{\"path\": \"\"}"), LOOKUP_NO_PATH);
	assert_non_null(strstr(f->detail, "field 'path' is empty, not a string"));
	assert_int_equal(read_json(f, "{\"path\": 7}"), LOOKUP_NO_PATH);
	assert_int_equal(read_json(f, "{\"path\": \"/a\\u0000b\"}"), LOOKUP_NO_PATH);
	/* A path field, whatever it holds, is never looked past for a GridFS file. */
	assert_int_equal(read_json(f, "{\"path\": null, \"gridfs_id\": {\"$oid\": \"" FILE_ID "\"}}"),
			 LOOKUP_NO_PATH);
}

static void test_a_path_of_path_max_bytes_is_a_data_problem_one_less_is_a_file(void **state)
{
	struct fixture *f = *state;
	size_t size = strlen("{\"path\": \"\"}") + PATH_MAX + 1;
	char *json = malloc(size);
	assert_non_null(json);
	for (size_t length = PATH_MAX - 1; length <= PATH_MAX; length++) {
		memcpy(json, "{\"path\": \"", strlen("{\"path\": \""));
		memset(json + strlen("{\"path\": \""), 'a', length);
		strcpy(json + strlen("{\"path\": \"") + length, "\"}");
		enum lookup_status found = read_json(f, json);
		if (length == PATH_MAX - 1) {
			assert_int_equal(found, LOOKUP_FOUND);
			assert_int_equal(strlen(f->document.path), PATH_MAX - 1);
		} else {
			assert_int_equal(found, LOOKUP_NO_PATH);
		}
	}
	free(json);
}

static void test_no_path_and_an_objectid_in_the_gridfs_field_is_a_gridfs_file(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(read_json(f, "{\"gridfs_id\": {\"$oid\": \"" FILE_ID "\"}}"),
			 LOOKUP_GRIDFS);
	char id[25];
	bson_oid_to_string(&f->gridfs_id, id);
	assert_string_equal(id, FILE_ID);
}

static void test_no_path_and_no_objectid_is_a_data_problem(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(read_json(f, "{\"title\": \"x\"}"), LOOKUP_NO_PATH);
	assert_string_equal(f->detail, "field 'path' is missing and 'gridfs_id' holds no ObjectId");
	assert_int_equal(read_json(f, "{\"gridfs_id\": \"" FILE_ID "\"}"), LOOKUP_NO_PATH);
}

/* --- The fields an answer takes --- */

static void test_the_etag_field_is_taken_quoted_when_it_is_an_etag(void **state)
{
	struct fixture *f = *state;
	set(f, "etag-field", "sha256");
	assert_int_equal(read_json(f, "{\"path\": \"" PATH "\", \"sha256\": \"" HASH "\"}"),
			 LOOKUP_FOUND);
	assert_string_equal(f->document.fields.etag, "\"" HASH "\"");
	/* A GridFS track's document carries its fields too. */
	assert_int_equal(read_json(f, "{\"gridfs_id\": {\"$oid\": \"" FILE_ID "\"}, \"sha256\": \"" HASH
				      "\"}"),
			 LOOKUP_GRIDFS);
	assert_string_equal(f->document.fields.etag, "\"" HASH "\"");
}

static void test_an_etag_field_off_absent_or_not_an_etag_gives_none(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(read_json(f, "{\"path\": \"" PATH "\", \"etag-field\": \"" HASH "\"}"),
			 LOOKUP_FOUND);
	assert_string_equal(f->document.fields.etag, ""); /* off */
	set(f, "etag-field", "sha256");
	assert_int_equal(read_json(f, "{\"path\": \"" PATH "\"}"), LOOKUP_FOUND);
	assert_string_equal(f->document.fields.etag, "");
	assert_int_equal(read_json(f, "{\"path\": \"" PATH "\", \"sha256\": 12}"), LOOKUP_FOUND);
	assert_string_equal(f->document.fields.etag, "");
	assert_int_equal(read_json(f, "{\"path\": \"" PATH "\", \"sha256\": \"a b\"}"), LOOKUP_FOUND);
	assert_string_equal(f->document.fields.etag, "");
}

static void test_the_content_type_field_is_taken_when_it_is_a_media_type(void **state)
{
	struct fixture *f = *state;
	set(f, "content-type-field", "mime");
	assert_int_equal(read_json(f, "{\"path\": \"" PATH "\", \"mime\": \"audio/ogg; codecs=opus\"}"),
			 LOOKUP_FOUND);
	assert_string_equal(f->document.fields.content_type, "audio/ogg; codecs=opus");
	assert_int_equal(read_json(f, "{\"gridfs_id\": {\"$oid\": \"" FILE_ID "\"}, \"mime\": \"audio/flac\"}"),
			 LOOKUP_GRIDFS);
	assert_string_equal(f->document.fields.content_type, "audio/flac");
	assert_int_equal(read_json(f, "{\"path\": \"" PATH "\", \"mime\": \"audio mpeg\"}"), LOOKUP_FOUND);
	assert_string_equal(f->document.fields.content_type, "");
	assert_int_equal(read_json(f, "{\"path\": \"" PATH "\", \"mime\": \"audio/mpeg\\r\\nX: 1\"}"),
			 LOOKUP_FOUND);
	assert_string_equal(f->document.fields.content_type, "");
	assert_int_equal(read_json(f, "{\"path\": \"" PATH "\", \"mime\": [\"audio/mpeg\"]}"),
			 LOOKUP_FOUND);
	assert_string_equal(f->document.fields.content_type, "");
	set(f, "content-type-field", "off");
	assert_int_equal(read_json(f, "{\"path\": \"" PATH "\", \"mime\": \"audio/flac\"}"), LOOKUP_FOUND);
	assert_string_equal(f->document.fields.content_type, "");
}

/* --- The projection --- */

static void assert_projected(const bson_t *projection, const char *field, int expected)
{
	bson_iter_t iter;
	int present = bson_iter_init_find(&iter, projection, field);
	if (present != expected)
		fail_msg("field %s: projected %d, expected %d", field, present, expected);
}

static void test_the_projection_asks_for_the_fields_read(void **state)
{
	struct fixture *f = *state;
	bson_t projection = BSON_INITIALIZER;
	track_document_project(&projection, &f->config);
	assert_projected(&projection, "path", 1);
	assert_projected(&projection, "gridfs_id", 1);
	assert_projected(&projection, "length", 0);
	bson_destroy(&projection);

	set(f, "etag-field", "sha256");
	set(f, "content-type-field", "mime");
	set(f, "gridfs-field", "_id"); /* the documents are the fs.files entries */
	bson_init(&projection);
	track_document_project(&projection, &f->config);
	assert_projected(&projection, "sha256", 1);
	assert_projected(&projection, "mime", 1);
	assert_projected(&projection, "length", 1);
	assert_projected(&projection, "chunkSize", 1);
	bson_destroy(&projection);
}

/* --- The packed form --- */

/* Packs document into a heap buffer of exactly its size (ASan sees any overrun), then unpacks it. */
static void round_trip(const struct track_document *document, struct track_document *out)
{
	size_t size = track_document_packed_size(document);
	assert_true(size > 0);
	unsigned char *packed = malloc(size);
	assert_non_null(packed);
	track_document_pack(document, packed);
	memset(out, 'Z', sizeof(*out));
	track_document_unpack(packed, out);
	free(packed);
}

static void assert_same_document(const struct track_document *got,
				 const struct track_document *want)
{
	assert_string_equal(got->path, want->path);
	assert_string_equal(got->gridfs.id, want->gridfs.id);
	assert_int_equal(got->gridfs.length, want->gridfs.length);
	assert_int_equal(got->gridfs.chunk_size, want->gridfs.chunk_size);
	assert_int_equal(got->gridfs.upload_date_ms, want->gridfs.upload_date_ms);
	assert_string_equal(got->gridfs.content_type, want->gridfs.content_type);
	assert_string_equal(got->gridfs.filename, want->gridfs.filename);
	assert_string_equal(got->fields.etag, want->fields.etag);
	assert_string_equal(got->fields.content_type, want->fields.content_type);
}

static void test_a_packed_document_comes_back_exactly(void **state)
{
	struct fixture *f = *state;
	struct track_document *want = &f->document, got;
	memset(want, 0, sizeof(*want));
	strcpy(want->path, PATH);
	strcpy(want->fields.etag, "\"" HASH "\"");
	strcpy(want->fields.content_type, "audio/ogg; codecs=opus");
	round_trip(want, &got);
	assert_same_document(&got, want);

	memset(want, 0, sizeof(*want));
	strcpy(want->gridfs.id, FILE_ID);
	want->gridfs.length = UINT64_C(1) << 40;
	want->gridfs.chunk_size = 261120;
	want->gridfs.upload_date_ms = -86400000;
	strcpy(want->gridfs.content_type, "audio/flac");
	memset(want->gridfs.filename, 'n', sizeof(want->gridfs.filename) - 1); /* the longest */
	round_trip(want, &got);
	assert_same_document(&got, want);
}

static void test_a_packed_document_costs_its_texts_not_their_arrays(void **state)
{
	struct fixture *f = *state;
	memset(&f->document, 0, sizeof(f->document));
	size_t empty = track_document_packed_size(&f->document);
	strcpy(f->document.path, PATH);
	assert_int_equal(track_document_packed_size(&f->document), empty + strlen(PATH));
	assert_true(empty < 64);
}

static void test_a_document_with_an_unterminated_text_is_not_packed(void **state)
{
	struct fixture *f = *state;
	memset(&f->document, 0, sizeof(f->document));
	memset(f->document.fields.etag, 'a', sizeof(f->document.fields.etag));
	assert_int_equal(track_document_packed_size(&f->document), 0);
	memset(&f->document, 0, sizeof(f->document));
	memset(f->document.path, '/', sizeof(f->document.path));
	assert_int_equal(track_document_packed_size(&f->document), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_string_path_is_the_file, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_the_path_field_is_the_configured_one_and_may_be_nested, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_path_that_cannot_name_a_file_is_a_data_problem,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_a_path_of_path_max_bytes_is_a_data_problem_one_less_is_a_file, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_no_path_and_an_objectid_in_the_gridfs_field_is_a_gridfs_file, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_no_path_and_no_objectid_is_a_data_problem, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_the_etag_field_is_taken_quoted_when_it_is_an_etag,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_an_etag_field_off_absent_or_not_an_etag_gives_none,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_the_content_type_field_is_taken_when_it_is_a_media_type, setup, teardown),
		cmocka_unit_test_setup_teardown(test_the_projection_asks_for_the_fields_read, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_packed_document_comes_back_exactly, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_packed_document_costs_its_texts_not_their_arrays,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_document_with_an_unterminated_text_is_not_packed,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
