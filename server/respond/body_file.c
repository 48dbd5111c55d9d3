/*
 * body_file: a decided plan's bytes as parts of one file segment. Adding a
 * segment cannot fail for a validated range except on allocation failure,
 * and a failed add drops the caller's reference to a segment the open-file
 * cache shares (libevent 2.1.12, evbuffer_add_file_segment; a paced body's
 * record keeps that contract, exchange.h): so that aborts rather than send
 * a body short of its Content-Length.
 */
#include "respond/body_file.h"

#include <stdlib.h>

#include "base/log.h"
#include "respond/answer.h"

struct file_fill {
	const struct representation *representation;
	const struct file_body *body;
	const struct file_plan *plan;
};

static void add_part(struct exchange_body *output, const struct file_body *body,
		     const struct byte_range *part)
{
	if (exchange_body_add_segment(output, body->segment, body->fd, part->first,
				      part->last - part->first + 1) < 0) {
		log_error("cannot queue a file segment: aborting");
		abort();
	}
}

static void add_text(struct exchange_body *output, const char *text, size_t length)
{
	if (length == 0 || exchange_body_add(output, text, length) < 0) {
		log_error("cannot queue a multipart text: aborting");
		abort();
	}
}

static void fill(struct exchange_body *output, const void *context)
{
	const struct file_fill *file = context;
	const struct file_plan *plan = file->plan;
	if (plan->count == 1) {
		add_part(output, file->body, &plan->parts[0]);
		return;
	}
	char text[MULTIPART_HEADER_MAX];
	for (size_t i = 0; i < plan->count; i++) {
		add_text(output, text,
			 multipart_part_header(text, sizeof(text), plan->boundary,
					       file->representation->content_type, &plan->parts[i],
					       file->representation->size));
		add_part(output, file->body, &plan->parts[i]);
	}
	add_text(output, text, multipart_closing(text, sizeof(text), plan->boundary));
}

void body_file_send(struct exchange *exchange, const struct representation *representation,
		    const struct file_body *body, const struct file_plan *plan)
{
	struct file_head_text text;
	struct response_head head =
		file_plan_head(exchange, representation, body->download_path, plan, &text);
	struct file_fill file = {representation, body, plan};
	answer_send(exchange, &head, head.content_length, fill, &file);
}
