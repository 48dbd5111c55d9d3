/*
 * response: every answer musicd gives, as a head (head.c's fields) and a
 * body filler; the exchange writes both. No header is formatted here: each
 * is a field of the head, so one bounded formatter decides whether the whole
 * head fits.
 */
#include "respond/response.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/cors.h"
#include "http/disposition.h"
#include "http/head.h"
#include "base/log.h"
#include "http/multipart.h"
#include "http/route.h"

const char *response_reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 204:
		return "No Content";
	case 206:
		return "Partial Content";
	case 304:
		return "Not Modified";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 408:
		return "Request Timeout";
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
 * Hands head and body to the exchange. Adding a segment cannot fail for a
 * validated range except on allocation failure, and a failed add would drop
 * the caller's reference to a possibly shared segment (DESIGN.md): so that
 * aborts (add_part, fill_text).
 */
static void send_answer(struct exchange *exchange, struct head *head, enum cors_answer kind,
			uint64_t body_length, exchange_fill_cb fill, const void *context)
{
	if (response_cors_applies(exchange)) {
		const struct config *config = exchange_config(exchange);
		struct head_field fields[CORS_FIELDS_MAX];
		size_t count = cors_fields(config->cors_origins, config->cors_origin_count,
					   exchange_header(exchange, "Origin"), kind, fields);
		for (size_t i = 0; i < count; i++) {
			if (head_add_field(head, fields[i].name, fields[i].value) < 0)
				log_error("response head has no room for %s", fields[i].name);
		}
	}
	head->reason = response_reason(head->status);
	exchange_send(exchange, head, body_length, fill, context);
}

/* Every answer but a preflight: its CORS fields, when they apply, are those of an actual one. */
static void send_reply(struct exchange *exchange, struct head *head, uint64_t body_length,
		       exchange_fill_cb fill, const void *context)
{
	send_answer(exchange, head, CORS_ACTUAL, body_length, fill, context);
}

int response_cors_applies(const struct exchange *exchange)
{
	const struct config *config = exchange_config(exchange);
	if (cors_mode(config->cors_origins, config->cors_origin_count) == CORS_OFF)
		return 0;
	enum route_kind kind = route_parse(exchange_target(exchange)).kind;
	return kind == ROUTE_TRACK || kind == ROUTE_BAD_ID;
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

/* A short text/plain head for body; the caller may add fields before sending. */
static struct head text_head(int status, const struct text_body *text)
{
	return (struct head){
		.status = status,
		.content_type = "text/plain; charset=utf-8",
		.has_length = 1,
		.content_length = text->length,
	};
}

void response_send_text(struct exchange *exchange, int status, const char *body)
{
	struct text_body text = {body, strlen(body)};
	struct head head = text_head(status, &text);
	send_reply(exchange, &head, text.length, fill_text, &text);
}

/* An error answer: "404 Not Found\n", the error Cache-Control, and one more field if any. */
static void send_error_with(struct exchange *exchange, int status, const char *name,
			    const char *value)
{
	const char *cache_control = exchange_config(exchange)->error_cache_control;
	char body[64];
	snprintf(body, sizeof(body), "%d %s\n", status, response_reason(status));
	struct text_body text = {body, strlen(body)};
	struct head head = text_head(status, &text);
	if (cache_control != NULL)
		head_add_field(&head, "Cache-Control", cache_control);
	if (name != NULL)
		head_add_field(&head, name, value);
	send_reply(exchange, &head, text.length, fill_text, &text);
}

void response_send_error(struct exchange *exchange, int status)
{
	if (status == 405)
		send_error_with(exchange, status, "Allow",
				response_cors_applies(exchange) ? CORS_ALLOW_METHODS
								: ROUTE_ALLOWED_METHODS);
	else if (status == 503)
		send_error_with(exchange, status, "Retry-After", RESPONSE_RETRY_AFTER_SECONDS);
	else
		send_error_with(exchange, status, NULL, NULL);
}

void response_send_options(struct exchange *exchange, int preflight)
{
	/* No body, and so no Content-Length (RFC 9110: a 204 has none). */
	struct head head = {.status = 204};
	head_add_field(&head, "Allow", CORS_ALLOW_METHODS);
	send_answer(exchange, &head, preflight ? CORS_PREFLIGHT : CORS_ACTUAL, 0, NULL, NULL);
}

/*
 * Content-Disposition: attachment when the target asks for ?download; the
 * value is written into value, which must outlive the head.
 */
static void add_disposition(struct exchange *exchange, struct head *head,
			    const struct response_file *file, char value[DISPOSITION_VALUE_MAX])
{
	const char *target = exchange_target(exchange);
	if (!disposition_requested(target))
		return;
	struct route route = route_parse(target);
	if (route.kind != ROUTE_TRACK)
		return;
	if (disposition_value(target, route.mid, file->resolved_path, value,
			      DISPOSITION_VALUE_MAX) == 0 ||
	    head_add_field(head, "Content-Disposition", value) < 0)
		log_error("mid=%s: cannot add Content-Disposition", route.mid);
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

static struct head whole_file_head(const struct response_file *file)
{
	return (struct head){
		.status = 200,
		.content_type = file->content_type,
		.has_length = 1,
		.content_length = file->size,
		.file_lines = file->file_lines,
		.accept_ranges = 1,
	};
}

void response_send_file(struct exchange *exchange, const struct response_file *file)
{
	struct head head = whole_file_head(file);
	char disposition[DISPOSITION_VALUE_MAX];
	add_disposition(exchange, &head, file, disposition);
	struct single_part whole = {file, {0, file->size - 1}};
	send_reply(exchange, &head, file->size, fill_single_part, &whole);
}

#define CONTENT_RANGE_MAX 80

/* A 206 of one range; content_range holds its Content-Range value. */
static struct head range_head(const struct response_file *file, const struct byte_range *range,
			      char content_range[CONTENT_RANGE_MAX])
{
	snprintf(content_range, CONTENT_RANGE_MAX, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64,
		 range->first, range->last, file->size);
	return (struct head){
		.status = 206,
		.content_type = file->content_type,
		.has_length = 1,
		.content_length = range->last - range->first + 1,
		.content_range = content_range,
		.file_lines = file->file_lines,
		.accept_ranges = 1,
	};
}

void response_send_range(struct exchange *exchange, const struct response_file *file,
			 const struct byte_range *range)
{
	char content_range[CONTENT_RANGE_MAX];
	struct head head = range_head(file, range, content_range);
	char disposition[DISPOSITION_VALUE_MAX];
	add_disposition(exchange, &head, file, disposition);
	struct single_part single = {file, *range};
	send_reply(exchange, &head, head.content_length, fill_single_part, &single);
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

#define MULTIPART_CONTENT_TYPE_MAX (MULTIPART_BOUNDARY_MAX + 64)

/* A multipart 206 with a new boundary (in boundary); content_type holds its Content-Type. */
static struct head multipart_head(const struct response_file *file, const struct byte_range *parts,
				  size_t count, char boundary[MULTIPART_BOUNDARY_MAX],
				  char content_type[MULTIPART_CONTENT_TYPE_MAX])
{
	make_boundary(boundary);
	multipart_content_type(content_type, MULTIPART_CONTENT_TYPE_MAX, boundary);
	return (struct head){
		.status = 206,
		.content_type = content_type,
		.has_length = 1,
		.content_length = multipart_body_length(boundary, file->content_type, parts, count,
							file->size),
		.file_lines = file->file_lines,
		.accept_ranges = 1,
	};
}

void response_send_multipart(struct exchange *exchange, const struct response_file *file,
			     const struct byte_range *parts, size_t count)
{
	struct multipart_body multipart = {file, parts, count, {0}};
	char content_type[MULTIPART_CONTENT_TYPE_MAX];
	struct head head = multipart_head(file, parts, count, multipart.boundary, content_type);
	char disposition[DISPOSITION_VALUE_MAX];
	add_disposition(exchange, &head, file, disposition);
	send_reply(exchange, &head, head.content_length, fill_multipart, &multipart);
}

int response_stream_file(struct exchange *exchange, const struct response_file *file)
{
	struct head head = whole_file_head(file);
	char disposition[DISPOSITION_VALUE_MAX];
	add_disposition(exchange, &head, file, disposition);
	head.reason = response_reason(head.status);
	return exchange_stream_start(exchange, &head, file->size);
}

int response_stream_range(struct exchange *exchange, const struct response_file *file,
			  const struct byte_range *range)
{
	char content_range[CONTENT_RANGE_MAX];
	struct head head = range_head(file, range, content_range);
	char disposition[DISPOSITION_VALUE_MAX];
	add_disposition(exchange, &head, file, disposition);
	head.reason = response_reason(head.status);
	return exchange_stream_start(exchange, &head, head.content_length);
}

int response_stream_multipart(struct exchange *exchange, const struct response_file *file,
			      const struct byte_range *parts, size_t count,
			      char boundary[MULTIPART_BOUNDARY_MAX])
{
	char content_type[MULTIPART_CONTENT_TYPE_MAX];
	struct head head = multipart_head(file, parts, count, boundary, content_type);
	char disposition[DISPOSITION_VALUE_MAX];
	add_disposition(exchange, &head, file, disposition);
	head.reason = response_reason(head.status);
	return exchange_stream_start(exchange, &head, head.content_length);
}

void response_send_unsatisfiable(struct exchange *exchange, const struct response_file *file)
{
	char content_range[64];
	snprintf(content_range, sizeof(content_range), "bytes */%" PRIu64, file->size);
	send_error_with(exchange, 416, "Content-Range", content_range);
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
	/* Headers only: the front server replaces the (empty) body with the file. */
	struct head head = {
		.status = 200,
		.content_type = file->content_type,
		.has_length = 1,
		.content_length = 0,
	};
	if (file->cache_control != NULL)
		head_add_field(&head, "Cache-Control", file->cache_control);
	head_add_field(&head, header, value);
	char disposition[DISPOSITION_VALUE_MAX];
	add_disposition(exchange, &head, file, disposition);
	send_reply(exchange, &head, 0, NULL, NULL);
}
