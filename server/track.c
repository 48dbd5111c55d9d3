/*
 * track: the findById -> file -> response path. Every outcome that is not a
 * 200 is decided and logged here, once: 404 for no document, a document
 * without a path, or a file that is missing, unreadable or outside the roots
 * (the body never names the path); 503 when the database does not answer in
 * time; 500 for any other database error.
 */
#include "track.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "content_type.h"
#include "log.h"
#include "media.h"
#include "response.h"
#include "serve.h"
#include "worker.h"

static void open_and_serve(struct exchange *exchange, const char *mid, const char *path)
{
	const struct service *service = exchange->worker->service;
	struct media_file file;
	int error_number;
	enum media_status status = media_open(&service->media_roots, path, &file, &error_number);
	if (status != MEDIA_OK) {
		log_warn("mid=%s: %s: %s%s%s", mid, path, media_status_describe(status),
			 error_number ? ": " : "", error_number ? strerror(error_number) : "");
		response_send_error(exchange, 404);
		return;
	}

	struct response_file response = {
		.size = file.size,
		.mtime = file.mtime.tv_sec,
		.content_type = content_type_for_path(file.resolved_path),
		.cache_control = service->config->cache_control,
	};
	etag_format(response.etag, file.mtime, file.size);
	http_date_format(response.last_modified, file.mtime.tv_sec);
	response.segment = evbuffer_file_segment_new(file.fd, 0, (ev_off_t)file.size,
						     EVBUF_FS_CLOSE_ON_FREE);
	if (response.segment == NULL) {
		close(file.fd);
		log_error("mid=%s: cannot prepare the file for sending", mid);
		response_send_error(exchange, 500);
		return;
	}
	serve_file(exchange, &response);
	/* The response holds its own reference while the bytes go out. */
	evbuffer_file_segment_free(response.segment);
}

static void respond_to_lookup(struct exchange *exchange)
{
	struct lookup_job *job = &exchange->job;
	switch (job->status) {
	case LOOKUP_FOUND:
		open_and_serve(exchange, job->mid, job->path);
		return;
	case LOOKUP_NOT_FOUND:
		log_debug("mid=%s: no such document", job->mid);
		response_send_error(exchange, 404);
		return;
	case LOOKUP_NO_PATH:
		log_warn("mid=%s: data problem: %s", job->mid, job->detail);
		response_send_error(exchange, 404);
		return;
	case LOOKUP_UNAVAILABLE:
		log_warn("mid=%s: database unavailable: %s", job->mid, job->detail);
		response_send_error(exchange, 503);
		return;
	case LOOKUP_FAILED:
		log_error("mid=%s: database error: %s", job->mid, job->detail);
		response_send_error(exchange, 500);
		return;
	}
}

static void on_lookup_deadline(struct exchange *exchange)
{
	log_warn("mid=%s: database did not answer within %u ms", exchange->job.mid,
		 exchange->worker->service->config->lookup_timeout_ms);
	response_send_error(exchange, 503);
}

void track_handle(struct exchange *exchange, const char *mid)
{
	if (exchange_lookup(exchange, LOOKUP_FIND_TRACK, mid, respond_to_lookup,
			    on_lookup_deadline) < 0) {
		log_warn("mid=%s: cannot queue the lookup: too many in flight", mid);
		response_send_error(exchange, 503);
	}
}
