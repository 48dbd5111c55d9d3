/*
 * response: writes answers on evhttp's connections. Error answers are short
 * text/plain; file answers put the file's bytes in the connection's
 * socket-draining buffer so libevent sends them with sendfile(2), never
 * through user space. HEAD gets the same headers and no body.
 */
#ifndef MUSICD_RESPONSE_H
#define MUSICD_RESPONSE_H

#include <event2/buffer.h>
#include <stdint.h>

#include "exchange.h"
#include "range.h"
#include "validators.h"

/* The seconds a 503 asks clients to wait before retrying. */
#define RESPONSE_RETRY_AFTER_SECONDS "5"

/* What a response needs of an open file; header values are precomputed. */
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

/*
 * Sends status with a one-line text/plain body ("404 Not Found"). 405 carries
 * Allow, 503 carries Retry-After.
 */
void response_send_error(struct exchange *exchange, int status);

/* Sends a short text/plain 200 with body. */
void response_send_text(struct exchange *exchange, int status, const char *body);

/* 200 with the whole file: validators, Accept-Ranges, then the bytes by sendfile. */
void response_send_file(struct exchange *exchange, const struct response_file *file);

/* 206 with one range (Content-Range) of the file. */
void response_send_range(struct exchange *exchange, const struct response_file *file,
			 const struct byte_range *range);

/* 206 multipart/byteranges with several ranges, each part's bytes by sendfile. */
void response_send_multipart(struct exchange *exchange, const struct response_file *file,
			     const struct byte_range *parts, size_t count);

/* 416 with "Content-Range: bytes * /size". */
void response_send_unsatisfiable(struct exchange *exchange, const struct response_file *file);

/* 200 with headers only, handing the body to a front server through header: value. */
void response_send_offload(struct exchange *exchange, const struct response_file *file,
			   const char *header, const char *value);

/* 304 with the validators and Cache-Control, no body. */
void response_send_not_modified(struct exchange *exchange, const struct response_file *file);

/* The reason phrase for a status. */
const char *response_reason(int status);

#endif
