/*
 * mpeg: the first frame of an MPEG audio stream, for two facts TagLib does
 * not give: how many bytes of audio the encoder wrote, from the Xing/Info
 * header that LAME and FFmpeg put in that frame (a file holding fewer is
 * truncated), and how many samples play once the encoder's delay and
 * padding are left out (TagLib counts whole frames). Pure.
 */
#ifndef MUSICD_IMPORT_MPEG_H
#define MUSICD_IMPORT_MPEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether bytes[0..4) is a valid MPEG audio Layer III frame header. */
bool mpeg_is_layer3_header(const unsigned char *bytes);

/*
 * If the frame at bytes[0..length) carries a Xing/Info header with a byte
 * count written by LAME or FFmpeg (whose count runs from this frame's first
 * byte to the end of the audio), sets *stream_bytes and returns true.
 */
bool mpeg_stream_bytes(const unsigned char *bytes, size_t length, uint32_t *stream_bytes);

/*
 * The samples a gapless decoder plays: the Xing/Info header's frame count in
 * samples less the encoder delay and padding of the LAME extension (which
 * LAME and FFmpeg write), and the frame's sample rate. False without them.
 */
bool mpeg_playing_samples(const unsigned char *bytes, size_t length, uint64_t *samples,
			  unsigned *sample_rate);

#endif
