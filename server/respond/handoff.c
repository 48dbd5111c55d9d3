/*
 * handoff: the three strategies. In both offload modes musicd answers 200
 * with headers only: the front server replaces the body with the file and
 * does ranges and conditional requests itself, from its own view of the file.
 */
#include "respond/handoff.h"

#include <limits.h>

#include "base/log.h"
#include "http/offload.h"
#include "respond/answer.h"
#include "respond/client_limits.h"
#include "respond/file_answer.h"
#include "respond/file_plan.h"

#define OFFLOAD_URI_MAX (PATH_MAX * 3 + 256)

static void keep_entry(void *entry)
{
	file_cache_hold(entry);
}

static void let_entry_go(void *entry)
{
	file_cache_drop(entry);
}

static void answer_by_sendfile(struct exchange *exchange, const struct request *request,
			       const struct cached_file *file, const struct media_roots *roots,
			       struct disk_io *io)
{
	(void)roots;
	struct file_body body = {
		.kind = BODY_FILE,
		.download_path = file->resolved_path,
		.segment = file->segment,
		.fd = file->fd,
		.disk = file->disk,
		.io = io,
		.lane = (unsigned)file->root_index,
		.keeper = {keep_entry, let_entry_go, file->entry},
	};
	file_answer(exchange, request, &file->representation, &body);
}

/* 200 with headers only, handing the body to a front server through header: value. */
static void answer_offloaded(struct exchange *exchange, const struct request *request,
			     const struct cached_file *file, const char *header, const char *value)
{
	const struct representation *representation = &file->representation;
	/* Headers only: the front server replaces the (empty) body with the file. */
	struct response_head head = {
		.status = 200,
		.content_type = representation->content_type,
		.has_length = 1,
		.content_length = 0,
	};
	if (representation->cache_control != NULL)
		response_head_add(&head, "Cache-Control", representation->cache_control);
	response_head_add(&head, header, value);
	char disposition[DISPOSITION_VALUE_MAX];
	file_plan_add_disposition(request, &head, file->resolved_path, disposition);
	struct client_limits_text limits;
	client_limits_add_fields(request, &head, 1, &limits);
	answer_send(exchange, request, &head, 0, NULL, NULL);
}

static void answer_by_accel_redirect(struct exchange *exchange, const struct request *request,
				     const struct cached_file *file,
				     const struct media_roots *roots, struct disk_io *io)
{
	(void)io;
	char uri[OFFLOAD_URI_MAX];
	size_t root = (size_t)file->root_index;
	if (offload_accel_uri(request->config->x_accel_redirects[root],
			      roots->paths[root], file->resolved_path, uri, sizeof(uri)) == 0) {
		log_error("%s: cannot express as an X-Accel-Redirect URI", file->resolved_path);
		answer_error(exchange, request, 500);
		return;
	}
	answer_offloaded(exchange, request, file, "X-Accel-Redirect", uri);
}

static void answer_by_x_sendfile(struct exchange *exchange, const struct request *request,
				 const struct cached_file *file, const struct media_roots *roots,
				 struct disk_io *io)
{
	(void)roots;
	(void)io;
	if (!offload_header_safe(file->resolved_path)) {
		log_error("%s: path has control characters; cannot send it as X-Sendfile",
			  file->resolved_path);
		answer_error(exchange, request, 500);
		return;
	}
	answer_offloaded(exchange, request, file, "X-Sendfile", file->resolved_path);
}

static const struct handoff strategies[] = {
	{"sendfile", answer_by_sendfile},
	{"x-accel-redirect", answer_by_accel_redirect},
	{"x-sendfile", answer_by_x_sendfile},
};

const struct handoff *handoff_for(const struct config *config)
{
	if (config->x_accel_redirect_count > 0)
		return &strategies[1];
	if (config->x_sendfile)
		return &strategies[2];
	return &strategies[0];
}
