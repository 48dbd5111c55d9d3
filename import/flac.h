/*
 * flac: a FLAC stream's own length facts (RFC 9639): STREAMINFO's sample
 * count, and the last frame in the file: whole (its CRC-16 holds) and where
 * it ends, in samples. A file whose last whole frame ends before STREAMINFO's
 * count, or whose last frame is cut, is truncated: decoders stop there. Pure.
 */
#ifndef MUSICD_IMPORT_FLAC_H
#define MUSICD_IMPORT_FLAC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FLAC_STREAMINFO_SIZE 34

struct flac_streaminfo {
	unsigned min_block, max_block; /* samples per frame */
	unsigned max_frame;	       /* bytes, 0 when unknown */
	unsigned sample_rate;
	uint64_t total_samples; /* 0 when unknown */
};

/* Parses a STREAMINFO block's FLAC_STREAMINFO_SIZE bytes; false if they cannot be one. */
bool flac_parse_streaminfo(const unsigned char *block, struct flac_streaminfo *info);

enum flac_tail {
	FLAC_LAST_FRAME_WHOLE, /* *end_sample set */
	FLAC_LAST_FRAME_CUT,   /* a frame starts here but does not end whole at the end */
	FLAC_NO_FRAME,	       /* no frame header at all */
};

/*
 * Looks at tail[0..length), the file's last bytes (at least its last frame),
 * for its last frame.
 */
enum flac_tail flac_last_frame(const unsigned char *tail, size_t length,
			       const struct flac_streaminfo *info, uint64_t *end_sample);

#endif
