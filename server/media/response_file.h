/*
 * response_file: what a response needs of an open file, with its header
 * values precomputed (by the open-file cache, once per file). A plain data
 * type shared by the caches below the response and the response itself.
 */
#ifndef MUSICD_RESPONSE_FILE_H
#define MUSICD_RESPONSE_FILE_H

#include <event2/buffer.h>
#include <stdint.h>
#include <time.h>

#include "http/etag.h"
#include "http/http_date.h"

struct response_file {
	struct evbuffer_file_segment *segment; /* borrowed: the caller keeps its reference */
	uint64_t size;
	time_t mtime;
	const char *content_type;
	const char *cache_control; /* NULL for none */
	const char *file_lines;	   /* Last-Modified, ETag, Cache-Control lines (head_file_lines) */
	const char *resolved_path; /* canonical path, for the offload headers */
	int root_index;		   /* the media root containing it */
	char etag[ETAG_MAX];
	char last_modified[HTTP_DATE_MAX];
};

#endif
