/*
 * Fuzzes musicd-import's raw readers with arbitrary bytes: the ID3v2
 * parser, the Vorbis comment parser, the Ogg packet assembler and last-page
 * check, the MPEG Xing/Info and LAME readers, FLAC's STREAMINFO and
 * last-frame check, MP4 box headers and mvhd. None may read out of bounds
 * (ASan), and a field the text checkers name is a NUL-terminated, non-empty,
 * valid UTF-8 string (it goes into a message on a terminal).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <bson/bson.h>

#include "flac.h"
#include "id3v2.h"
#include "mp4.h"
#include "mpeg.h"
#include "ogg.h"
#include "vorbis_comment.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A name in a buffer of size bytes: "" or valid UTF-8 text, terminated inside it. */
static void check_name(const char *name, size_t size)
{
	size_t length = strnlen(name, size);
	if (length == size || !bson_utf8_validate(name, length, false))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= ID3V2_HEADER_SIZE)
		(void)id3v2_tag_size(data);
	struct id3v2_info id3;
	if (id3v2_parse(data, size, &id3) == 0)
		check_name(id3.invalid_frame, sizeof(id3.invalid_frame));

	struct vorbis_comment_info vorbis;
	if (vorbis_comment_parse(data, size, &vorbis) == 0)
		check_name(vorbis.invalid_field, sizeof(vorbis.invalid_field));

	unsigned char *packet = NULL;
	size_t packet_length = 0;
	if (ogg_packet(data, size, 1, &packet, &packet_length) == OGG_FOUND && packet_length > 0 &&
	    packet == NULL)
		abort();
	free(packet);

	uint32_t stream_bytes;
	(void)mpeg_stream_bytes(data, size, &stream_bytes);
	uint64_t samples;
	unsigned rate;
	if (mpeg_playing_samples(data, size, &samples, &rate) && rate == 0)
		abort();

	struct flac_streaminfo info = {.min_block = 4096, .max_block = 4096, .sample_rate = 44100};
	if (size >= FLAC_STREAMINFO_SIZE)
		(void)flac_parse_streaminfo(data, &info);
	uint64_t end;
	(void)flac_last_frame(data, size, &info, &end);
	uint64_t granule;
	(void)ogg_last_page(data, size, &granule);
	struct mp4_box box;
	if (mp4_box_header(data, size, &box) && box.header > size)
		abort();
	uint64_t milliseconds;
	(void)mp4_mvhd_duration(data, size, &milliseconds);
	if (size >= 4)
		(void)mpeg_is_layer3_header(data);
	return 0;
}
