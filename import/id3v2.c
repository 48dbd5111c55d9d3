/*
 * id3v2: versions 2.2, 2.3 and 2.4 (ID3v2 informal standards at id3.org):
 * header, optional extended header, frames until padding or the end, with
 * unsynchronisation undone where the tag or a frame says so. Compressed or
 * encrypted frames are passed over unread.
 */
#include "id3v2.h"

#include <bson/bson.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum text_encoding { LATIN1 = 0, UTF16_BOM = 1, UTF16BE = 2, UTF8 = 3 };

#define HEADER_UNSYNC 0x80
#define HEADER_EXTENDED 0x40
#define HEADER_FOOTER 0x10
#define FRAME24_UNSYNC 0x0002
#define FRAME24_LENGTH_INDICATOR 0x0001
#define FRAME24_COMPRESSED 0x0008
#define FRAME24_ENCRYPTED 0x0004
#define FRAME23_COMPRESSED 0x0080
#define FRAME23_ENCRYPTED 0x0040

static uint32_t syncsafe(const unsigned char *p)
{
	return (uint32_t)(p[0] & 0x7F) << 21 | (uint32_t)(p[1] & 0x7F) << 14 |
	       (uint32_t)(p[2] & 0x7F) << 7 | (uint32_t)(p[3] & 0x7F);
}

static uint32_t big_endian(const unsigned char *p, size_t n)
{
	uint32_t value = 0;
	for (size_t i = 0; i < n; i++)
		value = value << 8 | p[i];
	return value;
}

size_t id3v2_tag_size(const unsigned char *header)
{
	if (memcmp(header, "ID3", 3) != 0 || header[3] < 2 || header[3] > 4 || header[4] == 0xFF)
		return 0;
	for (int i = 6; i < 10; i++) {
		if (header[i] & 0x80)
			return 0;
	}
	size_t size = ID3V2_HEADER_SIZE + syncsafe(header + 6);
	if (header[3] == 4 && (header[5] & HEADER_FOOTER))
		size += ID3V2_HEADER_SIZE;
	return size;
}

/* Undoes unsynchronisation in place (0xFF 0x00 -> 0xFF); returns the new length. */
static size_t resync(unsigned char *bytes, size_t length)
{
	size_t out = 0;
	for (size_t i = 0; i < length; i++) {
		bytes[out++] = bytes[i];
		if (bytes[i] == 0xFF && i + 1 < length && bytes[i + 1] == 0x00)
			i++;
	}
	return out;
}

/* Appends code point as UTF-8 to out (room for 4 bytes is the caller's). */
static size_t put_utf8(char *out, uint32_t code)
{
	if (code < 0x80) {
		out[0] = (char)code;
		return 1;
	}
	if (code < 0x800) {
		out[0] = (char)(0xC0 | code >> 6);
		out[1] = (char)(0x80 | (code & 0x3F));
		return 2;
	}
	if (code < 0x10000) {
		out[0] = (char)(0xE0 | code >> 12);
		out[1] = (char)(0x80 | (code >> 6 & 0x3F));
		out[2] = (char)(0x80 | (code & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | code >> 18);
	out[1] = (char)(0x80 | (code >> 12 & 0x3F));
	out[2] = (char)(0x80 | (code >> 6 & 0x3F));
	out[3] = (char)(0x80 | (code & 0x3F));
	return 4;
}

/*
 * Decodes one value of the given encoding, up to its terminator, into a
 * malloc'd UTF-8 string (*out, or NULL when empty); *consumed is the bytes
 * read, terminator included. Returns 0, 1 when the text is not valid in its
 * encoding, or -1 when out of memory.
 */
static int decode_text(int encoding, const unsigned char *text, size_t length, char **out,
		       size_t *consumed)
{
	*out = NULL;
	*consumed = length;
	char *utf8 = malloc(length * 2 + 1); /* UTF-16: at most 3 bytes per 2; Latin1: 2 per 1 */
	if (utf8 == NULL)
		return -1;
	size_t used = 0;
	int invalid = 0;

	if (encoding == LATIN1 || encoding == UTF8) {
		size_t end = 0;
		while (end < length && text[end] != 0)
			end++;
		*consumed = end < length ? end + 1 : end;
		if (encoding == LATIN1) {
			for (size_t i = 0; i < end; i++)
				used += put_utf8(utf8 + used, text[i]);
		} else {
			invalid = !bson_utf8_validate((const char *)text, end, false);
			memcpy(utf8, text, end);
			used = end;
		}
	} else if (encoding == UTF16_BOM || encoding == UTF16BE) {
		bool big = encoding == UTF16BE;
		size_t i = 0;
		if (encoding == UTF16_BOM && length >= 2) {
			if (text[0] == 0xFE && text[1] == 0xFF) {
				big = true;
				i = 2;
			} else if (text[0] == 0xFF && text[1] == 0xFE) {
				i = 2;
			}
		}
		/* A trailing odd byte is a stray terminator some taggers write: ignored. */
		for (; i + 1 < length; i += 2) {
			uint32_t unit = big ? (uint32_t)text[i] << 8 | text[i + 1]
					    : (uint32_t)text[i + 1] << 8 | text[i];
			if (unit == 0) {
				*consumed = i + 2;
				break;
			}
			if (unit >= 0xDC00 && unit <= 0xDFFF) {
				invalid = 1;
				break;
			}
			if (unit >= 0xD800 && unit <= 0xDBFF) {
				uint32_t low = 0;
				if (i + 3 < length)
					low = big ? (uint32_t)text[i + 2] << 8 | text[i + 3]
						  : (uint32_t)text[i + 3] << 8 | text[i + 2];
				if (low < 0xDC00 || low > 0xDFFF) {
					invalid = 1;
					break;
				}
				unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
				i += 2;
			}
			used += put_utf8(utf8 + used, unit);
		}
	} else {
		invalid = 1; /* no such encoding */
	}
	if (invalid || used == 0) {
		free(utf8);
		return invalid;
	}
	utf8[used] = '\0';
	*out = utf8;
	return 0;
}

static bool is_text_frame(const char *id)
{
	return id[0] == 'T' || strcmp(id, "COMM") == 0 || strcmp(id, "COM") == 0;
}

/*
 * Checks every value of a text frame (v2.4 allows several, NUL-separated;
 * COMM and TXXX hold a description and a text) and keeps TPE2 and TPOS.
 */
static int take_frame(const char *id, const unsigned char *content, size_t length,
		      struct id3v2_info *info)
{
	if (!is_text_frame(id) || length == 0)
		return 0;
	int encoding = content[0];
	size_t position = 1;
	if (id[0] == 'C')
		position += 3; /* COMM: the language */
	bool first = true;

	while (position < length) {
		char *value;
		size_t consumed;
		int status = decode_text(encoding, content + position, length - position, &value,
					 &consumed);
		if (status < 0)
			return -1;
		if (status > 0) {
			if (info->invalid_frame[0] == '\0')
				strcpy(info->invalid_frame, id);
			return 0;
		}
		position += consumed;
		if (first && value != NULL &&
		    (strcmp(id, "TPE2") == 0 || strcmp(id, "TP2") == 0) && info->album_artist == NULL) {
			info->album_artist = value;
			value = NULL;
		} else if (first && value != NULL &&
			   (strcmp(id, "TPOS") == 0 || strcmp(id, "TPA") == 0)) {
			unsigned disc = 0;
			for (const char *p = value; *p >= '0' && *p <= '9' && disc < 100000; p++)
				disc = disc * 10 + (unsigned)(*p - '0');
			info->disc = disc;
		}
		free(value);
		first = false;
	}
	return 0;
}

int id3v2_parse(const unsigned char *bytes, size_t length, struct id3v2_info *info)
{
	memset(info, 0, sizeof(*info));
	if (length < ID3V2_HEADER_SIZE || id3v2_tag_size(bytes) == 0)
		return 0;
	int version = bytes[3];
	int flags = bytes[5];
	size_t end = ID3V2_HEADER_SIZE + syncsafe(bytes + 6);
	if (end > length)
		end = length;

	/* Work on a copy: unsynchronisation is undone in place. */
	size_t body_length = end - ID3V2_HEADER_SIZE;
	unsigned char *body = malloc(body_length + 1);
	if (body == NULL)
		return -1;
	memcpy(body, bytes + ID3V2_HEADER_SIZE, body_length);
	if (version < 4 && (flags & HEADER_UNSYNC))
		body_length = resync(body, body_length);

	size_t position = 0;
	if ((flags & HEADER_EXTENDED) && version >= 3 && body_length >= 4) {
		size_t extended = version == 4 ? syncsafe(body) : big_endian(body, 4) + 4;
		position = extended;
	}
	size_t id_size = version == 2 ? 3 : 4;
	size_t header_size = version == 2 ? 6 : 10;
	int status = 0;

	while (position + header_size <= body_length) {
		const unsigned char *frame = body + position;
		if (frame[0] == 0)
			break; /* padding */
		char id[5] = {0};
		memcpy(id, frame, id_size);
		size_t size = version == 2 ? big_endian(frame + 3, 3)
			      : version == 3 ? big_endian(frame + 4, 4)
					     : syncsafe(frame + 4);
		unsigned frame_flags = version == 2 ? 0 : big_endian(frame + 8, 2);
		position += header_size;
		if (size > body_length - position)
			break;
		unsigned char *content = body + position;
		size_t content_length = size;
		position += size;

		bool skip = version == 3 ? (frame_flags & (FRAME23_COMPRESSED | FRAME23_ENCRYPTED))
			  : version == 4 ? (frame_flags & (FRAME24_COMPRESSED | FRAME24_ENCRYPTED))
					 : false;
		if (skip)
			continue;
		if (version == 4 && (frame_flags & FRAME24_LENGTH_INDICATOR)) {
			if (content_length < 4)
				continue;
			content += 4;
			content_length -= 4;
		}
		if (version == 4 && ((frame_flags & FRAME24_UNSYNC) || (flags & HEADER_UNSYNC)))
			content_length = resync(content, content_length);
		if ((status = take_frame(id, content, content_length, info)) < 0)
			break;
	}
	free(body);
	if (status < 0) {
		free(info->album_artist);
		info->album_artist = NULL;
	}
	return status;
}
