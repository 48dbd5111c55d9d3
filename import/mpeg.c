/*
 * mpeg: the header bits of ISO/IEC 11172-3 and 13818-3 and the Xing/Info
 * layout (tag, flags, then frames, bytes, table of contents and quality when
 * their flags are set, then the LAME extension with the encoder's name). Other encoders' byte counts are
 * not trusted: some count the whole file, tags included.
 */
#include "mpeg.h"

#include <string.h>

#define XING_FRAMES 0x1
#define XING_BYTES 0x2
#define XING_TOC 0x4
#define XING_QUALITY 0x8
#define XING_TOC_SIZE 100

static uint32_t big_endian32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

bool mpeg_is_layer3_header(const unsigned char *b)
{
	unsigned version = (b[1] >> 3) & 3; /* 0: 2.5, 1: reserved, 2: 2, 3: 1 */
	unsigned layer = (b[1] >> 1) & 3;   /* 1: layer III */
	unsigned bitrate = b[2] >> 4;
	unsigned rate = (b[2] >> 2) & 3;
	return b[0] == 0xFF && (b[1] & 0xE0) == 0xE0 && version != 1 && layer == 1 &&
	       bitrate != 0 && bitrate != 15 && rate != 3;
}

bool mpeg_stream_bytes(const unsigned char *bytes, size_t length, uint32_t *stream_bytes)
{
	if (length < 4 || !mpeg_is_layer3_header(bytes))
		return false;
	bool mpeg1 = ((bytes[1] >> 3) & 3) == 3;
	bool mono = (bytes[3] >> 6) == 3;
	size_t side_info = mpeg1 ? (mono ? 17 : 32) : (mono ? 9 : 17);
	size_t tag = 4 + side_info;
	if (length < tag + 8 ||
	    (memcmp(bytes + tag, "Xing", 4) != 0 && memcmp(bytes + tag, "Info", 4) != 0))
		return false;
	uint32_t flags = big_endian32(bytes + tag + 4);
	if (!(flags & XING_BYTES))
		return false;
	size_t count_at = tag + 8 + ((flags & XING_FRAMES) ? 4 : 0);
	size_t encoder_at = count_at + 4 + ((flags & XING_TOC) ? XING_TOC_SIZE : 0) +
			    ((flags & XING_QUALITY) ? 4 : 0);
	if (length < count_at + 4 || length < encoder_at + 4)
		return false;
	const unsigned char *encoder = bytes + encoder_at;
	if (memcmp(encoder, "LAME", 4) != 0 && memcmp(encoder, "Lavc", 4) != 0 &&
	    memcmp(encoder, "Lavf", 4) != 0)
		return false;
	*stream_bytes = big_endian32(bytes + count_at);
	return *stream_bytes > 0;
}
