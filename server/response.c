/*
 * response: header assembly and the sendfile recipe for evhttp (see
 * DESIGN.md): Content-Length first (or evhttp goes chunked and raw file bytes
 * break the framing), reply_start, then a fresh buffer flagged
 * EVBUFFER_FLAG_DRAINS_TO_FD holding the file segment, reply_chunk, reply_end.
 */
#include "response.h"

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "multipart.h"
#include "route.h"
#include "worker.h"

#define SERVER_NAME "musicd"
/* Headers, then each part of a multipart body, before leaving it to the loop. */
#define FLUSH_WRITES_MAX 8

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

/*
 * Writes what evhttp just queued straight to the socket, instead of waiting
 * for the loop to report the socket writable: headers by writev, file parts
 * by sendfile, as far as the socket takes them. If everything went out, the
 * bufferevent's write callback is run now, so evhttp completes the request
 * (and re-arms reading) in this same loop iteration: one wake-up and no
 * epoll_ctl churn per request, as nginx does. Whatever the socket did not
 * take is left to the bufferevent, as usual. The exchange's request may be
 * complete (and freed) when this returns.
 */
static void flush_to_socket(struct exchange *exchange)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(exchange->connection);
	struct evbuffer *output = bufferevent_get_output(bev);
	evutil_socket_t fd = bufferevent_getfd(bev);

	/* The bufferevent keeps its output's start frozen; it alone drains it, except here. */
	evbuffer_unfreeze(output, 1);
	for (int attempt = 0; attempt < FLUSH_WRITES_MAX && evbuffer_get_length(output) > 0;
	     attempt++) {
		if (evbuffer_write(output, fd) <= 0)
			break; /* the socket is full, or failed: the bufferevent takes over */
	}
	evbuffer_freeze(output, 1);
	if (evbuffer_get_length(output) == 0)
		bufferevent_trigger(bev, EV_WRITE, 0);
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
		flush_to_socket(exchange);
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
	flush_to_socket(exchange);
}

void response_send_error(struct exchange *exchange, int status)
{
	const char *cache_control = exchange->worker->service->config->error_cache_control;
	char body[64];
	if (cache_control != NULL)
		add_header(exchange->req, "Cache-Control", cache_control);
	snprintf(body, sizeof(body), "%d %s\n", status, response_reason(status));
	if (status == 405)
		add_header(exchange->req, "Allow", ROUTE_ALLOWED_METHODS);
	if (status == 503)
		add_header(exchange->req, "Retry-After", RESPONSE_RETRY_AFTER_SECONDS);
	response_send_text(exchange, status, body);
}

/* The validators and caching headers every answer about the file carries. */
static void add_validator_headers(struct evhttp_request *req, const struct response_file *file)
{
	add_header(req, "Server", SERVER_NAME);
	add_header(req, "Last-Modified", file->last_modified);
	add_header(req, "ETag", file->etag);
	if (file->cache_control != NULL)
		add_header(req, "Cache-Control", file->cache_control);
}

static void add_file_headers(struct evhttp_request *req, const struct response_file *file,
			     const char *content_type, uint64_t length)
{
	add_validator_headers(req, file);
	add_header(req, "Content-Type", content_type);
	add_header(req, "Accept-Ranges", "bytes");
	add_length_header(req, length);
}

/* Headers only: HEAD, or an empty body. */
static void send_headers_only(struct exchange *exchange, int status)
{
	exchange_responding(exchange, status, 0);
	evhttp_send_reply(exchange->req, status, response_reason(status), NULL);
	flush_to_socket(exchange);
}

/* Queues [first, last] of the file; see stream_parts for why failure aborts. */
static void add_part(struct evbuffer *body, const struct response_file *file,
		     const struct byte_range *part)
{
	if (evbuffer_add_file_segment(body, file->segment, (ev_off_t)part->first,
				      (ev_off_t)(part->last - part->first + 1)) < 0) {
		log_error("cannot queue a file segment: aborting");
		abort();
	}
}

/*
 * Sends a body assembled by fill (file segments and framing text) after the
 * headers already set. The buffer is flagged EVBUFFER_FLAG_DRAINS_TO_FD so the
 * file parts go out by sendfile. Adding a segment cannot fail for a validated
 * range except on allocation failure, and a failed add would drop the caller's
 * reference to a possibly shared segment (DESIGN.md): so that aborts.
 */
static void stream_body(struct exchange *exchange, int status, uint64_t length,
			void (*fill)(struct evbuffer *body, const void *context), const void *context)
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
	fill(body, context);
	evhttp_send_reply_chunk(req, body);
	evbuffer_free(body);
	evhttp_send_reply_end(req);
	flush_to_socket(exchange);
}

struct single_part {
	const struct response_file *file;
	const struct byte_range *range;
};

static void fill_single_part(struct evbuffer *body, const void *context)
{
	const struct single_part *single = context;
	add_part(body, single->file, single->range);
}

void response_send_file(struct exchange *exchange, const struct response_file *file)
{
	add_file_headers(exchange->req, file, file->content_type, file->size);
	if (exchange_is_head(exchange) || file->size == 0) {
		send_headers_only(exchange, 200);
		return;
	}
	struct byte_range whole = {0, file->size - 1};
	struct single_part single = {file, &whole};
	stream_body(exchange, 200, file->size, fill_single_part, &single);
}

void response_send_range(struct exchange *exchange, const struct response_file *file,
			 const struct byte_range *range)
{
	char content_range[80];
	uint64_t length = range->last - range->first + 1;
	snprintf(content_range, sizeof(content_range), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64,
		 range->first, range->last, file->size);
	add_file_headers(exchange->req, file, file->content_type, length);
	add_header(exchange->req, "Content-Range", content_range);
	if (exchange_is_head(exchange)) {
		send_headers_only(exchange, 206);
		return;
	}
	struct single_part single = {file, range};
	stream_body(exchange, 206, length, fill_single_part, &single);
}

struct multipart_body {
	const struct response_file *file;
	const struct byte_range *parts;
	size_t count;
	char boundary[MULTIPART_BOUNDARY_MAX];
};

static void fill_multipart(struct evbuffer *body, const void *context)
{
	const struct multipart_body *multipart = context;
	char text[MULTIPART_HEADER_MAX];
	for (size_t i = 0; i < multipart->count; i++) {
		size_t length = multipart_part_header(text, sizeof(text), multipart->boundary,
						      multipart->file->content_type,
						      &multipart->parts[i], multipart->file->size);
		evbuffer_add(body, text, length);
		add_part(body, multipart->file, &multipart->parts[i]);
	}
	evbuffer_add(body, text, multipart_closing(text, sizeof(text), multipart->boundary));
}

/* A boundary unique enough that it cannot occur in the parts by accident. */
static void make_boundary(char out[MULTIPART_BOUNDARY_MAX])
{
	static _Atomic uint64_t counter;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t mixed = ((uint64_t)now.tv_sec << 30) ^ (uint64_t)now.tv_nsec;
	snprintf(out, MULTIPART_BOUNDARY_MAX, "%016" PRIx64 "%08" PRIx64, mixed,
		 (uint64_t)++counter & 0xffffffffu);
}

void response_send_multipart(struct exchange *exchange, const struct response_file *file,
			     const struct byte_range *parts, size_t count)
{
	struct multipart_body multipart = {file, parts, count, {0}};
	char content_type[MULTIPART_BOUNDARY_MAX + 64];
	make_boundary(multipart.boundary);
	multipart_content_type(content_type, sizeof(content_type), multipart.boundary);
	uint64_t length =
		multipart_body_length(multipart.boundary, file->content_type, parts, count, file->size);

	add_file_headers(exchange->req, file, content_type, length);
	if (exchange_is_head(exchange)) {
		send_headers_only(exchange, 206);
		return;
	}
	stream_body(exchange, 206, length, fill_multipart, &multipart);
}

void response_send_unsatisfiable(struct exchange *exchange, const struct response_file *file)
{
	char content_range[40];
	snprintf(content_range, sizeof(content_range), "bytes */%" PRIu64, file->size);
	add_header(exchange->req, "Content-Range", content_range);
	response_send_error(exchange, 416);
}

void response_send_not_modified(struct exchange *exchange, const struct response_file *file)
{
	/* evhttp sends no body and no Content-Length for 304. */
	add_validator_headers(exchange->req, file);
	send_headers_only(exchange, 304);
}

void response_send_offload(struct exchange *exchange, const struct response_file *file,
			   const char *header, const char *value)
{
	struct evhttp_request *req = exchange->req;
	add_header(req, "Server", SERVER_NAME);
	add_header(req, "Content-Type", file->content_type);
	if (file->cache_control != NULL)
		add_header(req, "Cache-Control", file->cache_control);
	add_header(req, header, value);
	add_length_header(req, 0);
	send_headers_only(exchange, 200);
}
