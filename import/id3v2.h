/*
 * id3v2: the one thing TagLib cannot tell about an ID3v2 tag: whether every
 * text frame holds valid text (TagLib silently turns invalid UTF-8 or UTF-16
 * into ""). Everything else of the tag is TagLib's. Pure: works on the tag's
 * bytes, which the caller reads from the file.
 */
#ifndef MUSICD_IMPORT_ID3V2_H
#define MUSICD_IMPORT_ID3V2_H

#include <stdbool.h>
#include <stddef.h>

#define ID3V2_HEADER_SIZE 10

struct id3v2_info {
	char invalid_frame[5]; /* "" or the id of the first frame whose text is invalid */
};

/*
 * The total size of the tag starting at header (header, body and footer), or
 * 0 when the ID3V2_HEADER_SIZE bytes there are not an ID3v2 header.
 */
size_t id3v2_tag_size(const unsigned char *header);

/*
 * Checks the tag in bytes[0..length) (as much of it as length holds; frames
 * past the end are ignored). Returns 0, or -1 when out of memory.
 */
int id3v2_parse(const unsigned char *bytes, size_t length, struct id3v2_info *info);

#endif
