/*
 * answer: the exit of every answer (CORS fields, reason phrase), the short
 * text answers, and the one table of what a database job's failure means.
 * No header is formatted here: each is a field of the head, so the one
 * bounded formatter (response_head.c) decides whether the whole head fits.
 */
#include "respond/answer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "http/cors.h"

/* The CORS fields of an answer of this kind, when they apply, and the reason phrase. */
static void finish_head(const struct request *request, struct response_head *head,
			enum cors_answer kind)
{
	if (request->cors) {
		const struct config *config = request->config;
		struct response_field fields[CORS_FIELDS_MAX];
		size_t count = cors_fields(config->cors_origins, config->cors_origin_count,
					   request->origin, kind, fields);
		for (size_t i = 0; i < count; i++) {
			if (response_head_add(head, fields[i].name, fields[i].value) < 0)
				log_error("response head has no room for %s", fields[i].name);
		}
	}
	head->reason = response_reason(head->status);
}

void answer_send(struct exchange *exchange, const struct request *request,
		 struct response_head *head, uint64_t body_length, exchange_fill_cb fill,
		 const void *context)
{
	if (!exchange_can_respond(exchange))
		return; /* the request's fields may be gone with the client */
	finish_head(request, head, CORS_ACTUAL);
	exchange_send(exchange, head, body_length, fill, context);
}

int answer_stream_start(struct exchange *exchange, const struct request *request,
			struct response_head *head, uint64_t body_length)
{
	if (!exchange_can_respond(exchange))
		return -1;
	finish_head(request, head, CORS_ACTUAL);
	return exchange_stream_start(exchange, head, body_length);
}

struct text_body {
	const char *text;
	size_t length;
};

/* A failed add would leave the body short of its Content-Length: never send that. */
static void fill_text(struct exchange_body *output, const void *context)
{
	const struct text_body *body = context;
	if (exchange_body_add(output, body->text, body->length) < 0) {
		log_error("cannot queue a response body: aborting");
		log_flush(ABORT_LOG_WAIT_MS);
		abort();
	}
}

/* A short text/plain head for body; the caller may add fields before sending. */
static struct response_head text_head(int status, const struct text_body *text)
{
	return (struct response_head){
		.status = status,
		.content_type = "text/plain; charset=utf-8",
		.has_length = 1,
		.content_length = text->length,
	};
}

void answer_body(struct exchange *exchange, const struct request *request, int status,
		 const char *content_type, const char *body, size_t length)
{
	struct text_body text = {body, length};
	struct response_head head = text_head(status, &text);
	head.content_type = content_type;
	answer_send(exchange, request, &head, text.length, fill_text, &text);
}

void answer_text(struct exchange *exchange, const struct request *request, int status,
		 const char *body)
{
	answer_body(exchange, request, status, "text/plain; charset=utf-8", body, strlen(body));
}

/*
 * An error under this Cache-Control (NULL: none), with one more field when
 * name is not NULL, and why in its line when why is not NULL.
 */
static void error_answer(struct exchange *exchange, const struct request *request, int status,
			 const char *cache_control, const char *name, const char *value,
			 const char *why)
{
	char body[RESPONSE_ERROR_BODY_SIZE];
	struct text_body text = {body, response_error_body(body, status, why)};
	struct response_head head = text_head(status, &text);
	if (cache_control != NULL)
		response_head_add(&head, "Cache-Control", cache_control);
	if (name != NULL)
		response_head_add(&head, name, value);
	answer_send(exchange, request, &head, text.length, fill_text, &text);
}

void answer_error_with(struct exchange *exchange, const struct request *request, int status,
		       const char *name, const char *value)
{
	error_answer(exchange, request, status, request->config->error_cache_control, name, value,
		     NULL);
}

void answer_bad_request(struct exchange *exchange, const struct request *request,
			const char *why)
{
	error_answer(exchange, request, 400, request->config->error_cache_control, NULL, NULL, why);
}

void answer_forbidden(struct exchange *exchange, const struct request *request)
{
	/* Whatever --error-cache-control says: a cache must not answer the next token with it. */
	error_answer(exchange, request, 403, "no-store", NULL, NULL, NULL);
}

void answer_error(struct exchange *exchange, const struct request *request, int status)
{
	if (status == 405)
		answer_error_with(exchange, request, status, "Allow",
				  request->cors ? CORS_ALLOW_METHODS : ROUTE_ALLOWED_METHODS);
	else if (status == 503)
		answer_error_with(exchange, request, status, "Retry-After",
				  ANSWER_RETRY_AFTER_SECONDS);
	else if (status == 429)
		answer_error_with(exchange, request, status, "Retry-After",
				  ANSWER_STREAMS_RETRY_AFTER_SECONDS);
	else
		answer_error_with(exchange, request, status, NULL, NULL);
}

void answer_options(struct exchange *exchange, const struct request *request)
{
	if (!exchange_can_respond(exchange))
		return;
	/* No body, and so no Content-Length (RFC 9110: a 204 has none). */
	struct response_head head = {.status = 204};
	response_head_add(&head, "Allow", CORS_ALLOW_METHODS);
	finish_head(request, &head, request_is_preflight(request) ? CORS_PREFLIGHT : CORS_ACTUAL);
	exchange_send(exchange, &head, 0, NULL, NULL);
}

/* What each failure of a database job is answered with, and how loudly it is logged. */
static const struct {
	int status;
	enum log_level level;
} failures[] = {
	[LOOKUP_NOT_FOUND] = {404, LOG_LEVEL_DEBUG},
	[LOOKUP_NO_PATH] = {404, LOG_LEVEL_WARN},
	[LOOKUP_BAD_DATA] = {500, LOG_LEVEL_ERROR},
	[LOOKUP_UNAVAILABLE] = {503, LOG_LEVEL_WARN},
	[LOOKUP_FAILED] = {500, LOG_LEVEL_ERROR},
};

static int is_failure(enum lookup_status status)
{
	return (size_t)status < sizeof(failures) / sizeof(failures[0]) &&
	       failures[status].status != 0;
}

int answer_status_of_lookup(enum lookup_status status)
{
	/* A result (FOUND, GRIDFS) is no failure: answering one as a failure is a bug, so 500. */
	return is_failure(status) ? failures[status].status : 500;
}

void answer_lookup_failure(struct exchange *exchange, const struct request *request,
			   const char *what, enum lookup_status status, const char *detail)
{
	if (is_failure(status))
		log_msg(failures[status].level, "%s: %s%s%s", what, lookup_status_describe(status),
			detail[0] ? ": " : "", detail);
	else
		log_error("%s: %s answered as a failure", what, lookup_status_describe(status));
	answer_error(exchange, request, answer_status_of_lookup(status));
}

void answer_lookup_timeout(struct exchange *exchange, const struct request *request,
			   const char *what)
{
	log_warn("%s: database did not answer within %u ms", what,
		 request->config->lookup_timeout_ms);
	answer_error(exchange, request, 503);
}
