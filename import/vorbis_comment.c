/*
 * vorbis_comment: the layout of the Vorbis I specification, section 5
 * (little-endian 32-bit lengths), shared by Opus (RFC 7845) and FLAC's
 * VORBIS_COMMENT block. Names are compared case-insensitively, as specified.
 */
#include "vorbis_comment.h"

#include <bson/bson.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static uint32_t little_endian32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool name_is(const char *comment, size_t name_length, const char *name)
{
	return strlen(name) == name_length && strncasecmp(comment, name, name_length) == 0;
}

int vorbis_comment_parse(const unsigned char *bytes, size_t length,
			 struct vorbis_comment_info *info)
{
	memset(info, 0, sizeof(*info));
	if (length < 4)
		return 0;
	size_t vendor = little_endian32(bytes);
	if (vendor > length - 4 || length - 4 - vendor < 4)
		return 0;
	size_t position = 4 + vendor;
	uint32_t count = little_endian32(bytes + position);
	position += 4;

	for (uint32_t i = 0; i < count && length - position >= 4; i++) {
		size_t size = little_endian32(bytes + position);
		position += 4;
		if (size > length - position)
			break;
		const char *comment = (const char *)bytes + position;
		position += size;
		const char *equals = memchr(comment, '=', size);
		size_t name_length = equals ? (size_t)(equals - comment) : size;

		if (!bson_utf8_validate(comment, size, false)) {
			if (info->invalid_field[0] == '\0') {
				size_t n = name_length < sizeof(info->invalid_field) - 1
						   ? name_length
						   : sizeof(info->invalid_field) - 1;
				/* The name is ASCII by the specification; bson_utf8_validate is the guard. */
				if (!bson_utf8_validate(comment, n, false))
					n = 0;
				memcpy(info->invalid_field, n ? comment : "?", n ? n : 1);
				info->invalid_field[n ? n : 1] = '\0';
			}
			continue;
		}
		if (equals == NULL)
			continue;
		const char *value = equals + 1;
		size_t value_length = size - name_length - 1;
		if (value_length == 0)
			continue;
		if (info->album_artist == NULL && (name_is(comment, name_length, "ALBUMARTIST") ||
						   name_is(comment, name_length, "ALBUM ARTIST"))) {
			info->album_artist = strndup(value, value_length);
			if (info->album_artist == NULL)
				return -1;
		} else if (info->disc == 0 && name_is(comment, name_length, "DISCNUMBER")) {
			unsigned disc = 0;
			for (size_t k = 0; k < value_length && value[k] >= '0' && value[k] <= '9' &&
					   disc < 100000;
			     k++)
				disc = disc * 10 + (unsigned)(value[k] - '0');
			info->disc = disc;
		}
	}
	return 0;
}
