/*
 * mp4: the boxes of an MP4/M4A file (ISO/IEC 14496-12) as far as its length
 * facts go: each top-level box's size (a box, the mdat with the audio most
 * of all, that ends past the end of the file is cut) and the movie header's
 * duration (mvhd: the presentation's length after edit lists, what a player
 * plays; TagLib 1.13 reports the track's, encoder priming and padding
 * included). Pure: the caller reads the bytes.
 */
#ifndef MUSICD_IMPORT_MP4_H
#define MUSICD_IMPORT_MP4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MP4_BOX_HEADER_MAX 16

struct mp4_box {
	char type[5];
	uint64_t size;	 /* the whole box; 0: it runs to the end of the file */
	unsigned header; /* 8, or 16 with a 64-bit size */
};

/* Parses the box header in bytes[0..length); false if it cannot be one. */
bool mp4_box_header(const unsigned char *bytes, size_t length, struct mp4_box *box);

/* The duration in milliseconds of an mvhd box's body (after its header); false if not one. */
bool mp4_mvhd_duration(const unsigned char *body, size_t length, uint64_t *milliseconds);

#endif
