/*
 * serve: the decision chain for a file response. The decisions themselves
 * are pure functions (cond_evaluate, cond_if_range_allows, range_parse);
 * this file only reads the request's headers and picks the response.
 */
#include "respond/serve.h"

#include "http/cond.h"

static const char *request_header(struct exchange *exchange, const char *name)
{
	return exchange_header(exchange, name);
}

static enum serve_answer decide_ranges(struct exchange *exchange, const struct response_file *file,
				       const char *range_header, struct byte_range *parts,
				       size_t *count)
{
	unsigned max_parts = exchange_config(exchange)->max_ranges;
	switch (range_parse(range_header, file->size, max_parts, parts, count)) {
	case RANGE_WHOLE:
		return SERVE_WHOLE;
	case RANGE_UNSATISFIABLE:
		return SERVE_UNSATISFIABLE;
	case RANGE_PARTS:
		break;
	}
	return SERVE_PARTS;
}

enum serve_answer serve_decide(struct exchange *exchange, const struct response_file *file,
			       struct byte_range *parts, size_t *count)
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
		return SERVE_NOT_MODIFIED;
	case COND_PRECONDITION_FAILED:
		return SERVE_PRECONDITION_FAILED;
	case COND_PROCEED:
		break;
	}

	const char *range_header = request_header(exchange, "Range");
	if (range_header != NULL &&
	    cond_if_range_allows(request_header(exchange, "If-Range"), &validators))
		return decide_ranges(exchange, file, range_header, parts, count);
	return SERVE_WHOLE;
}

void serve_file(struct exchange *exchange, const struct response_file *file)
{
	struct byte_range parts[RANGE_MAX_PARTS_LIMIT];
	size_t count = 0;
	switch (serve_decide(exchange, file, parts, &count)) {
	case SERVE_NOT_MODIFIED:
		response_send_not_modified(exchange, file);
		return;
	case SERVE_PRECONDITION_FAILED:
		response_send_error(exchange, 412);
		return;
	case SERVE_UNSATISFIABLE:
		response_send_unsatisfiable(exchange, file);
		return;
	case SERVE_WHOLE:
		response_send_file(exchange, file);
		return;
	case SERVE_PARTS:
		if (count == 1)
			response_send_range(exchange, file, &parts[0]);
		else
			response_send_multipart(exchange, file, parts, count);
		return;
	}
}
