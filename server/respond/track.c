/*
 * track: the findById -> file -> answer path, through the lookup cache
 * (mid -> the track's document: its path or GridFS entry, track_document.h)
 * and the open-file cache (path -> open file and its header lines): with both warm, a request makes no database
 * round trip and no open, stat or close; a GridFS track with a warm lookup
 * cache and a spooled copy makes no database round trip either. The answer
 * to a lookup that found nothing usable is answer.c's; a file that is
 * missing, unreadable or outside the roots is 404 and logged here (the body
 * never names the path).
 *
 * With --etag-field, a document's own ETag (its content hash) replaces the
 * file's (mtime and size) in the answer, so every origin serving the same
 * document sends the same validator, whatever its copy's mtime; with
 * --content-type-field, its own media type replaces the extension's (a GridFS
 * file's too). The cached entry is the file's, shared by every document that
 * names it: each answer amends a copy.
 *
 * The file is opened, and a cached one checked against the disk where that
 * may wait (disk_io.h: the stat of its path once per interval, the fstat of
 * a file on FUSE or NFS), on the disk pool: a start that gets no room in its
 * lane's queue within --disk-queue-timeout is answered 503.
 *
 * Ownership: a lookup (struct track_request) is the handler's, malloc'd at
 * the miss and freed when its delivery has run, whether or not the client is
 * still there (lookup_wait.h); so is a file being opened or checked (struct
 * file_start), which also holds the cache entry it checks. Each keeps a copy
 * of the request (request.h) to answer it with.
 */
#include "respond/track.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "respond/answer.h"
#include "respond/body_gridfs.h"
#include "respond/disk_start.h"
#include "respond/file_answer.h"
#include "respond/lookup_wait.h"
#include "wire/wait.h"

struct track_request {
	struct lookup_wait wait; /* first: the pool hands back its job */
	struct request request;
	const struct resources *resources;
};

/* Answers with file, under the document's ETag and media type where it has them. */
static void answer_file(struct exchange *exchange, const struct request *request,
			const struct resources *resources, const struct cached_file *file,
			const struct track_fields *fields)
{
	const char *document_etag = fields->etag;
	if (document_etag[0] == '\0' && fields->content_type[0] == '\0') {
		resources->handoff->answer(exchange, request, file, &resources->media_roots,
					   resources->disk);
		return;
	}
	/* A copy for this answer: the cached entry is the file's, shared by every document. */
	struct cached_file tagged = *file;
	struct representation *representation = &tagged.representation;
	char lines[RESPONSE_FILE_LINES_SIZE(CONFIG_HEADER_VALUE_MAX)];
	if (fields->content_type[0] != '\0')
		representation->content_type = fields->content_type;
	if (document_etag[0] != '\0') {
		snprintf(representation->etag, sizeof(representation->etag), "%s", document_etag);
		if (response_head_file_lines(lines, sizeof(lines), representation->last_modified,
					     representation->etag,
					     representation->cache_control) == 0) {
			log_error("document ETag %s: the header lines do not fit", document_etag);
			answer_error(exchange, request, 500);
			return;
		}
		representation->file_lines = lines;
	}
	resources->handoff->answer(exchange, request, &tagged, &resources->media_roots,
				   resources->disk);
}

/* Answers with a borrowed entry's file, then gives the entry back. */
static void answer_entry(struct exchange *exchange, const struct request *request,
			 const struct resources *resources, struct file_cache_entry *entry,
			 const struct track_fields *fields)
{
	answer_file(exchange, request, resources, file_cache_file(entry), fields);
	/* Answers still sending hold their own segment references. */
	file_cache_release(resources->file_cache, entry);
}

/* A track's file being opened, or its cached entry checked, on the disk pool. */
struct file_start {
	union {
		struct disk_work work; /* first: the pool hands back its work */
		struct disk_open open;
		struct disk_check check;
	} disk;
	struct request request;
	const struct resources *resources;
	struct file_cache_entry *entry; /* a check's, borrowed; NULL while opening */
	struct file_cache_check asked;
	struct track_fields fields; /* the document's */
};

static void on_opened(struct exchange *exchange, void *arg);
static void on_checked(struct exchange *exchange, void *arg);

/* No room in the lane's queue within --disk-queue-timeout: taken back, 503 (disk_start.h). */
static void on_disk_deadline(struct exchange *exchange, void *arg)
{
	struct file_start *start = arg;
	const struct resources *resources = start->resources;
	char what[sizeof("mid=") + OBJECTID_HEX_LENGTH];
	snprintf(what, sizeof(what), "mid=%s", start->request.route.mid);
	if (!disk_start_refused(exchange, &start->request, resources->disk, &start->disk.work, what,
				NULL))
		return; /* queued or under way: it is waited for */
	if (start->entry != NULL)
		file_cache_release(resources->file_cache, start->entry);
	free(start);
}

/* Hands start's work to the disk pool as a start; false (start freed, answered) if it cannot. */
static bool submit_start(struct exchange *exchange, struct file_start *start, disk_work_fn run,
			 unsigned lane, exchange_wait_cb on_done)
{
	const struct resources *resources = start->resources;
	start->disk.work.delivery = exchange_wait(exchange,
						  start->request.config->disk_queue_timeout_ms,
						  on_done, on_disk_deadline, start);
	if (start->disk.work.delivery != NULL &&
	    disk_io_submit(resources->disk, &start->disk.work, run, lane, TASK_START) == 0)
		return true;
	if (start->disk.work.delivery != NULL)
		exchange_wait_cancel(exchange);
	log_warn("mid=%s: cannot hand the file to the disk pool (stopping, or out of memory)",
		 start->request.route.mid);
	answer_error(exchange, &start->request, 503);
	if (start->entry != NULL)
		file_cache_release(resources->file_cache, start->entry);
	free(start);
	return false;
}

/* Opens path off the loop, then answers with it (start, if given, is reused). */
static void open_file(struct exchange *exchange, const struct request *request,
		      const struct resources *resources, struct file_start *start,
		      const char *path, const struct track_fields *fields)
{
	const char *mid = request->route.mid;
	if (start == NULL && (start = calloc(1, sizeof(*start))) == NULL) {
		log_error("mid=%s: out of memory opening the file", mid);
		answer_error(exchange, request, 500);
		return;
	}
	if (strlen(path) >= sizeof(start->disk.open.path)) {
		log_warn("mid=%s: %s: %s", mid, path, media_status_describe(MEDIA_MISSING));
		answer_error(exchange, request, 404);
		free(start);
		return;
	}
	if (&start->request != request)
		start->request = *request;
	start->resources = resources;
	start->entry = NULL;
	if (&start->fields != fields)
		start->fields = *fields;
	start->disk.open.roots = &resources->media_roots;
	snprintf(start->disk.open.path, sizeof(start->disk.open.path), "%s", path);
	/* A path the kernel resolves from memory, on a local disk, is opened here at once. */
	if (disk_open_now(&start->disk.open)) {
		on_opened(exchange, start);
		return;
	}
	submit_start(exchange, start, disk_open_run,
		     disk_io_lane_of_path(&resources->media_roots, path), on_opened);
}

static void on_opened(struct exchange *exchange, void *arg)
{
	struct file_start *start = arg;
	const struct request *request = &start->request;
	const struct resources *resources = start->resources;
	struct disk_open *open = &start->disk.open;
	if (open->work.skipped) {
		answer_error(exchange, request, 503); /* stopping */
	} else if (open->status != MEDIA_OK) {
		log_warn("mid=%s: %s: %s%s%s", request->route.mid, open->path,
			 media_status_describe(open->status), open->error_number ? ": " : "",
			 open->error_number ? strerror(open->error_number) : "");
		answer_error(exchange, request, 404);
	} else {
		/* Cached whether or not the client is still there: the next request needs it. */
		const struct settings *settings = request->settings;
		struct file_cache_entry *entry =
			file_cache_insert(resources->file_cache, open->path, &open->file,
					  settings->file_lines_generation,
					  settings->config.cache_control);
		if (entry == NULL) {
			log_error("mid=%s: out of memory opening the file", request->route.mid);
			answer_error(exchange, request, 500);
		} else if (exchange_can_respond(exchange)) {
			answer_entry(exchange, request, resources, entry, &start->fields);
		} else {
			file_cache_release(resources->file_cache, entry);
		}
	}
	free(start);
}

static void on_checked(struct exchange *exchange, void *arg)
{
	struct file_start *start = arg;
	const struct request *request = &start->request;
	const struct resources *resources = start->resources;
	struct disk_check *check = &start->disk.check;
	struct file_cache_entry *entry = start->entry;
	if (check->work.skipped) {
		file_cache_release(resources->file_cache, entry);
		answer_error(exchange, request, 503); /* stopping */
		free(start);
		return;
	}
	/* The key the entry is cached under: a changed file is opened again from it. */
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s", file_cache_path(entry));
	bool unchanged = file_cache_checked(resources->file_cache, entry, &start->asked,
					    check->fd_ok, &check->fd_info, check->path_ok,
					    &check->path_info);
	if (!exchange_can_respond(exchange)) {
		if (unchanged)
			file_cache_release(resources->file_cache, entry);
		free(start);
		return;
	}
	if (unchanged) {
		answer_entry(exchange, request, resources, entry, &start->fields);
		free(start);
		return;
	}
	/* Changed on the disk: opened again, from the path the entry was cached under. */
	open_file(exchange, request, resources, start, path, &start->fields);
}

/* Opens (or finds open) the document's file and answers with it, or 404 and a log line. */
static void answer_path(struct exchange *exchange, const struct request *request,
			const struct resources *resources, const struct track_document *document)
{
	const char *path = document->path;
	struct file_cache_entry *entry;
	struct file_cache_check asked;
	switch (file_cache_get(resources->file_cache, path, request->settings->file_lines_generation,
			       &entry, &asked)) {
	case FILE_CACHE_HIT:
		answer_entry(exchange, request, resources, entry, &document->fields);
		return;
	case FILE_CACHE_MISS:
		open_file(exchange, request, resources, NULL, path, &document->fields);
		return;
	case FILE_CACHE_CHECK:
		break;
	}
	struct file_start *start = calloc(1, sizeof(*start));
	if (start == NULL) {
		file_cache_release(resources->file_cache, entry);
		log_error("mid=%s: out of memory checking the file", request->route.mid);
		answer_error(exchange, request, 500);
		return;
	}
	start->request = *request;
	start->resources = resources;
	start->entry = entry;
	start->asked = asked;
	start->fields = document->fields;
	start->disk.check.fd = asked.fd;
	start->disk.check.path = asked.path;
	submit_start(exchange, start, disk_check_run,
		     (unsigned)file_cache_file(entry)->root_index, on_checked);
}

static void answer_gridfs(struct exchange *exchange, const struct request *request,
			  const struct resources *resources, const struct track_document *document)
{
	const struct gridfs_entry *entry = &document->gridfs;
	struct gridfs_representation file;
	if (body_gridfs_representation(&file, entry, request->route.param,
				       request->route.param_length,
				       request->config->cache_control) < 0) {
		log_error("mid=%s: GridFS file %s: validators do not fit a head", request->route.mid,
			  entry->id);
		answer_error(exchange, request, 500);
		return;
	}
	if (document->fields.content_type[0] != '\0')
		snprintf(file.content_type, sizeof(file.content_type), "%s",
			 document->fields.content_type);
	struct file_body body = {
		.kind = BODY_GRIDFS,
		.gridfs = &file,
		.spool = resources->gridfs_spool,
		.pool = resources->db,
		.io = resources->disk,
		.lane = DISK_LANE_SPOOL((unsigned)resources->media_roots.count),
	};
	file_answer(exchange, request, &file.representation, &body);
}

/* The one answer to what a lookup found, cached or not: the file, or the failure's (answer.c). */
static void answer_document(struct exchange *exchange, const struct request *request,
			    const struct resources *resources, enum lookup_status found,
			    const struct track_document *document, const char *detail)
{
	char what[sizeof("mid=") + OBJECTID_HEX_LENGTH];
	switch (found) {
	case LOOKUP_FOUND:
		answer_path(exchange, request, resources, document);
		return;
	case LOOKUP_GRIDFS:
		answer_gridfs(exchange, request, resources, document);
		return;
	default:
		snprintf(what, sizeof(what), "mid=%s", request->route.mid);
		answer_lookup_failure(exchange, request, what, found, detail);
		return;
	}
}

/* Runs when the lookup ends, even if the client left or the deadline answered meanwhile. */
static void on_lookup_done(struct exchange *exchange, void *arg)
{
	struct track_request *asked = arg;
	struct track_lookup *lookup = &asked->wait.lookup;
	const struct resources *resources = asked->resources;

	lookup_wait_delivered(&asked->wait);
	/* What was learned is kept either way (a database error is not). */
	lookup_cache_put(resources->lookup_cache, lookup->mid, lookup->job.status, &lookup->document);
	if (exchange_can_respond(exchange))
		answer_document(exchange, &asked->request, resources, lookup->job.status,
				&lookup->document, lookup->job.detail);
	free(asked);
}

static void on_lookup_deadline(struct exchange *exchange, void *arg)
{
	struct track_request *asked = arg;
	char what[sizeof("mid=") + OBJECTID_HEX_LENGTH];
	lookup_wait_timed_out(&asked->wait);
	snprintf(what, sizeof(what), "mid=%s", asked->request.route.mid);
	answer_lookup_timeout(exchange, &asked->request, what);
}

/* A miss: asks the database pool, off the loop. */
static void look_up(struct exchange *exchange, const struct request *request,
		    const struct resources *resources)
{
	struct track_request *asked = calloc(1, sizeof(*asked));
	if (asked == NULL) {
		log_error("mid=%s: out of memory for a lookup", request->route.mid);
		answer_error(exchange, request, 503);
		return;
	}
	asked->request = *request;
	asked->resources = resources;
	if (lookup_wait_start(exchange, request, resources->db, &asked->wait, FIND_TRACK,
			      on_lookup_done, on_lookup_deadline, asked) < 0) {
		free(asked);
		log_warn("mid=%s: cannot queue the lookup: too many in flight", request->route.mid);
		answer_error(exchange, request, 503);
	}
}

void track_handle(struct exchange *exchange, const struct request *request,
		  const struct resources *resources)
{
	enum lookup_status found;
	struct track_document document;
	if (lookup_cache_get(resources->lookup_cache, request->route.mid, &found, &document))
		answer_document(exchange, request, resources, found, &document, "");
	else
		look_up(exchange, request, resources);
}
