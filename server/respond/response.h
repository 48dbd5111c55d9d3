/*
 * response: composes answers (heads and bodies) and hands them to the
 * exchange, which puts them on the wire. Error answers are short
 * text/plain; file answers are file segments, which the exchange's
 * socket-draining output sends with sendfile(2), never through user space.
 * HEAD gets the same headers and no body. Each function answers only while
 * the exchange can still respond, and does nothing otherwise.
 */
#ifndef MUSICD_RESPONSE_H
#define MUSICD_RESPONSE_H

#include <stdint.h>

#include "wire/exchange.h"
#include "http/multipart.h"
#include "http/range.h"
#include "media/response_file.h"

/* The seconds a 503 asks clients to wait before retrying. */
#define RESPONSE_RETRY_AFTER_SECONDS "5"

/*
 * Sends status with a one-line text/plain body ("404 Not Found"). 405 carries
 * Allow (OPTIONS included where response_cors_applies), 503 carries Retry-After.
 */
void response_send_error(struct exchange *exchange, int status);

/*
 * True when this request's answers carry CORS headers: --cors-origin is on and
 * the target is the track route (a valid :mid or not). Every answer composed
 * here then carries them, errors included; 405 then allows OPTIONS too.
 */
int response_cors_applies(const struct exchange *exchange);

/*
 * 204 to an OPTIONS on the track route with CORS on: Allow, and the preflight's
 * Access-Control-Allow-* fields when preflight (Origin and
 * Access-Control-Request-Method were sent), else an actual answer's.
 */
void response_send_options(struct exchange *exchange, int preflight);

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

/*
 * The same 200, 206 and multipart 206 heads for a body the caller streams
 * (file->segment unused): exchange_stream_start's 0 (send the body with
 * exchange_stream_append), 1 (complete: HEAD) or -1. The multipart body's
 * part texts are multipart.h's, with the boundary written to boundary.
 */
int response_stream_file(struct exchange *exchange, const struct response_file *file);
int response_stream_range(struct exchange *exchange, const struct response_file *file,
			  const struct byte_range *range);
int response_stream_multipart(struct exchange *exchange, const struct response_file *file,
			      const struct byte_range *parts, size_t count,
			      char boundary[MULTIPART_BOUNDARY_MAX]);

/* The reason phrase for a status. */
const char *response_reason(int status);

#endif
