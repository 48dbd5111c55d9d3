/*
 * serve: the decision chain for a file response. The decisions themselves
 * are pure functions (cond_evaluate, cond_if_range_allows, range_parse);
 * this file only reads the request's headers and picks the response.
 */
#include "serve.h"

#include "cond.h"
#include "range.h"

static const char *request_header(struct exchange *exchange, const char *name)
{
	return exchange_header(exchange, name);
}

static void serve_ranges(struct exchange *exchange, const struct response_file *file,
			 const char *range_header)
{
	struct byte_range parts[RANGE_MAX_PARTS_LIMIT];
	size_t count = 0;
	unsigned max_parts = exchange_config(exchange)->max_ranges;

	switch (range_parse(range_header, file->size, max_parts, parts, &count)) {
	case RANGE_WHOLE:
		response_send_file(exchange, file);
		return;
	case RANGE_UNSATISFIABLE:
		response_send_unsatisfiable(exchange, file);
		return;
	case RANGE_PARTS:
		if (count == 1)
			response_send_range(exchange, file, &parts[0]);
		else
			response_send_multipart(exchange, file, parts, count);
		return;
	}
}

void serve_file(struct exchange *exchange, const struct response_file *file)
{
	struct cond_request conditions = {
		.if_match = request_header(exchange, "If-Match"),
		.if_none_match = request_header(exchange, "If-None-Match"),
		.if_modified_since = request_header(exchange, "If-Modified-Since"),
		.if_unmodified_since = request_header(exchange, "If-Unmodified-Since"),
	};
	struct cond_validators validators = {.etag = file->etag, .last_modified = file->mtime};

	switch (cond_evaluate(&conditions, &validators)) {
	case COND_NOT_MODIFIED:
		response_send_not_modified(exchange, file);
		return;
	case COND_PRECONDITION_FAILED:
		response_send_error(exchange, 412);
		return;
	case COND_PROCEED:
		break;
	}

	const char *range_header = request_header(exchange, "Range");
	if (range_header != NULL &&
	    cond_if_range_allows(request_header(exchange, "If-Range"), &validators))
		serve_ranges(exchange, file, range_header);
	else
		response_send_file(exchange, file);
}
