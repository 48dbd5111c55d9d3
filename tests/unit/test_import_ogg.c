/*
 * Unit tests for import/ogg.h on pages built byte by byte: the second packet
 * in the first page, a packet laced over several segments and over two
 * pages, pages of another logical stream passed over, a buffer that ends too
 * soon, and bytes that are not Ogg; and ogg_last_page on a file's end (whole
 * and end-of-stream, whole without it, cut), its page built with its CRC.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ogg.h"

static unsigned char stream[70000];
static size_t used;

/* Appends a page of serial with the given segment sizes, each segment filled with its fill byte. */
static void page(uint32_t serial, const unsigned char *sizes, size_t segments, unsigned char fill)
{
	unsigned char *p = stream + used;
	memset(p, 0, 27);
	memcpy(p, "OggS", 4);
	p[14] = (unsigned char)serial;
	p[15] = (unsigned char)(serial >> 8);
	p[26] = (unsigned char)segments;
	memcpy(p + 27, sizes, segments);
	used += 27 + segments;
	for (size_t i = 0; i < segments; i++) {
		memset(stream + used, fill + (int)i, sizes[i]);
		used += sizes[i];
	}
}

static void test_second_packet_of_the_first_page(void **state)
{
	(void)state;
	used = 0;
	const unsigned char sizes[] = {30, 10, 5};
	page(7, sizes, 3, 'a');
	unsigned char *packet;
	size_t length;
	assert_int_equal(ogg_packet(stream, used, 1, &packet, &length), OGG_FOUND);
	assert_int_equal(length, 10);
	assert_int_equal(packet[0], 'b');
	free(packet);
}

static void test_packet_laced_over_segments_and_pages(void **state)
{
	(void)state;
	used = 0;
	const unsigned char first[] = {30, 255, 255};
	const unsigned char other[] = {40};
	const unsigned char second[] = {255, 12, 1};
	page(7, first, 3, 'a');
	page(9, other, 1, 'z'); /* another logical stream in between */
	page(7, second, 3, 'x');
	unsigned char *packet;
	size_t length;
	assert_int_equal(ogg_packet(stream, used, 1, &packet, &length), OGG_FOUND);
	assert_int_equal(length, 255 + 255 + 255 + 12);
	assert_int_equal(packet[0], 'b');
	assert_int_equal(packet[255], 'c');
	assert_int_equal(packet[510], 'x');
	assert_int_equal(packet[765], 'y');
	free(packet);
}

static void test_a_buffer_ending_before_the_packet_needs_more(void **state)
{
	(void)state;
	used = 0;
	const unsigned char first[] = {30, 255};
	const unsigned char second[] = {100};
	page(7, first, 2, 'a');
	page(7, second, 1, 'x');
	unsigned char *packet = NULL;
	size_t length;
	assert_int_equal(ogg_packet(stream, used - 50, 1, &packet, &length), OGG_NEED_MORE);
	assert_int_equal(ogg_packet(stream, 20, 1, &packet, &length), OGG_NEED_MORE);
	assert_null(packet);
	assert_int_equal(ogg_packet(stream, used, 1, &packet, &length), OGG_FOUND);
	assert_int_equal(length, 355);
	free(packet);
}

static void test_bytes_that_are_not_ogg(void **state)
{
	(void)state;
	unsigned char junk[64] = "RIFF....WAVEfmt ";
	unsigned char *packet;
	size_t length;
	assert_int_equal(ogg_packet(junk, sizeof(junk), 1, &packet, &length), OGG_INVALID);
	memcpy(junk, "OggS\x01", 5); /* version 1 does not exist */
	assert_int_equal(ogg_packet(junk, sizeof(junk), 1, &packet, &length), OGG_INVALID);
}

/* ogg_last_page: the length facts of a file's end */

/* An Ogg page flagged end-of-stream, granule position 115233, one 10-byte packet. */
static const unsigned char last_page[] = {
	0x4f, 0x67, 0x67, 0x53, 0x00, 0x04, 0x21, 0xc2, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x34, 0x12, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0xad, 0x73, 0xc8, 0x3b, 0x01, 0x0a,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09};

static void test_an_ogg_file_ending_with_its_end_of_stream_page(void **state)
{
	(void)state;
	unsigned char tail[100];
	memset(tail, 0xAA, sizeof(tail));
	memcpy(tail + sizeof(tail) - sizeof(last_page), last_page, sizeof(last_page));
	uint64_t granule = 0;
	assert_int_equal(ogg_last_page(tail, sizeof(tail), &granule), OGG_END_WHOLE);
	assert_int_equal(granule, 115233);
}

static void test_an_ogg_file_cut_at_a_page_boundary_has_no_end_of_stream(void **state)
{
	(void)state;
	unsigned char page[sizeof(last_page)];
	memcpy(page, last_page, sizeof(page));
	page[5] = 0; /* the same page, not flagged end-of-stream, with its own CRC */
	memcpy(page + 22, "\xbb\x94\x48\x9f", 4);
	uint64_t granule;
	assert_int_equal(ogg_last_page(page, sizeof(page), &granule), OGG_END_NO_EOS);
	assert_int_equal(granule, 115233);
	page[30] ^= 1; /* damaged: no whole page left */
	assert_int_equal(ogg_last_page(page, sizeof(page), &granule), OGG_END_NONE);
}

static void test_an_ogg_page_cut_short_or_followed_by_bytes_is_cut(void **state)
{
	(void)state;
	uint64_t granule;
	assert_int_equal(ogg_last_page(last_page, sizeof(last_page) - 3, &granule), OGG_END_CUT);
	unsigned char longer[sizeof(last_page) + 2];
	memcpy(longer, last_page, sizeof(last_page));
	longer[sizeof(last_page)] = 'O';
	longer[sizeof(last_page) + 1] = 'g';
	assert_int_equal(ogg_last_page(longer, sizeof(longer), &granule), OGG_END_CUT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_second_packet_of_the_first_page),
		cmocka_unit_test(test_packet_laced_over_segments_and_pages),
		cmocka_unit_test(test_a_buffer_ending_before_the_packet_needs_more),
		cmocka_unit_test(test_bytes_that_are_not_ogg),
		cmocka_unit_test(test_an_ogg_file_ending_with_its_end_of_stream_page),
		cmocka_unit_test(test_an_ogg_file_cut_at_a_page_boundary_has_no_end_of_stream),
		cmocka_unit_test(test_an_ogg_page_cut_short_or_followed_by_bytes_is_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
