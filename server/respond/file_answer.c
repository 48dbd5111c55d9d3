/*
 * file_answer: the decision chain. The decisions themselves are pure
 * functions (cond_evaluate, cond_if_range_allows, range_parse) of the
 * request's fields (request.h); this file picks the answer, and hands a 200
 * or 206 to the body source's row of the table.
 */
#include "respond/file_answer.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "http/cond.h"
#include "respond/answer.h"
#include "respond/body_file.h"
#include "respond/body_gridfs.h"
#include "respond/client_limits.h"

/* The body sources: how each sends a decided 200 or 206. */
static const struct {
	const char *name;
	void (*send)(struct exchange *exchange, const struct request *request,
		     const struct representation *representation, const struct file_body *body,
		     const struct file_plan *plan);
} sources[BODY_KINDS] = {
	[BODY_FILE] = {"file", body_file_send},
	[BODY_GRIDFS] = {"gridfs", body_gridfs_send},
};

enum file_verdict {
	FILE_NOT_MODIFIED,	  /* 304 */
	FILE_PRECONDITION_FAILED, /* 412 */
	FILE_UNSATISFIABLE,	  /* 416 */
	FILE_WHOLE,		  /* 200 */
	FILE_PARTS,		  /* 206: one range, or multipart */
};

static enum file_verdict decide(const struct request *request,
				const struct representation *representation,
				struct byte_range *parts, size_t *count)
{
	struct cond_validators validators = {.etag = representation->etag,
					     .last_modified = representation->mtime};
	switch (cond_evaluate(&request->conditions, &validators)) {
	case COND_NOT_MODIFIED:
		return FILE_NOT_MODIFIED;
	case COND_PRECONDITION_FAILED:
		return FILE_PRECONDITION_FAILED;
	case COND_PROCEED:
		break;
	}
	if (request->range == NULL || !cond_if_range_allows(request->if_range, &validators))
		return FILE_WHOLE;
	switch (range_parse(request->range, representation->size, request->config->max_ranges,
			    parts, count)) {
	case RANGE_WHOLE:
		return FILE_WHOLE;
	case RANGE_UNSATISFIABLE:
		return FILE_UNSATISFIABLE;
	case RANGE_PARTS:
		break;
	}
	return FILE_PARTS;
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

static void answer_not_modified(struct exchange *exchange, const struct request *request,
				const struct representation *representation)
{
	/* The validators and Cache-Control again; no body, and so no Content-Length. */
	struct response_head head = {.status = 304, .file_lines = representation->file_lines};
	answer_send(exchange, request, &head, 0, NULL, NULL);
}

static void answer_unsatisfiable(struct exchange *exchange, const struct request *request,
				 const struct representation *representation)
{
	char content_range[64];
	snprintf(content_range, sizeof(content_range), "bytes */%" PRIu64, representation->size);
	answer_error_with(exchange, request, 416, "Content-Range", content_range);
}

void file_answer(struct exchange *exchange, const struct request *request,
		 const struct representation *representation, const struct file_body *body)
{
	struct byte_range parts[RANGE_MAX_PARTS_LIMIT];
	struct file_plan plan = {.parts = parts, .count = 0};
	switch (decide(request, representation, parts, &plan.count)) {
	case FILE_NOT_MODIFIED:
		answer_not_modified(exchange, request, representation);
		return;
	case FILE_PRECONDITION_FAILED:
		answer_error(exchange, request, 412);
		return;
	case FILE_UNSATISFIABLE:
		answer_unsatisfiable(exchange, request, representation);
		return;
	case FILE_WHOLE:
		plan.whole = 1;
		plan.count = 1;
		parts[0] = (struct byte_range){0, representation->size ? representation->size - 1 : 0};
		break;
	case FILE_PARTS:
		if (plan.count > 1)
			make_boundary(plan.boundary);
		break;
	}
	if (request->head || representation->size == 0) {
		/* Headers only (or an empty 200): no source has anything to send. */
		struct file_head_text text;
		struct response_head head =
			file_plan_head(request, representation, body->download_path, &plan, &text);
		answer_send(exchange, request, &head, 0, NULL, NULL);
		return;
	}
	/* A body goes out: the client's limits apply (a cap reached is answered 429). */
	if (client_limits_admit(exchange, request) < 0)
		return;
	sources[body->kind].send(exchange, request, representation, body, &plan);
}
