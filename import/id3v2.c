/*
 * id3v2: versions 2.2, 2.3 and 2.4 (ID3v2 informal standards at id3.org):
 * header, optional extended header, frames until padding or the end, with
 * unsynchronisation undone where the tag or a frame says so. Compressed or
 * encrypted frames are passed over unread. Text is checked where it lies,
 * never converted: TagLib converts it.
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

/*
 * Checks one value of the given encoding, up to its terminator; *consumed is
 * the bytes read, terminator included. Returns 0, or 1 when the text is not
 * valid in its encoding.
 */
static int check_text(int encoding, const unsigned char *text, size_t length, size_t *consumed)
{
	*consumed = length;
	if (encoding == LATIN1 || encoding == UTF8) {
		size_t end = 0;
		while (end < length && text[end] != 0)
			end++;
		*consumed = end < length ? end + 1 : end;
		return encoding == UTF8 && !bson_utf8_validate((const char *)text, end, false);
	}
	if (encoding != UTF16_BOM && encoding != UTF16BE)
		return 1; /* no such encoding */
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
		if (unit >= 0xDC00 && unit <= 0xDFFF)
			return 1; /* a low surrogate first */
		if (unit >= 0xD800 && unit <= 0xDBFF) {
			uint32_t low = 0;
			if (i + 3 < length)
				low = big ? (uint32_t)text[i + 2] << 8 | text[i + 3]
					  : (uint32_t)text[i + 3] << 8 | text[i + 2];
			if (low < 0xDC00 || low > 0xDFFF)
				return 1; /* a high surrogate alone */
			i += 2;
		}
	}
	return 0;
}

/* Frame ids are capital letters and digits (ID3v2.3 section 4, 2.4 4.2). */
static bool is_frame_id(const char *id)
{
	for (const char *p = id; *p != '\0'; p++) {
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			return false;
	}
	return id[0] != '\0';
}

static bool is_text_frame(const char *id)
{
	return id[0] == 'T' || strcmp(id, "COMM") == 0 || strcmp(id, "COM") == 0;
}

/*
 * Checks every value of a text frame (v2.4 allows several, NUL-separated;
 * COMM and TXXX hold a description and a text).
 */
static void check_frame(const char *id, const unsigned char *content, size_t length,
			struct id3v2_info *info)
{
	if (!is_text_frame(id) || length == 0)
		return;
	int encoding = content[0];
	size_t position = 1;
	if (id[0] == 'C')
		position += 3; /* COMM: the language */
	while (position < length) {
		size_t consumed;
		if (check_text(encoding, content + position, length - position, &consumed) > 0) {
			if (info->invalid_frame[0] == '\0')
				strcpy(info->invalid_frame, id);
			return;
		}
		position += consumed;
	}
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
	while (position + header_size <= body_length) {
		const unsigned char *frame = body + position;
		if (frame[0] == 0)
			break; /* padding */
		char id[5] = {0};
		memcpy(id, frame, id_size);
		if (!is_frame_id(id))
			break; /* not a frame: what follows is not the tag's (and the id is shown) */
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
		check_frame(id, content, content_length, info);
	}
	free(body);
	return 0;
}
