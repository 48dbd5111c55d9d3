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

static uint32_t little_endian32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
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
		if (!bson_utf8_validate(comment, size, false)) {
			const char *equals = memchr(comment, '=', size);
			size_t n = equals ? (size_t)(equals - comment) : size;
			if (n > sizeof(info->invalid_field) - 1)
				n = sizeof(info->invalid_field) - 1;
			/* The name is ASCII by the specification; bson_utf8_validate is the guard. */
			if (n == 0 || !bson_utf8_validate(comment, n, false)) {
				comment = "?";
				n = 1;
			}
			memcpy(info->invalid_field, comment, n);
			info->invalid_field[n] = '\0';
			break; /* the first one is named */
		}
	}
	return 0;
}
