/*
 * multipart: the framing of a multipart/byteranges body (RFC 9110 section
 * 14.6), laid out as nginx does. Pure: it writes the text between parts and
 * computes the exact Content-Length; the parts' bytes themselves are file
 * segments the caller adds between these texts.
 *
 *   CRLF "--" boundary CRLF "Content-Type: t" CRLF "Content-Range: bytes a-b/n" CRLF CRLF <part>
 *   ...
 *   CRLF "--" boundary "--" CRLF
 */
#ifndef MUSICD_MULTIPART_H
#define MUSICD_MULTIPART_H

#include <stddef.h>
#include <stdint.h>

#include "http/range.h"

#define MULTIPART_BOUNDARY_MAX 32
#define MULTIPART_HEADER_MAX 512

/* The text before a part's bytes; returns its length (0 if it does not fit out_size). */
size_t multipart_part_header(char *out, size_t out_size, const char *boundary,
			     const char *content_type, const struct byte_range *part,
			     uint64_t file_size);

/* The text after the last part; returns its length. */
size_t multipart_closing(char *out, size_t out_size, const char *boundary);

/* The exact body length for these parts. */
uint64_t multipart_body_length(const char *boundary, const char *content_type,
			       const struct byte_range *parts, size_t count, uint64_t file_size);

/* The Content-Type header value for the whole response. */
size_t multipart_content_type(char *out, size_t out_size, const char *boundary);

#endif
