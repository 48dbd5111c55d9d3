/*
 * serve: answers a GET or HEAD for an open file the way nginx's static,
 * not-modified and range modules do together: preconditions first (304 or
 * 412), then Range and If-Range (206, multipart 206, 416 or the whole file).
 */
#ifndef MUSICD_SERVE_H
#define MUSICD_SERVE_H

#include "wire/exchange.h"
#include "http/range.h"
#include "respond/response.h"

enum serve_answer {
	SERVE_NOT_MODIFIED,	   /* 304 */
	SERVE_PRECONDITION_FAILED, /* 412 */
	SERVE_UNSATISFIABLE,	   /* 416 */
	SERVE_WHOLE,		   /* 200 */
	SERVE_PARTS,		   /* 206: one range, or multipart */
};

/*
 * What the exchange's request gets for file (its size and validators): with
 * SERVE_PARTS, the ranges in parts[0..*count), which has room for
 * exchange_config(exchange)->max_ranges. The body's source does not matter
 * here, so a file on disk and one in GridFS answer alike.
 */
enum serve_answer serve_decide(struct exchange *exchange, const struct response_file *file,
			       struct byte_range *parts, size_t *count);

/* Responds to the exchange's request with the file (or a 304/412/416 about it). */
void serve_file(struct exchange *exchange, const struct response_file *file);

#endif
