/*
 * track: the findById -> file -> response path (or, for a document whose
 * file is in GridFS, -> gridfs_stream), through the lookup cache
 * (mid -> path, or mid -> GridFS file) and the open-file cache (path -> open
 * file and its headers): with both warm, a request makes no database round
 * trip and no open, stat or close; a GridFS track with a warm lookup cache
 * and a spooled copy makes no database round trip either. Every outcome that is not a
 * 200 is decided and logged here, once: 404 for no document, a document
 * without a path or a GridFS file (or whose GridFS entry is missing or
 * malformed), or a file that is missing, unreadable or outside the roots
 * (the body never names the path); 503 when the database does not answer in
 * time; 500 for any other database error.
 *
 * With --etag-field, a document's own ETag (its content hash) replaces the
 * file's (mtime and size) in the answer, so every origin serving the same
 * document sends the same validator, whatever its copy's mtime.
 */
#include "respond/track.h"

#include <stdio.h>
#include <string.h>

#include "media/file_cache.h"
#include "http/head.h"
#include "respond/gridfs_stream.h"
#include "db/lookup_cache.h"
#include "base/log.h"
#include "media/media.h"
#include "respond/response.h"

/* Last-Modified, ETag and Cache-Control lines with the longest values config and validators allow. */
#define TAGGED_LINES_MAX (128 + ETAG_MAX + CONFIG_HEADER_VALUE_MAX)

/* Answers with file, under the document's ETag when it has one ("" for none). */
static void respond_with(struct exchange *exchange, const struct service *service,
			 const struct response_file *file, const char *document_etag)
{
	if (document_etag[0] == '\0') {
		service->delivery->respond(exchange, file, &service->media_roots);
		return;
	}
	/* A copy for this answer: the cached entry is the file's, shared by every document. */
	struct response_file tagged = *file;
	char lines[TAGGED_LINES_MAX];
	snprintf(tagged.etag, sizeof(tagged.etag), "%s", document_etag);
	if (head_file_lines(lines, sizeof(lines), file->last_modified, tagged.etag,
			    file->cache_control) == 0) {
		log_error("document ETag %s: the header lines do not fit", document_etag);
		response_send_error(exchange, 500);
		return;
	}
	tagged.file_lines = lines;
	service->delivery->respond(exchange, &tagged, &service->media_roots);
}

/* Opens (or finds open) the file at path and answers with it, or 404 and a log line. */
static void serve_path(struct exchange *exchange, const struct service *service, const char *mid,
		       const char *path, const char *document_etag)
{
	const struct settings *settings = exchange_snapshot(exchange);
	struct file_cache_entry *entry =
		file_cache_get(service->file_cache, path, settings->file_lines_generation);
	if (entry == NULL) {
		struct media_file file;
		int error_number;
		enum media_status status =
			media_open(&service->media_roots, path, &file, &error_number);
		if (status != MEDIA_OK) {
			log_warn("mid=%s: %s: %s%s%s", mid, path, media_status_describe(status),
				 error_number ? ": " : "", error_number ? strerror(error_number) : "");
			response_send_error(exchange, 404);
			return;
		}
		entry = file_cache_insert(service->file_cache, path, &file,
					  settings->file_lines_generation,
					  settings->config.cache_control);
		if (entry == NULL) {
			log_error("mid=%s: out of memory opening the file", mid);
			response_send_error(exchange, 500);
			return;
		}
	}
	respond_with(exchange, service, file_cache_response(entry), document_etag);
	/* Responses still sending hold their own segment references. */
	file_cache_release(service->file_cache, entry);
}

/* Runs when the lookup ends, even if the client left or the deadline answered meanwhile. */
static void respond_to_lookup(struct exchange *exchange, void *arg)
{
	const struct service *service = arg;
	struct lookup_job *job = exchange_job(exchange);
	/* What was learned is kept either way. */
	if (job->status == LOOKUP_FOUND)
		lookup_cache_put_tagged(service->lookup_cache, job->mid, job->path, job->etag);
	else if (job->status == LOOKUP_GRIDFS)
		lookup_cache_put_gridfs(service->lookup_cache, job->mid, job->gridfs);
	else if (job->status == LOOKUP_NOT_FOUND)
		lookup_cache_put(service->lookup_cache, job->mid, NULL);
	if (!exchange_can_respond(exchange))
		return;
	switch (job->status) {
	case LOOKUP_FOUND:
		serve_path(exchange, service, job->mid, job->path, job->etag);
		return;
	case LOOKUP_NOT_FOUND:
		log_debug("mid=%s: no such document", job->mid);
		response_send_error(exchange, 404);
		return;
	case LOOKUP_GRIDFS:
		gridfs_stream_serve(exchange, job->mid, job->gridfs, service->gridfs_spool);
		return;
	case LOOKUP_NO_PATH:
	case LOOKUP_BAD_DATA:
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

static void on_lookup_deadline(struct exchange *exchange, void *arg)
{
	(void)arg;
	log_warn("mid=%s: database did not answer within %u ms", exchange_job(exchange)->mid,
		 exchange_config(exchange)->lookup_timeout_ms);
	response_send_error(exchange, 503);
}

void track_handle(struct exchange *exchange, const char *mid, const struct service *service)
{
	char path[PATH_MAX], etag[ETAG_MAX];
	struct gridfs_file gridfs;
	switch (lookup_cache_get_track(service->lookup_cache, mid, path, sizeof(path), etag,
				       &gridfs)) {
	case LOOKUP_CACHE_HIT:
		serve_path(exchange, service, mid, path, etag);
		return;
	case LOOKUP_CACHE_GRIDFS:
		gridfs_stream_serve(exchange, mid, &gridfs, service->gridfs_spool);
		return;
	case LOOKUP_CACHE_NEGATIVE:
		response_send_error(exchange, 404);
		return;
	case LOOKUP_CACHE_MISS:
		break;
	}
	if (exchange_lookup(exchange, LOOKUP_FIND_TRACK, mid, respond_to_lookup, on_lookup_deadline,
			    (void *)service) < 0) {
		log_warn("mid=%s: cannot queue the lookup: too many in flight", mid);
		response_send_error(exchange, 503);
	}
}
