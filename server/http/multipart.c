/*
 * multipart: byteranges framing. The body length is computed from the same
 * functions that produce the text, so the promised Content-Length and the
 * bytes sent cannot disagree.
 */
#include "http/multipart.h"

#include <stdio.h>

#include "http/response_head.h"

static size_t fitted(int written, size_t out_size)
{
	return written < 0 || (size_t)written >= out_size ? 0 : (size_t)written;
}

size_t multipart_part_header(char *out, size_t out_size, const char *boundary,
			     const char *content_type, const struct byte_range *part,
			     uint64_t file_size)
{
	char range[sizeof("bytes -/") + 3 * 20]; /* three uint64_t in decimal */
	if (response_content_range(range, sizeof(range), part->first, part->last, file_size) == 0)
		return 0;
	int written = snprintf(out, out_size,
			       "\r\n--%s\r\nContent-Type: %s\r\nContent-Range: %s\r\n\r\n",
			       boundary, content_type, range);
	return fitted(written, out_size);
}

size_t multipart_closing(char *out, size_t out_size, const char *boundary)
{
	return fitted(snprintf(out, out_size, "\r\n--%s--\r\n", boundary), out_size);
}

uint64_t multipart_body_length(const char *boundary, const char *content_type,
			       const struct byte_range *parts, size_t count, uint64_t file_size)
{
	char text[MULTIPART_HEADER_MAX];
	uint64_t length = multipart_closing(text, sizeof(text), boundary);
	for (size_t i = 0; i < count; i++) {
		length += multipart_part_header(text, sizeof(text), boundary, content_type,
						&parts[i], file_size);
		length += parts[i].last - parts[i].first + 1;
	}
	return length;
}

size_t multipart_content_type(char *out, size_t out_size, const char *boundary)
{
	return fitted(snprintf(out, out_size, "multipart/byteranges; boundary=%s", boundary),
		      out_size);
}
