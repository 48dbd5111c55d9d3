/*
 * mpeg: the header bits of ISO/IEC 11172-3 and 13818-3 and the Xing/Info
 * layout (tag, flags, then frames, bytes, table of contents and quality when
 * their flags are set, then the LAME extension with the encoder's name and,
 * 21 bytes on, the encoder delay and padding in samples). Other encoders'
 * counts are not trusted: some count the whole file, tags included.
 */
#include "mpeg.h"

#include <string.h>

#define XING_FRAMES 0x1
#define XING_BYTES 0x2
#define XING_TOC 0x4
#define XING_QUALITY 0x8
#define XING_TOC_SIZE 100
#define LAME_GAPLESS 21 /* bytes from the encoder's name to its delay and padding */

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

/* Where the Xing/Info header's fields are in the frame at bytes; false if it has none. */
struct xing {
	uint32_t flags;
	size_t tag, frames_at, count_at, encoder_at; /* offsets in the frame */
};

static bool find_xing(const unsigned char *bytes, size_t length, struct xing *xing)
{
	if (length < 4 || !mpeg_is_layer3_header(bytes))
		return false;
	bool mpeg1 = ((bytes[1] >> 3) & 3) == 3;
	bool mono = (bytes[3] >> 6) == 3;
	size_t side_info = mpeg1 ? (mono ? 17 : 32) : (mono ? 9 : 17);
	xing->tag = 4 + side_info;
	if (length < xing->tag + 8 || (memcmp(bytes + xing->tag, "Xing", 4) != 0 &&
				       memcmp(bytes + xing->tag, "Info", 4) != 0))
		return false;
	xing->flags = big_endian32(bytes + xing->tag + 4);
	xing->frames_at = xing->tag + 8;
	xing->count_at = xing->frames_at + ((xing->flags & XING_FRAMES) ? 4 : 0);
	xing->encoder_at = xing->count_at + ((xing->flags & XING_BYTES) ? 4 : 0) +
			   ((xing->flags & XING_TOC) ? XING_TOC_SIZE : 0) +
			   ((xing->flags & XING_QUALITY) ? 4 : 0);
	return true;
}

/* Whether the encoder that wrote the LAME extension at encoder is one whose counts hold. */
static bool trusted_encoder(const unsigned char *bytes, size_t length, const struct xing *xing)
{
	if (length < xing->encoder_at + 4)
		return false;
	const unsigned char *encoder = bytes + xing->encoder_at;
	return memcmp(encoder, "LAME", 4) == 0 || memcmp(encoder, "Lavc", 4) == 0 ||
	       memcmp(encoder, "Lavf", 4) == 0;
}

bool mpeg_stream_bytes(const unsigned char *bytes, size_t length, uint32_t *stream_bytes)
{
	struct xing xing;
	if (!find_xing(bytes, length, &xing) || !(xing.flags & XING_BYTES) ||
	    length < xing.count_at + 4 || !trusted_encoder(bytes, length, &xing))
		return false;
	*stream_bytes = big_endian32(bytes + xing.count_at);
	return *stream_bytes > 0;
}

bool mpeg_playing_samples(const unsigned char *bytes, size_t length, uint64_t *samples,
			  unsigned *sample_rate)
{
	static const unsigned rates[3][3] = {{11025, 12000, 8000}, /* MPEG 2.5 */
					     {22050, 24000, 16000}, /* MPEG 2 */
					     {44100, 48000, 32000}}; /* MPEG 1 */
	struct xing xing;
	/* The delay and padding: 12 bits each, 21 bytes into the LAME extension. */
	if (!find_xing(bytes, length, &xing) || !(xing.flags & XING_FRAMES) ||
	    !trusted_encoder(bytes, length, &xing) || length < xing.encoder_at + LAME_GAPLESS + 3)
		return false;
	unsigned version = (bytes[1] >> 3) & 3;
	const unsigned char *gapless = bytes + xing.encoder_at + LAME_GAPLESS;
	uint64_t delay = (uint64_t)gapless[0] << 4 | gapless[1] >> 4;
	uint64_t padding = (uint64_t)(gapless[1] & 0x0F) << 8 | gapless[2];
	uint64_t total = (uint64_t)big_endian32(bytes + xing.frames_at) * (version == 3 ? 1152 : 576);
	if (total <= delay + padding)
		return false;
	*samples = total - delay - padding;
	*sample_rate = rates[version == 0 ? 0 : version - 1][(bytes[2] >> 2) & 3];
	return true;
}
