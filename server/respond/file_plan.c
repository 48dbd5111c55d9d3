/*
 * file_plan: the 200 and 206 heads, one builder for every body source.
 */
#include "respond/file_plan.h"

#include <inttypes.h>
#include <stdio.h>

#include "base/log.h"

void file_plan_add_disposition(const struct request *request, struct response_head *head,
			       const char *download_path, char value[DISPOSITION_VALUE_MAX])
{
	const struct route *route = &request->route;
	if (!route->download || route->kind != ROUTE_TRACK)
		return;
	if (disposition_value(route->param, route->param_length, route->mid, download_path, value,
			      DISPOSITION_VALUE_MAX) == 0 ||
	    response_head_add(head, "Content-Disposition", value) < 0)
		log_error("mid=%s: cannot add Content-Disposition", route->mid);
}

uint64_t file_plan_body_length(const struct representation *representation,
			       const struct file_plan *plan)
{
	if (plan->whole)
		return representation->size;
	if (plan->count == 1)
		return plan->parts[0].last - plan->parts[0].first + 1;
	return multipart_body_length(plan->boundary, representation->content_type, plan->parts,
				     plan->count, representation->size);
}

struct response_head file_plan_head(const struct request *request,
				    const struct representation *representation,
				    const char *download_path, const struct file_plan *plan,
				    struct file_head_text *text)
{
	struct response_head head = {
		.status = plan->whole ? 200 : 206,
		.content_type = representation->content_type,
		.has_length = 1,
		.content_length = file_plan_body_length(representation, plan),
		.file_lines = representation->file_lines,
		.accept_ranges = 1,
	};
	if (!plan->whole && plan->count == 1) {
		/* By hand, not snprintf: every range request formats one (vfprintf was in c2's profile). */
		response_content_range(text->content_range, sizeof(text->content_range),
				       plan->parts[0].first, plan->parts[0].last, representation->size);
		head.content_range = text->content_range;
	} else if (!plan->whole) {
		multipart_content_type(text->content_type, sizeof(text->content_type),
				       plan->boundary);
		head.content_type = text->content_type;
	}
	file_plan_add_disposition(request, &head, download_path, text->disposition);
	client_limits_add_fields(request, &head, 0, &text->limits);
	return head;
}
