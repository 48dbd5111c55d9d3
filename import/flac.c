/*
 * flac: a frame header is a sync code (0xFFF8, or 0xFFF9 for variable block
 * sizes), block size and sample rate codes, the frame or first sample number
 * in UTF-8-like coding, the sizes the codes defer, then a CRC-8; the frame
 * ends with a CRC-16 over all of it. The last frame is found from the end:
 * the nearest header whose CRC-8 holds and whose frame's CRC-16 holds up to
 * the end of the file (a false sync inside audio data rarely passes both).
 */
#include "flac.h"

#define MAX_CANDIDATES 16 /* headers tried from the end before the last frame counts as cut */

static uint8_t crc8(const unsigned char *bytes, size_t length)
{
	uint8_t crc = 0;
	for (size_t i = 0; i < length; i++) {
		crc ^= bytes[i];
		for (int bit = 0; bit < 8; bit++)
			crc = crc & 0x80 ? (uint8_t)(crc << 1 ^ 0x07) : (uint8_t)(crc << 1);
	}
	return crc;
}

static uint16_t crc16(const unsigned char *bytes, size_t length)
{
	uint16_t crc = 0;
	for (size_t i = 0; i < length; i++) {
		crc ^= (uint16_t)(bytes[i] << 8);
		for (int bit = 0; bit < 8; bit++)
			crc = crc & 0x8000 ? (uint16_t)(crc << 1 ^ 0x8005) : (uint16_t)(crc << 1);
	}
	return crc;
}

bool flac_parse_streaminfo(const unsigned char *b, struct flac_streaminfo *info)
{
	info->min_block = (unsigned)b[0] << 8 | b[1];
	info->max_block = (unsigned)b[2] << 8 | b[3];
	info->max_frame = (unsigned)b[7] << 16 | (unsigned)b[8] << 8 | b[9];
	info->sample_rate = (unsigned)b[10] << 12 | (unsigned)b[11] << 4 | b[12] >> 4;
	info->total_samples = (uint64_t)(b[13] & 0x0F) << 32 | (uint64_t)b[14] << 24 |
			      (uint64_t)b[15] << 16 | (uint64_t)b[16] << 8 | b[17];
	return info->min_block >= 16 && info->max_block >= info->min_block &&
	       info->sample_rate > 0;
}

/* The UTF-8-like coded number at p (up to 7 bytes); its length, or 0 if it is not one. */
static size_t coded_number(const unsigned char *p, size_t length, uint64_t *value)
{
	if (length == 0)
		return 0;
	unsigned lead = p[0];
	size_t extra = lead < 0x80 ? 0 : lead >= 0xC0 && lead < 0xE0 ? 1 : lead >= 0xE0 && lead < 0xF0 ? 2
		     : lead >= 0xF0 && lead < 0xF8 ? 3 : lead >= 0xF8 && lead < 0xFC ? 4
		     : lead >= 0xFC && lead < 0xFE ? 5 : lead == 0xFE ? 6 : 7;
	if (extra == 7 || (lead >= 0x80 && lead < 0xC0) || extra + 1 > length)
		return 0;
	uint64_t v = extra == 0 ? lead : lead & (0x3F >> extra);
	for (size_t i = 1; i <= extra; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3F);
	}
	*value = v;
	return extra + 1;
}

/* The frame header at p: its length, first sample and block size; 0 if it is not one. */
static size_t frame_header(const unsigned char *p, size_t length, const struct flac_streaminfo *info,
			   uint64_t *first_sample, unsigned *block)
{
	if (length < 6 || p[0] != 0xFF || (p[1] & 0xFE) != 0xF8)
		return 0;
	unsigned block_code = p[2] >> 4, rate_code = p[2] & 0x0F;
	unsigned channels = p[3] >> 4, size_code = (p[3] >> 1) & 7;
	if (block_code == 0 || rate_code == 15 || channels > 10 || size_code == 3 || (p[3] & 1))
		return 0;
	uint64_t number;
	size_t at = 4, n = coded_number(p + at, length - at, &number);
	if (n == 0)
		return 0;
	at += n;
	if (block_code == 1)
		*block = 192;
	else if (block_code <= 5)
		*block = 576u << (block_code - 2);
	else if (block_code >= 8)
		*block = 256u << (block_code - 8);
	else {
		size_t bytes = block_code == 6 ? 1 : 2;
		if (at + bytes > length)
			return 0;
		*block = (bytes == 1 ? p[at] : (unsigned)p[at] << 8 | p[at + 1]) + 1;
		at += bytes;
	}
	at += rate_code == 12 ? 1 : rate_code == 13 || rate_code == 14 ? 2 : 0;
	if (at + 1 > length || crc8(p, at) != p[at])
		return 0;
	bool variable = p[1] & 1;
	*first_sample = variable ? number : number * info->max_block;
	return at + 1;
}

enum flac_tail flac_last_frame(const unsigned char *tail, size_t length,
			       const struct flac_streaminfo *info, uint64_t *end_sample)
{
	int candidates = 0;
	for (size_t i = length >= 2 ? length - 2 : 0; i + 2 <= length && candidates < MAX_CANDIDATES;
	     i--) {
		uint64_t first;
		unsigned block;
		size_t header = frame_header(tail + i, length - i, info, &first, &block);
		if (header > 0) {
			candidates++;
			if (length - i >= header + 2 && crc16(tail + i, length - i) == 0) {
				*end_sample = first + block;
				return FLAC_LAST_FRAME_WHOLE;
			}
		}
		if (i == 0)
			break;
	}
	return candidates > 0 ? FLAC_LAST_FRAME_CUT : FLAC_NO_FRAME;
}
