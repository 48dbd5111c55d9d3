/*
 * Unit tests for import/ogg.h on pages built byte by byte: the second packet
 * in the first page, a packet laced over several segments and over two
 * pages, pages of another logical stream passed over, a buffer that ends too
 * soon, and bytes that are not Ogg.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_second_packet_of_the_first_page),
		cmocka_unit_test(test_packet_laced_over_segments_and_pages),
		cmocka_unit_test(test_a_buffer_ending_before_the_packet_needs_more),
		cmocka_unit_test(test_bytes_that_are_not_ogg),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
