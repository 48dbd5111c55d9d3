/*
 * ogg: one packet of an Ogg stream's first logical bitstream, put together
 * from the pages in a buffer (RFC 3533). Pure; page CRCs are not checked
 * (TagLib reads the audio; this only finds the comment header).
 */
#ifndef MUSICD_IMPORT_OGG_H
#define MUSICD_IMPORT_OGG_H

#include <stddef.h>

enum ogg_result { OGG_FOUND, OGG_NEED_MORE, OGG_INVALID, OGG_NO_MEMORY };

/*
 * Finds packet number index (0 is the identification header) of the stream
 * whose page comes first in bytes[0..length). On OGG_FOUND, *packet is a
 * malloc'd copy the caller frees. OGG_NEED_MORE: the buffer ends before it.
 */
enum ogg_result ogg_packet(const unsigned char *bytes, size_t length, unsigned index,
			   unsigned char **packet, size_t *packet_length);

#endif
