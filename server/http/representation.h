/*
 * representation: what an answer states about the selected representation
 * of a track (RFC 9110 section 3.2), whatever its bytes come from (a file on
 * disk, a spooled copy, GridFS): its length, type and validators, with the
 * header lines every answer about it repeats precomputed once. A plain data
 * type: whoever fills it owns the strings it points to.
 */
#ifndef MUSICD_REPRESENTATION_H
#define MUSICD_REPRESENTATION_H

#include <stdint.h>
#include <time.h>

#include "http/etag.h"
#include "http/http_date.h"

struct representation {
	uint64_t size;
	time_t mtime;
	const char *content_type;
	const char *cache_control; /* NULL for none */
	const char *file_lines;	   /* Last-Modified, ETag, Cache-Control lines (response_head.h) */
	char etag[ETAG_MAX];
	char last_modified[HTTP_DATE_MAX];
};

#endif
