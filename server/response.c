/*
 * response: writes answers on evhttp's connections. evhttp parses requests
 * and owns each connection's life (keep-alive, pipelining, timeouts,
 * closing); musicd writes the response head itself (head.c), puts file parts
 * as segments straight into the connection's socket-draining output buffer
 * so they go out by sendfile, then hands the request back to evhttp with
 * evhttp_send_reply_end, exactly as after evhttp_send_reply_start.
 */
#include "response.h"

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "head.h"
#include "log.h"
#include "multipart.h"
#include "route.h"
#include "worker.h"

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
 * Writes what is queued straight to the socket, instead of waiting for the
 * loop to report the socket writable: the head by writev, file parts by
 * sendfile, as far as the socket takes them. If everything went out, the
 * bufferevent's write callback runs now, so evhttp completes the request (and
 * re-arms reading) in this same loop iteration: one wake-up per request, as
 * nginx. Whatever the socket did not take is left to the bufferevent, with
 * reading on too, as evhttp does while writing, to notice a client leaving.
 * The exchange's request may be complete (and freed) when this returns.
 */
static void flush_to_socket(struct bufferevent *bev)
{
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
	else
		bufferevent_enable(bev, EV_READ | EV_WRITE);
}

/*
 * What the Connection header must say, decided as evhttp decides whether to
 * keep the connection after this response (evhttp_send_done), so the two
 * always agree.
 */
static enum head_connection connection_header(const struct exchange *exchange)
{
	struct evhttp_request *req = exchange->req;
	struct evkeyvalq *input = evhttp_request_get_input_headers(req);
	const char *connection = evhttp_find_header(input, "Connection");
	int asked_close, asked_keep_alive = connection && evutil_ascii_strcasecmp(connection,
									       "keep-alive") == 0;
	if (req->flags & EVHTTP_PROXY_REQUEST) {
		const char *proxy = evhttp_find_header(input, "Proxy-Connection");
		asked_close = proxy == NULL || evutil_ascii_strcasecmp(proxy, "keep-alive") != 0;
	} else {
		asked_close = connection && evutil_ascii_strcasecmp(connection, "close") == 0;
	}
	if (exchange->close_after || (asked_close && req->type != EVHTTP_REQ_CONNECT))
		return HEAD_CONNECTION_CLOSE;
	if (req->major == 1 && req->minor == 0)
		return asked_keep_alive ? HEAD_CONNECTION_KEEP_ALIVE : HEAD_CONNECTION_NONE;
	return HEAD_CONNECTION_NONE;
}

/*
 * Sends head, then (unless HEAD) the body fill adds: body_length bytes of
 * text and file segments. Adding a segment cannot fail for a validated range
 * except on allocation failure, and a failed add would drop the caller's
 * reference to a possibly shared segment (DESIGN.md): so that aborts.
 */
static void send_reply(struct exchange *exchange, struct head *head, uint64_t body_length,
		       void (*fill)(struct evbuffer *output, const void *context),
		       const void *context)
{
	struct evhttp_request *req = exchange->req;
	struct bufferevent *bev = evhttp_connection_get_bufferevent(exchange->connection);
	struct evbuffer *output = bufferevent_get_output(bev);
	char text[HEAD_MAX];

	head->http_minor = req->minor;
	head->reason = response_reason(head->status);
	head->date = worker_date(exchange->worker);
	head->connection = connection_header(exchange);
	size_t length = head_format(text, sizeof(text), head);
	if (length == 0 || evbuffer_add(output, text, length) < 0) {
		log_error("cannot queue a %d response head; closing the connection", head->status);
		evhttp_connection_free(exchange->connection);
		return;
	}
	int with_body = fill != NULL && body_length > 0 && !exchange_is_head(exchange);
	exchange_responding(exchange, head->status, with_body ? body_length : 0);
	if (with_body) {
		exchange_body_started(exchange);
		fill(output, context);
	}

	/* As evhttp_write_buffer does: while writing, reading only watches for the client leaving. */
	bufferevent_data_cb write_done;
	bufferevent_event_cb on_event;
	void *connection;
	bufferevent_getcb(bev, NULL, &write_done, &on_event, &connection);
	bufferevent_setcb(bev, NULL, write_done, on_event, connection);
	evhttp_send_reply_end(req);
	flush_to_socket(bev);
}

struct text_body {
	const char *text;
	size_t length;
};

static void fill_text(struct evbuffer *output, const void *context)
{
	const struct text_body *body = context;
	if (evbuffer_add(output, body->text, body->length) < 0) {
		log_error("cannot queue a response body: aborting");
		abort();
	}
}

static void send_text(struct exchange *exchange, int status, const char *body,
		      const char *extra_lines)
{
	struct text_body text = {body, strlen(body)};
	struct head head = {
		.status = status,
		.content_type = "text/plain; charset=utf-8",
		.has_length = 1,
		.content_length = text.length,
		.extra_lines = extra_lines,
	};
	send_reply(exchange, &head, text.length, fill_text, &text);
}

void response_send_text(struct exchange *exchange, int status, const char *body)
{
	send_text(exchange, status, body, NULL);
}

/* An error answer, with these lines besides Cache-Control. */
static void send_error_with(struct exchange *exchange, int status, const char *lines)
{
	const char *cache_control = exchange->worker->service->config->error_cache_control;
	char extra[512], body[64];
	snprintf(extra, sizeof(extra), "%s%s%s%s", cache_control ? "Cache-Control: " : "",
		 cache_control ? cache_control : "", cache_control ? "\r\n" : "", lines);
	snprintf(body, sizeof(body), "%d %s\n", status, response_reason(status));
	send_text(exchange, status, body, extra);
}

void response_send_error(struct exchange *exchange, int status)
{
	const char *lines = "";
	if (status == 405)
		lines = "Allow: " ROUTE_ALLOWED_METHODS "\r\n";
	else if (status == 503)
		lines = "Retry-After: " RESPONSE_RETRY_AFTER_SECONDS "\r\n";
	send_error_with(exchange, status, lines);
}

/* Queues [first, last] of the file (see send_reply for why failure aborts). */
static void add_part(struct evbuffer *output, const struct response_file *file,
		     const struct byte_range *part)
{
	if (evbuffer_add_file_segment(output, file->segment, (ev_off_t)part->first,
				      (ev_off_t)(part->last - part->first + 1)) < 0) {
		log_error("cannot queue a file segment: aborting");
		abort();
	}
}

struct single_part {
	const struct response_file *file;
	struct byte_range range;
};

static void fill_single_part(struct evbuffer *output, const void *context)
{
	const struct single_part *single = context;
	add_part(output, single->file, &single->range);
}

void response_send_file(struct exchange *exchange, const struct response_file *file)
{
	struct head head = {
		.status = 200,
		.content_type = file->content_type,
		.has_length = 1,
		.content_length = file->size,
		.file_lines = file->file_lines,
		.accept_ranges = 1,
	};
	struct single_part whole = {file, {0, file->size - 1}};
	send_reply(exchange, &head, file->size, fill_single_part, &whole);
}

void response_send_range(struct exchange *exchange, const struct response_file *file,
			 const struct byte_range *range)
{
	char content_range[80];
	uint64_t length = range->last - range->first + 1;
	snprintf(content_range, sizeof(content_range), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64,
		 range->first, range->last, file->size);
	struct head head = {
		.status = 206,
		.content_type = file->content_type,
		.has_length = 1,
		.content_length = length,
		.content_range = content_range,
		.file_lines = file->file_lines,
		.accept_ranges = 1,
	};
	struct single_part single = {file, *range};
	send_reply(exchange, &head, length, fill_single_part, &single);
}

struct multipart_body {
	const struct response_file *file;
	const struct byte_range *parts;
	size_t count;
	char boundary[MULTIPART_BOUNDARY_MAX];
};

static void fill_multipart(struct evbuffer *output, const void *context)
{
	const struct multipart_body *multipart = context;
	char text[MULTIPART_HEADER_MAX];
	for (size_t i = 0; i < multipart->count; i++) {
		size_t length = multipart_part_header(text, sizeof(text), multipart->boundary,
						      multipart->file->content_type,
						      &multipart->parts[i], multipart->file->size);
		fill_text(output, &(struct text_body){text, length});
		add_part(output, multipart->file, &multipart->parts[i]);
	}
	size_t length = multipart_closing(text, sizeof(text), multipart->boundary);
	fill_text(output, &(struct text_body){text, length});
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
	struct head head = {
		.status = 206,
		.content_type = content_type,
		.has_length = 1,
		.content_length = length,
		.file_lines = file->file_lines,
		.accept_ranges = 1,
	};
	send_reply(exchange, &head, length, fill_multipart, &multipart);
}

void response_send_unsatisfiable(struct exchange *exchange, const struct response_file *file)
{
	char content_range[64];
	snprintf(content_range, sizeof(content_range), "Content-Range: bytes */%" PRIu64 "\r\n",
		 file->size);
	send_error_with(exchange, 416, content_range);
}

void response_send_not_modified(struct exchange *exchange, const struct response_file *file)
{
	/* The validators and Cache-Control again; no body, and so no Content-Length. */
	struct head head = {.status = 304, .file_lines = file->file_lines};
	send_reply(exchange, &head, 0, NULL, NULL);
}

void response_send_offload(struct exchange *exchange, const struct response_file *file,
			   const char *header, const char *value)
{
	char offload[HEAD_MAX / 2];
	int written = snprintf(offload, sizeof(offload), "%s%s%s%s: %s\r\n",
			       file->cache_control ? "Cache-Control: " : "",
			       file->cache_control ? file->cache_control : "",
			       file->cache_control ? "\r\n" : "", header, value);
	if (written < 0 || (size_t)written >= sizeof(offload)) {
		log_error("%s header too long for %s", header, file->resolved_path);
		response_send_error(exchange, 500);
		return;
	}
	/* Headers only: the front server replaces the (empty) body with the file. */
	struct head head = {
		.status = 200,
		.content_type = file->content_type,
		.has_length = 1,
		.content_length = 0,
		.extra_lines = offload,
	};
	send_reply(exchange, &head, 0, NULL, NULL);
}
