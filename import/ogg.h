/*
 * ogg: one packet of an Ogg stream's first logical bitstream, put together
 * from the pages in a buffer (RFC 3533), and how the file ends: its last
 * page whole and flagged end-of-stream, or not (truncated). Pure. Page CRCs
 * are checked for the last page only (TagLib reads the audio).
 */
#ifndef MUSICD_IMPORT_OGG_H
#define MUSICD_IMPORT_OGG_H

#include <stddef.h>
#include <stdint.h>

enum ogg_result { OGG_FOUND, OGG_NEED_MORE, OGG_INVALID, OGG_NO_MEMORY };

/*
 * Finds packet number index (0 is the identification header) of the stream
 * whose page comes first in bytes[0..length). On OGG_FOUND, *packet is a
 * malloc'd copy the caller frees. OGG_NEED_MORE: the buffer ends before it.
 */
enum ogg_result ogg_packet(const unsigned char *bytes, size_t length, unsigned index,
			   unsigned char **packet, size_t *packet_length);

/* How an Ogg file ends (its last page is the stream's own length fact). */
enum ogg_end {
	OGG_END_WHOLE,	/* a whole page (CRC holds) flagged end-of-stream ends the file */
	OGG_END_NO_EOS, /* the last whole page is not the stream's end: cut at a page boundary */
	OGG_END_CUT,	/* the last page is cut short, or bytes follow the last whole one */
	OGG_END_NONE,	/* no page at all */
};

/*
 * Looks at tail[0..length), the file's last bytes (at least one whole page:
 * OGG_MAX_PAGE), for its last page; *granule is that page's granule position.
 */
enum ogg_end ogg_last_page(const unsigned char *tail, size_t length, uint64_t *granule);

#define OGG_MAX_PAGE (27 + 255 + 255 * 255)

#endif
