/*
 * ogg: page headers ("OggS", version 0, 27 bytes then the segment table) and
 * lacing: a packet ends at the first segment shorter than 255 bytes, and may
 * continue over pages. Pages of other logical streams are passed over.
 */
#include "ogg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_HEADER_SIZE 27
#define OGG_PACKET_MAX (16u * 1024 * 1024)

static uint32_t little_endian32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

enum ogg_result ogg_packet(const unsigned char *bytes, size_t length, unsigned index,
			   unsigned char **packet, size_t *packet_length)
{
	size_t position = 0;
	unsigned current = 0; /* the packet the next segment belongs to */
	uint32_t serial = 0;
	int have_serial = 0;
	unsigned char *out = NULL;
	size_t used = 0;

	while (1) {
		if (length - position < PAGE_HEADER_SIZE) {
			free(out);
			return OGG_NEED_MORE;
		}
		const unsigned char *page = bytes + position;
		if (memcmp(page, "OggS", 4) != 0 || page[4] != 0) {
			free(out);
			return OGG_INVALID;
		}
		uint32_t page_serial = little_endian32(page + 14);
		size_t segments = page[26];
		if (length - position - PAGE_HEADER_SIZE < segments) {
			free(out);
			return OGG_NEED_MORE;
		}
		const unsigned char *table = page + PAGE_HEADER_SIZE;
		size_t body = 0;
		for (size_t i = 0; i < segments; i++)
			body += table[i];
		size_t data_start = position + PAGE_HEADER_SIZE + segments;
		if (!have_serial) {
			serial = page_serial;
			have_serial = 1;
		}
		if (page_serial == serial) {
			size_t offset = data_start;
			for (size_t i = 0; i < segments; i++) {
				size_t size = table[i];
				if (current == index) {
					if (offset + size > length) {
						free(out);
						return OGG_NEED_MORE;
					}
					if (used + size > OGG_PACKET_MAX) {
						free(out);
						return OGG_INVALID;
					}
					unsigned char *grown = realloc(out, used + size + 1);
					if (grown == NULL) {
						free(out);
						return OGG_NO_MEMORY;
					}
					out = grown;
					memcpy(out + used, bytes + offset, size);
					used += size;
				}
				offset += size;
				if (size < 255) {
					if (current == index) {
						if (out == NULL && (out = malloc(1)) == NULL)
							return OGG_NO_MEMORY;
						*packet = out;
						*packet_length = used;
						return OGG_FOUND;
					}
					current++;
				}
			}
		}
		if (length - data_start < body) {
			free(out);
			return OGG_NEED_MORE;
		}
		position = data_start + body;
	}
}

#define HEADER_EOS 0x04

static uint32_t page_crc(const unsigned char *page, size_t length)
{
	uint32_t crc = 0;
	for (size_t i = 0; i < length; i++) {
		/* The CRC field itself (bytes 22..25) counts as zeros. */
		unsigned char byte = i >= 22 && i < 26 ? 0 : page[i];
		crc ^= (uint32_t)byte << 24;
		for (int bit = 0; bit < 8; bit++)
			crc = crc & 0x80000000u ? crc << 1 ^ 0x04C11DB7u : crc << 1;
	}
	return crc;
}

enum ogg_end ogg_last_page(const unsigned char *tail, size_t length, uint64_t *granule)
{
	if (length < PAGE_HEADER_SIZE)
		return OGG_END_NONE;
	for (size_t i = length - PAGE_HEADER_SIZE + 1; i-- > 0;) {
		const unsigned char *page = tail + i;
		if (memcmp(page, "OggS", 4) != 0 || page[4] != 0)
			continue;
		size_t segments = page[26];
		if (length - i < PAGE_HEADER_SIZE + segments)
			return OGG_END_CUT; /* its segment table is cut */
		size_t size = PAGE_HEADER_SIZE + segments;
		for (size_t k = 0; k < segments; k++)
			size += page[PAGE_HEADER_SIZE + k];
		if (size > length - i)
			return OGG_END_CUT;
		if (page_crc(page, size) != little_endian32(page + 22))
			continue; /* "OggS" inside a packet, or a damaged page: look further back */
		if (size != length - i)
			return OGG_END_CUT;
		*granule = 0;
		for (int k = 7; k >= 0; k--)
			*granule = *granule << 8 | page[6 + k];
		return page[5] & HEADER_EOS ? OGG_END_WHOLE : OGG_END_NO_EOS;
	}
	return OGG_END_NONE;
}
