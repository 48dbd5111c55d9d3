/*
 * Unit tests for server/db/gridfs_entry.h: which chunks a byte range needs and
 * which bytes of each chunk it keeps, the length each chunk must have, the
 * validators (ETag from _id and length, Last-Modified from uploadDate) and
 * the media type. The reference for the slices is the definition itself:
 * chunk n holds bytes [n * chunkSize, (n + 1) * chunkSize) of the file, so
 * gluing the kept slices of a span's chunks must give exactly the span's bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "db/gridfs_entry.h"

static struct gridfs_entry file_of(uint64_t length, uint32_t chunk_size)
{
	struct gridfs_entry file = {.length = length, .chunk_size = chunk_size};
	snprintf(file.id, sizeof(file.id), "%s", "65a1b2c3d4e5f60718293a4b");
	return file;
}

static void test_chunk_count_rounds_up_and_an_empty_file_has_none(void **state)
{
	(void)state;
	struct gridfs_entry exact = file_of(1000, 250), ragged = file_of(1001, 250),
			   empty = file_of(0, 250), small = file_of(1, 261120);
	assert_int_equal(gridfs_chunk_count(&exact), 4);
	assert_int_equal(gridfs_chunk_count(&ragged), 5);
	assert_int_equal(gridfs_chunk_count(&empty), 0);
	assert_int_equal(gridfs_chunk_count(&small), 1);
}

static void test_every_chunk_is_chunk_size_but_a_short_last_one(void **state)
{
	(void)state;
	struct gridfs_entry file = file_of(1001, 250);
	for (uint64_t n = 0; n < 4; n++)
		assert_int_equal(gridfs_chunk_length(&file, n), 250);
	assert_int_equal(gridfs_chunk_length(&file, 4), 1);
	assert_int_equal(gridfs_chunk_length(&file, 5), 0);
	struct gridfs_entry exact = file_of(1000, 250);
	assert_int_equal(gridfs_chunk_length(&exact, 3), 250);
	assert_int_equal(gridfs_chunk_length(&exact, 4), 0);
}

static void test_a_range_inside_one_chunk_fetches_that_chunk_only(void **state)
{
	(void)state;
	struct gridfs_entry file = file_of(1000, 100);
	struct gridfs_span span = gridfs_span_next(&file, 310, 320, 1 << 20);
	assert_int_equal(span.first_chunk, 3);
	assert_int_equal(span.last_chunk, 3);
	assert_int_equal(span.first, 310);
	assert_int_equal(span.last, 320);
	uint64_t offset, length;
	assert_int_equal(gridfs_span_slice(&file, &span, 3, &offset, &length), 0);
	assert_int_equal(offset, 10);
	assert_int_equal(length, 11);
}

static void test_a_range_across_boundaries_keeps_the_tail_middle_and_head(void **state)
{
	(void)state;
	struct gridfs_entry file = file_of(1000, 100);
	struct gridfs_span span = gridfs_span_next(&file, 150, 349, 1 << 20);
	assert_int_equal(span.first_chunk, 1);
	assert_int_equal(span.last_chunk, 3);
	assert_int_equal(span.last, 349);
	uint64_t offset, length;
	assert_int_equal(gridfs_span_slice(&file, &span, 1, &offset, &length), 0);
	assert_int_equal(offset, 50);
	assert_int_equal(length, 50);
	assert_int_equal(gridfs_span_slice(&file, &span, 2, &offset, &length), 0);
	assert_int_equal(offset, 0);
	assert_int_equal(length, 100);
	assert_int_equal(gridfs_span_slice(&file, &span, 3, &offset, &length), 0);
	assert_int_equal(offset, 0);
	assert_int_equal(length, 50);
	assert_int_equal(gridfs_span_slice(&file, &span, 0, &offset, &length), -1);
	assert_int_equal(gridfs_span_slice(&file, &span, 4, &offset, &length), -1);
}

static void test_the_last_short_chunk_is_kept_to_the_end_of_the_file(void **state)
{
	(void)state;
	struct gridfs_entry file = file_of(1001, 100);
	struct gridfs_span span = gridfs_span_next(&file, 995, 1000, 1 << 20);
	assert_int_equal(span.first_chunk, 9);
	assert_int_equal(span.last_chunk, 10);
	uint64_t offset, length;
	assert_int_equal(gridfs_span_slice(&file, &span, 10, &offset, &length), 0);
	assert_int_equal(offset, 0);
	assert_int_equal(length, 1);
}

static void test_the_first_byte_alone_is_one_byte_of_chunk_zero(void **state)
{
	(void)state;
	struct gridfs_entry file = file_of(1000, 100);
	struct gridfs_span span = gridfs_span_next(&file, 0, 0, 1 << 20);
	assert_int_equal(span.first_chunk, 0);
	assert_int_equal(span.last_chunk, 0);
	assert_int_equal(span.last, 0);
}

static void test_room_limits_the_chunks_of_one_fetch_but_never_below_one(void **state)
{
	(void)state;
	struct gridfs_entry file = file_of(1000, 100);
	/* 250 bytes of room from 150: chunk 1 (50 kept), 2 (100), 3 would make 250: taken. */
	struct gridfs_span span = gridfs_span_next(&file, 150, 999, 250);
	assert_int_equal(span.last_chunk, 3);
	assert_int_equal(span.last, 399);
	span = gridfs_span_next(&file, 150, 999, 249);
	assert_int_equal(span.last_chunk, 2);
	assert_int_equal(span.last, 299);
	/* No room at all: still position's own chunk, or the stream could never move. */
	span = gridfs_span_next(&file, 150, 999, 0);
	assert_int_equal(span.first_chunk, 1);
	assert_int_equal(span.last_chunk, 1);
	assert_int_equal(span.last, 199);
}

static void test_a_range_ending_early_in_a_chunk_is_not_counted_as_the_whole_chunk(void **state)
{
	(void)state;
	struct gridfs_entry file = file_of(1000, 100);
	/* From 90 to 110 is 21 bytes: two chunks fit in 21 bytes of room. */
	struct gridfs_span span = gridfs_span_next(&file, 90, 110, 21);
	assert_int_equal(span.last_chunk, 1);
	assert_int_equal(span.last, 110);
}

/* Walks a whole range fetch by fetch and checks the slices glue into exactly its bytes. */
static void walk(uint64_t length, uint32_t chunk_size, uint64_t first, uint64_t last,
		 uint64_t room)
{
	struct gridfs_entry file = file_of(length, chunk_size);
	uint64_t position = first, fetches = 0;
	while (position <= last) {
		struct gridfs_span span = gridfs_span_next(&file, position, last, room);
		assert_int_equal(span.first, position);
		assert_true(span.last <= last);
		uint64_t expected = position;
		for (uint64_t n = span.first_chunk; n <= span.last_chunk; n++) {
			uint64_t offset, kept;
			assert_int_equal(gridfs_span_slice(&file, &span, n, &offset, &kept), 0);
			assert_int_equal(n * chunk_size + offset, expected);
			assert_true(offset + kept <= gridfs_chunk_length(&file, n));
			expected += kept;
		}
		assert_int_equal(expected, span.last + 1);
		if (span.last_chunk > span.first_chunk)
			assert_true(span.last - span.first + 1 <= room);
		position = span.last + 1;
		assert_true(++fetches <= length);
	}
}

static void test_walking_any_range_yields_each_byte_once_in_order(void **state)
{
	(void)state;
	walk(1001, 100, 0, 1000, 1 << 20);
	walk(1001, 100, 0, 1000, 1);
	walk(1001, 100, 99, 101, 150);
	walk(1001, 7, 3, 998, 30);
	walk(5 * 261120 + 17, 261120, 261119, 5 * 261120 + 16, 1 << 20);
}

static void test_etag_is_strong_and_made_of_id_and_length(void **state)
{
	(void)state;
	struct gridfs_entry file = file_of(0x1234, 100);
	char etag[ETAG_MAX];
	gridfs_etag(etag, &file);
	assert_string_equal(etag, "\"65a1b2c3d4e5f60718293a4b-1234\"");
	file.length = UINT64_C(1) << 50;
	gridfs_etag(etag, &file);
	assert_string_equal(etag, "\"65a1b2c3d4e5f60718293a4b-4000000000000\"");
}

static void test_last_modified_is_upload_date_rounded_down_to_seconds(void **state)
{
	(void)state;
	struct gridfs_entry file = file_of(1, 1);
	file.upload_date_ms = 1700000000999;
	assert_int_equal(gridfs_last_modified(&file), 1700000000);
	file.upload_date_ms = -1;
	assert_int_equal(gridfs_last_modified(&file), -1);
	file.upload_date_ms = -1000;
	assert_int_equal(gridfs_last_modified(&file), -1);
}

static void test_content_type_stored_then_filename_then_param(void **state)
{
	(void)state;
	struct gridfs_entry file = file_of(1, 1);
	assert_string_equal(gridfs_content_type(&file, "x.ogg"), "audio/ogg");
	assert_string_equal(gridfs_content_type(&file, "x"), "application/octet-stream");
	snprintf(file.filename, sizeof(file.filename), "song.flac");
	assert_string_equal(gridfs_content_type(&file, "x.ogg"), "audio/flac");
	snprintf(file.filename, sizeof(file.filename), "song.unknown");
	assert_string_equal(gridfs_content_type(&file, "x.ogg"), "audio/ogg");
	snprintf(file.content_type, sizeof(file.content_type), "audio/x-custom");
	assert_string_equal(gridfs_content_type(&file, "x.ogg"), "audio/x-custom");
	/* A stored type that could split the head is not used. */
	snprintf(file.content_type, sizeof(file.content_type), "audio/mpeg\r\nX-Evil: 1");
	assert_string_equal(gridfs_content_type(&file, "x.ogg"), "audio/ogg");
}

static void test_impossible_entries_are_refused(void **state)
{
	(void)state;
	struct gridfs_entry file = file_of(10, 0);
	assert_non_null(gridfs_entry_check(&file));
	file = file_of(10, GRIDFS_CHUNK_SIZE_MAX + 1);
	assert_non_null(gridfs_entry_check(&file));
	file = file_of(UINT64_MAX, 261120);
	assert_non_null(gridfs_entry_check(&file));
	file = file_of(0, 261120);
	assert_null(gridfs_entry_check(&file));
	file = file_of(10, GRIDFS_CHUNK_SIZE_MAX);
	assert_null(gridfs_entry_check(&file));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunk_count_rounds_up_and_an_empty_file_has_none),
		cmocka_unit_test(test_every_chunk_is_chunk_size_but_a_short_last_one),
		cmocka_unit_test(test_a_range_inside_one_chunk_fetches_that_chunk_only),
		cmocka_unit_test(test_a_range_across_boundaries_keeps_the_tail_middle_and_head),
		cmocka_unit_test(test_the_last_short_chunk_is_kept_to_the_end_of_the_file),
		cmocka_unit_test(test_the_first_byte_alone_is_one_byte_of_chunk_zero),
		cmocka_unit_test(test_room_limits_the_chunks_of_one_fetch_but_never_below_one),
		cmocka_unit_test(test_a_range_ending_early_in_a_chunk_is_not_counted_as_the_whole_chunk),
		cmocka_unit_test(test_walking_any_range_yields_each_byte_once_in_order),
		cmocka_unit_test(test_etag_is_strong_and_made_of_id_and_length),
		cmocka_unit_test(test_last_modified_is_upload_date_rounded_down_to_seconds),
		cmocka_unit_test(test_content_type_stored_then_filename_then_param),
		cmocka_unit_test(test_impossible_entries_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
