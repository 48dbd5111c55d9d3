/*
 * track: the findById -> file -> answer path, through the lookup cache
 * (mid -> path, or mid -> GridFS entry) and the open-file cache (path -> open
 * file and its header lines): with both warm, a request makes no database
 * round trip and no open, stat or close; a GridFS track with a warm lookup
 * cache and a spooled copy makes no database round trip either. The answer
 * to a lookup that found nothing usable is answer.c's; a file that is
 * missing, unreadable or outside the roots is 404 and logged here (the body
 * never names the path).
 *
 * With --etag-field, a document's own ETag (its content hash) replaces the
 * file's (mtime and size) in the answer, so every origin serving the same
 * document sends the same validator, whatever its copy's mtime.
 *
 * Ownership: a lookup (struct track_request) is the handler's, malloc'd at
 * the miss and freed when its delivery has run, whether or not the client is
 * still there (lookup_wait.h).
 */
#include "respond/track.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "respond/answer.h"
#include "respond/body_gridfs.h"
#include "respond/file_answer.h"
#include "respond/lookup_wait.h"

struct track_request {
	struct lookup_wait wait; /* first: the pool hands back its job */
	const struct resources *resources;
};

/* Answers with file, under the document's ETag when it has one ("" for none). */
static void answer_file(struct exchange *exchange, const struct resources *resources,
			const struct cached_file *file, const char *document_etag)
{
	if (document_etag[0] == '\0') {
		resources->handoff->answer(exchange, file, &resources->media_roots);
		return;
	}
	/* A copy for this answer: the cached entry is the file's, shared by every document. */
	struct cached_file tagged = *file;
	struct representation *representation = &tagged.representation;
	char lines[RESPONSE_FILE_LINES_SIZE(CONFIG_HEADER_VALUE_MAX)];
	snprintf(representation->etag, sizeof(representation->etag), "%s", document_etag);
	if (response_head_file_lines(lines, sizeof(lines), representation->last_modified,
				     representation->etag, representation->cache_control) == 0) {
		log_error("document ETag %s: the header lines do not fit", document_etag);
		answer_error(exchange, 500);
		return;
	}
	representation->file_lines = lines;
	resources->handoff->answer(exchange, &tagged, &resources->media_roots);
}

/* Opens (or finds open) the file at path and answers with it, or 404 and a log line. */
static void answer_path(struct exchange *exchange, const struct resources *resources,
			const char *mid, const char *path, const char *document_etag)
{
	const struct settings *settings = exchange_snapshot(exchange);
	struct file_cache_entry *entry =
		file_cache_get(resources->file_cache, path, settings->file_lines_generation);
	if (entry == NULL) {
		struct opened_file file;
		int error_number;
		enum media_status status =
			media_open(&resources->media_roots, path, &file, &error_number);
		if (status != MEDIA_OK) {
			log_warn("mid=%s: %s: %s%s%s", mid, path, media_status_describe(status),
				 error_number ? ": " : "", error_number ? strerror(error_number) : "");
			answer_error(exchange, 404);
			return;
		}
		entry = file_cache_insert(resources->file_cache, path, &file,
					  settings->file_lines_generation,
					  settings->config.cache_control);
		if (entry == NULL) {
			log_error("mid=%s: out of memory opening the file", mid);
			answer_error(exchange, 500);
			return;
		}
	}
	answer_file(exchange, resources, file_cache_file(entry), document_etag);
	/* Answers still sending hold their own segment references. */
	file_cache_release(resources->file_cache, entry);
}

static void answer_gridfs(struct exchange *exchange, const struct resources *resources,
			  const char *mid, const struct gridfs_entry *entry)
{
	struct gridfs_representation file;
	if (body_gridfs_representation(&file, entry, exchange_target(exchange),
				       exchange_config(exchange)->cache_control) < 0) {
		log_error("mid=%s: GridFS file %s: validators do not fit a head", mid, entry->id);
		answer_error(exchange, 500);
		return;
	}
	struct file_body body = {
		.kind = BODY_GRIDFS,
		.mid = mid,
		.gridfs = &file.entry,
		.spool = resources->gridfs_spool,
		.pool = resources->db,
	};
	file_answer(exchange, &file.representation, &body);
}

/* Runs when the lookup ends, even if the client left or the deadline answered meanwhile. */
static void on_lookup_done(struct exchange *exchange, void *arg)
{
	struct track_request *request = arg;
	struct track_lookup *lookup = &request->wait.lookup;
	const struct resources *resources = request->resources;
	enum lookup_status status = lookup->job.status;
	char what[sizeof("mid=") + OBJECTID_HEX_LENGTH];

	lookup_wait_delivered(exchange, &request->wait);
	/* What was learned is kept either way. */
	if (status == LOOKUP_FOUND)
		lookup_cache_put_tagged(resources->lookup_cache, lookup->mid, lookup->path,
					lookup->etag);
	else if (status == LOOKUP_GRIDFS)
		lookup_cache_put_gridfs(resources->lookup_cache, lookup->mid, lookup->gridfs);
	else if (status == LOOKUP_NOT_FOUND)
		lookup_cache_put(resources->lookup_cache, lookup->mid, NULL);
	if (!exchange_can_respond(exchange))
		goto done;
	if (status == LOOKUP_FOUND) {
		answer_path(exchange, resources, lookup->mid, lookup->path, lookup->etag);
	} else if (status == LOOKUP_GRIDFS) {
		answer_gridfs(exchange, resources, lookup->mid, lookup->gridfs);
	} else {
		snprintf(what, sizeof(what), "mid=%s", lookup->mid);
		answer_lookup_failure(exchange, what, status, lookup->job.detail);
	}
done:
	find_track_release(lookup);
	free(request);
}

static void on_lookup_deadline(struct exchange *exchange, void *arg)
{
	struct track_request *request = arg;
	char what[sizeof("mid=") + OBJECTID_HEX_LENGTH];
	lookup_wait_timed_out(exchange, &request->wait);
	snprintf(what, sizeof(what), "mid=%s", request->wait.lookup.mid);
	answer_lookup_timeout(exchange, what);
}

/* A miss: asks the database pool, off the loop. */
static void look_up(struct exchange *exchange, const char *mid, const struct resources *resources)
{
	struct track_request *request = calloc(1, sizeof(*request));
	if (request == NULL) {
		log_error("mid=%s: out of memory for a lookup", mid);
		answer_error(exchange, 503);
		return;
	}
	request->resources = resources;
	if (lookup_wait_start(exchange, resources->db, &request->wait, FIND_TRACK, mid,
			      on_lookup_done, on_lookup_deadline, request) < 0) {
		free(request);
		log_warn("mid=%s: cannot queue the lookup: too many in flight", mid);
		answer_error(exchange, 503);
	}
}

void track_handle(struct exchange *exchange, const char *mid, const struct resources *resources)
{
	char path[PATH_MAX], etag[ETAG_MAX];
	struct gridfs_entry gridfs;
	switch (lookup_cache_get_track(resources->lookup_cache, mid, path, sizeof(path), etag,
				       &gridfs)) {
	case LOOKUP_CACHE_HIT:
		answer_path(exchange, resources, mid, path, etag);
		return;
	case LOOKUP_CACHE_GRIDFS:
		answer_gridfs(exchange, resources, mid, &gridfs);
		return;
	case LOOKUP_CACHE_NEGATIVE:
		answer_error(exchange, 404);
		return;
	case LOOKUP_CACHE_MISS:
		break;
	}
	look_up(exchange, mid, resources);
}
