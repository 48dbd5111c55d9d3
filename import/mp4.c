/*
 * mp4: a box is a 32-bit big-endian size and a four-character type, the size
 * 1 meaning a 64-bit size follows and 0 that the box runs to the end of the
 * file. mvhd: version and flags, then (version 1) 64-bit creation and
 * modification times, a 32-bit timescale and a 64-bit duration, or (version
 * 0) all of them 32-bit.
 */
#include "mp4.h"

#include <string.h>

static uint64_t big_endian(const unsigned char *p, size_t n)
{
	uint64_t value = 0;
	for (size_t i = 0; i < n; i++)
		value = value << 8 | p[i];
	return value;
}

bool mp4_box_header(const unsigned char *bytes, size_t length, struct mp4_box *box)
{
	if (length < 8)
		return false;
	for (int i = 0; i < 4; i++) {
		if (bytes[4 + i] < 0x20 || bytes[4 + i] > 0x7E)
			return false;
	}
	memcpy(box->type, bytes + 4, 4);
	box->type[4] = '\0';
	box->size = big_endian(bytes, 4);
	box->header = 8;
	if (box->size == 1) {
		if (length < 16)
			return false;
		box->size = big_endian(bytes + 8, 8);
		box->header = 16;
	}
	return box->size == 0 || box->size >= box->header;
}

bool mp4_mvhd_duration(const unsigned char *body, size_t length, uint64_t *milliseconds)
{
	if (length < 4)
		return false;
	bool wide = body[0] == 1;
	size_t at = 4 + (wide ? 16 : 8);
	if (length < at + 4 + (wide ? 8 : 4))
		return false;
	uint64_t timescale = big_endian(body + at, 4);
	uint64_t duration = big_endian(body + at + 4, wide ? 8 : 4);
	if (timescale == 0 || duration == (wide ? UINT64_MAX : UINT32_MAX) ||
	    duration > UINT64_MAX / 1000)
		return false;
	*milliseconds = (duration * 1000 + timescale / 2) / timescale;
	return true;
}
