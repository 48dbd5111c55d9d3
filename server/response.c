/*
 * response: header assembly and the sendfile recipe for evhttp (see
 * DESIGN.md): Content-Length first (or evhttp goes chunked and raw file bytes
 * break the framing), reply_start, then a fresh buffer flagged
 * EVBUFFER_FLAG_DRAINS_TO_FD holding the file segment, reply_chunk, reply_end.
 */
#include "response.h"

#include <event2/http.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "route.h"

#define SERVER_NAME "musicd"

const char *response_reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 206:
		return "Partial Content";
	case 304:
		return "Not Modified";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 412:
		return "Precondition Failed";
	case 416:
		return "Range Not Satisfiable";
	case 500:
		return "Internal Server Error";
	case 503:
		return "Service Unavailable";
	}
	return "Unknown";
}

static void add_header(struct evhttp_request *req, const char *name, const char *value)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), name, value);
}

static void add_length_header(struct evhttp_request *req, uint64_t length)
{
	char text[24];
	snprintf(text, sizeof(text), "%" PRIu64, length);
	add_header(req, "Content-Length", text);
}

void response_send_text(struct exchange *exchange, int status, const char *body)
{
	struct evhttp_request *req = exchange->req;
	size_t length = strlen(body);
	add_header(req, "Server", SERVER_NAME);
	add_header(req, "Content-Type", "text/plain; charset=utf-8");
	add_length_header(req, length);

	if (exchange_is_head(exchange)) {
		exchange_responding(exchange, status, 0);
		evhttp_send_reply(req, status, response_reason(status), NULL);
		return;
	}
	struct evbuffer *buffer = evbuffer_new();
	if (buffer == NULL || evbuffer_add(buffer, body, length) < 0) {
		log_error("out of memory for a %d response; closing the connection", status);
		if (buffer != NULL)
			evbuffer_free(buffer);
		evhttp_connection_free(exchange->connection);
		return;
	}
	exchange_responding(exchange, status, length);
	evhttp_send_reply(req, status, response_reason(status), buffer);
	evbuffer_free(buffer);
}

void response_send_error(struct exchange *exchange, int status)
{
	char body[64];
	snprintf(body, sizeof(body), "%d %s\n", status, response_reason(status));
	if (status == 405)
		add_header(exchange->req, "Allow", ROUTE_ALLOWED_METHODS);
	if (status == 503)
		add_header(exchange->req, "Retry-After", RESPONSE_RETRY_AFTER_SECONDS);
	response_send_text(exchange, status, body);
}

static void add_file_headers(struct evhttp_request *req, const struct response_file *file)
{
	add_header(req, "Server", SERVER_NAME);
	add_header(req, "Content-Type", file->content_type);
	add_header(req, "Accept-Ranges", "bytes");
	add_header(req, "Last-Modified", file->last_modified);
	add_header(req, "ETag", file->etag);
}

/*
 * Streams [offset, offset + length) of the file after headers already set.
 * The segment add cannot fail for a validated range except on allocation
 * failure, and a failed add would drop the caller's reference (DESIGN.md):
 * so the connection is closed rather than risk the segment.
 */
static void stream_body(struct exchange *exchange, int status, const struct response_file *file,
			uint64_t offset, uint64_t length)
{
	struct evhttp_request *req = exchange->req;
	struct evbuffer *body = evbuffer_new();
	if (body == NULL) {
		log_error("out of memory starting a body; closing the connection");
		evhttp_connection_free(exchange->connection);
		return;
	}
	evbuffer_set_flags(body, EVBUFFER_FLAG_DRAINS_TO_FD);
	exchange_responding(exchange, status, length);
	evhttp_send_reply_start(req, status, response_reason(status));
	exchange_body_started(exchange);
	if (evbuffer_add_file_segment(body, file->segment, (ev_off_t)offset, (ev_off_t)length) < 0) {
		log_error("cannot queue a file body: aborting");
		abort();
	}
	evhttp_send_reply_chunk(req, body);
	evbuffer_free(body);
	evhttp_send_reply_end(req);
}

void response_send_file(struct exchange *exchange, const struct response_file *file)
{
	struct evhttp_request *req = exchange->req;
	add_file_headers(req, file);
	add_length_header(req, file->size);
	if (exchange_is_head(exchange) || file->size == 0) {
		exchange_responding(exchange, 200, 0);
		evhttp_send_reply(req, 200, "OK", NULL);
		return;
	}
	stream_body(exchange, 200, file, 0, file->size);
}
