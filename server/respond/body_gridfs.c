/*
 * body_gridfs: one answer's walk through its byte ranges.
 *
 *   fetch the first span -> head + its bytes ->
 *   [queued + next chunk > window ? wait until drained : fetch the next span]
 *   -> ... -> the last byte appended (the exchange completes the answer)
 *
 * The first span is read before the head is sent, so that a file whose first
 * chunks are missing answers 500 instead of a truncated 200. Later data
 * errors cannot change the status any more: the connection is closed (the
 * client sees a body shorter than its Content-Length), and it is logged.
 *
 * A spooled copy is opened on the disk pool (the spool's lane: its disk may
 * be as slow as any), then sent as a file is (body_file.h).
 *
 * Ownership: the stream is the walk's state, malloc'd, with at most one of a
 * fetch (a db_pool job, waited for with exchange_wait), a copy's opening (a
 * disk_io work, waited for the same way) or a drain wait pending at any time;
 * whichever callback finds the walk over (done, failed, or the client gone)
 * frees it. The pool thread writes only into stream->fetched (or
 * stream->copy), between the submit and the delivery.
 */
#include "respond/body_gridfs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "db/gridfs_read.h"
#include "respond/answer.h"
#include "respond/body_file.h"
#include "respond/disk_start.h"
#include "wire/wait.h"

/* The URL's :param is only read for its extension; this much of its end is kept. */
#define NAME_TAIL_MAX 64
/* "mid=<24 hex>: GridFS file <24 hex>" and a NUL. */
#define WHAT_MAX 80

/* A spooled copy being opened on the disk pool. */
struct copy_open {
	struct disk_work work; /* first */
	struct gridfs_spool *spool;
	const struct gridfs_entry *entry;
	int fd; /* out: the copy, or -1 */
};

struct gridfs_stream {
	char what[WHAT_MAX]; /* for the log */
	struct request request;
	struct gridfs_spool *spool;
	struct disk_io *io;
	unsigned lane;	     /* the spool's disk lane */
	struct copy_open copy;
	int filled;	     /* the spool's fill for this file was waited for already */
	struct db_pool *pool;
	struct gridfs_representation file;
	struct file_plan plan;
	size_t window;
	unsigned timeout_ms;
	int started;		  /* the head is sent */
	size_t part;		  /* the range being read */
	int part_opened;	  /* its multipart header is appended */
	uint64_t position;	  /* its next byte to read */
	uint64_t sent;		  /* body bytes appended so far, for the log */
	struct gridfs_span span;  /* of the fetch in flight */
	struct db_job job;
	struct evbuffer *fetched; /* the pool thread's, while a fetch is in flight */
	struct evbuffer *ready;	  /* the next append: part texts and bytes */
	struct byte_range parts[]; /* plan.count ranges, in request order */
};

int body_gridfs_representation(struct gridfs_representation *out,
			       const struct gridfs_entry *entry, const char *name,
			       size_t name_length, const char *cache_control)
{
	/* Only the name's extension matters: its end is kept. */
	char tail[NAME_TAIL_MAX];
	size_t kept = name_length < sizeof(tail) ? name_length : sizeof(tail) - 1;
	memcpy(tail, name + name_length - kept, kept);
	tail[kept] = '\0';
	struct representation *representation = &out->representation;
	out->entry = *entry;
	*representation = (struct representation){
		.size = entry->length,
		.mtime = gridfs_last_modified(entry),
		.content_type = out->content_type,
		.cache_control = cache_control,
		.file_lines = out->file_lines,
	};
	snprintf(out->content_type, sizeof(out->content_type), "%s",
		 gridfs_content_type(&out->entry, tail));
	gridfs_etag(representation->etag, entry);
	http_date_format(representation->last_modified, representation->mtime);
	return response_head_file_lines(out->file_lines, sizeof(out->file_lines),
					representation->last_modified, representation->etag,
					cache_control) > 0
		       ? 0
		       : -1;
}

static void stream_free(struct gridfs_stream *stream)
{
	if (stream->fetched != NULL)
		evbuffer_free(stream->fetched);
	if (stream->ready != NULL)
		evbuffer_free(stream->ready);
	free(stream);
}

static void fetch(struct exchange *exchange, struct gridfs_stream *stream);

/* On a pool thread: the span's bytes into fetched. */
static void read_span(struct db_job *job, const struct db_thread *thread)
{
	struct gridfs_stream *stream =
		(struct gridfs_stream *)((char *)job - offsetof(struct gridfs_stream, job));
	gridfs_read_span(job, thread, &stream->file.entry, &stream->span, stream->fetched);
}

/* Appends text to ready (a multipart header or the closing); 0 or -1. */
static int add_text(struct gridfs_stream *stream, const char *text, size_t length)
{
	return length > 0 && evbuffer_add(stream->ready, text, length) == 0 ? 0 : -1;
}

/* Moves the fetched bytes (and the texts around them) into ready and advances the walk. */
static int take_fetched(struct gridfs_stream *stream)
{
	const struct representation *representation = &stream->file.representation;
	struct file_plan *plan = &stream->plan;
	char text[MULTIPART_HEADER_MAX];
	int multipart = plan->count > 1;
	if (multipart && !stream->part_opened) {
		size_t length = multipart_part_header(text, sizeof(text), plan->boundary,
						      representation->content_type,
						      &stream->parts[stream->part],
						      representation->size);
		if (add_text(stream, text, length) < 0)
			return -1;
		stream->part_opened = 1;
	}
	if (evbuffer_add_buffer(stream->ready, stream->fetched) < 0)
		return -1;
	stream->position = stream->span.last + 1;
	if (stream->position > stream->parts[stream->part].last) {
		stream->part++;
		stream->part_opened = 0;
		if (stream->part < plan->count)
			stream->position = stream->parts[stream->part].first;
		else if (multipart &&
			 add_text(stream, text, multipart_closing(text, sizeof(text), plan->boundary)) <
				 0)
			return -1;
	}
	return 0;
}

static void on_drained(struct exchange *exchange, void *arg)
{
	struct gridfs_stream *stream = arg;
	if (!exchange_stream_alive(exchange)) {
		log_debug("%s: client left after %" PRIu64 " bytes", stream->what, stream->sent);
		stream_free(stream);
		return;
	}
	fetch(exchange, stream);
}

/* Reads on, or waits for the client first when the next chunk would overfill the window. */
static void read_on(struct exchange *exchange, struct gridfs_stream *stream)
{
	const struct byte_range *part = &stream->parts[stream->part];
	uint64_t chunk_size = stream->file.entry.chunk_size;
	uint64_t chunk_end = (stream->position / chunk_size + 1) * chunk_size - 1;
	uint64_t next = (chunk_end < part->last ? chunk_end : part->last) - stream->position + 1;
	size_t queued = exchange_stream_queued(exchange);
	if (queued == 0 || queued + next <= stream->window) {
		fetch(exchange, stream);
		return;
	}
	size_t low = next < stream->window ? stream->window - (size_t)next : 0;
	if (exchange_stream_when_drained(exchange, low, on_drained, stream) < 0) {
		exchange_stream_abort(exchange);
		stream_free(stream);
	}
}

/* The head: 0 (the body follows), 1 (complete already) or -1. */
static int send_head(struct exchange *exchange, struct gridfs_stream *stream)
{
	struct file_head_text text;
	struct response_head head = file_plan_head(&stream->request, &stream->file.representation,
						   NULL, &stream->plan, &text);
	return answer_stream_start(exchange, &stream->request, &head, head.content_length);
}

static void on_fetched(struct exchange *exchange, void *arg)
{
	struct gridfs_stream *stream = arg;
	struct db_job *job = &stream->job;
	if (!stream->started) {
		if (!exchange_can_respond(exchange)) {
			stream_free(stream); /* the client left, or the deadline answered */
			return;
		}
		if (job->status != LOOKUP_FOUND) {
			answer_lookup_failure(exchange, &stream->request, stream->what, job->status,
					      job->detail);
			stream_free(stream);
			return;
		}
		if (send_head(exchange, stream) != 0) {
			stream_free(stream);
			return;
		}
		stream->started = 1;
	} else if (!exchange_stream_alive(exchange)) {
		stream_free(stream);
		return;
	} else if (job->status != LOOKUP_FOUND) {
		log_error("%s: %s: %s; closing the connection after %" PRIu64 " of its bytes",
			  stream->what, lookup_status_describe(job->status), job->detail, stream->sent);
		exchange_stream_abort(exchange);
		stream_free(stream);
		return;
	}
	if (take_fetched(stream) < 0) {
		log_error("%s: out of memory streaming; closing the connection", stream->what);
		exchange_stream_abort(exchange);
		stream_free(stream);
		return;
	}
	stream->sent += evbuffer_get_length(stream->ready);
	if (exchange_stream_append(exchange, stream->ready) < 0 ||
	    stream->part == stream->plan.count) {
		stream_free(stream); /* closed, or the last byte is queued */
		return;
	}
	read_on(exchange, stream);
}

static void on_deadline(struct exchange *exchange, void *arg)
{
	struct gridfs_stream *stream = arg;
	answer_lookup_timeout(exchange, &stream->request, stream->what);
}

/* Asks a pool thread for the next span: as many chunks as the window has room for. */
static void fetch(struct exchange *exchange, struct gridfs_stream *stream)
{
	size_t queued = exchange_stream_queued(exchange);
	uint64_t room = queued < stream->window ? stream->window - queued : 0;
	stream->span = gridfs_span_next(&stream->file.entry, stream->position,
					stream->parts[stream->part].last, room);
	stream->job = (struct db_job){
		.run = read_span,
		.deadline = clock_deadline_after(stream->timeout_ms),
		.delivery = exchange_wait(exchange, stream->timeout_ms, on_fetched, on_deadline,
					  stream),
	};
	if (stream->job.delivery != NULL && db_pool_submit(stream->pool, &stream->job) == 0)
		return;
	if (stream->job.delivery != NULL)
		exchange_wait_cancel(exchange);
	if (stream->started) {
		log_warn("%s: cannot queue a GridFS read (too many lookups in flight, or "
			 "stopping); closing the connection after %" PRIu64 " bytes",
			 stream->what, stream->sent);
		exchange_stream_abort(exchange);
	} else {
		log_warn("%s: cannot queue a GridFS read: too many in flight", stream->what);
		answer_error(exchange, &stream->request, 503);
	}
	stream_free(stream);
}

/* A spooled copy's segment, held by the answers that still send it (file_keeper). */
struct held_copy {
	unsigned refs;
	struct evbuffer_file_segment *segment;
};

static void hold_copy(void *owner)
{
	((struct held_copy *)owner)->refs++;
}

static void release_copy(void *owner)
{
	struct held_copy *copy = owner;
	if (--copy->refs > 0)
		return;
	evbuffer_file_segment_free(copy->segment); /* closes the copy, on the disk pool */
	free(copy);
}

/* Sends the decided answer from the spooled copy (fd, taken over), by sendfile. */
static void send_copy(struct exchange *exchange, struct gridfs_stream *stream, int fd)
{
	struct held_copy *held = malloc(sizeof(*held));
	struct disk_file *disk;
	struct evbuffer_file_segment *segment =
		disk_io_segment_new(stream->io, fd, stream->file.entry.length, stream->lane, &disk);
	if (held == NULL || segment == NULL) {
		free(held);
		if (segment != NULL)
			evbuffer_file_segment_free(segment);
		log_error("%s: out of memory sending its spooled copy", stream->what);
		answer_error(exchange, &stream->request, 500);
		return;
	}
	*held = (struct held_copy){.refs = 1, .segment = segment};
	struct file_body copy = {.kind = BODY_FILE, .segment = segment, .fd = fd, .disk = disk,
				 .io = stream->io, .lane = stream->lane,
				 .keeper = {hold_copy, release_copy, held}};
	body_file_send(exchange, &stream->request, &stream->file.representation, &copy,
		       &stream->plan);
	release_copy(held); /* the answer holds its own references */
}

/* Starts reading the ranges from GridFS itself; owns the stream from here. */
static void stream_from_gridfs(struct exchange *exchange, struct gridfs_stream *stream)
{
	stream->position = stream->parts[0].first;
	stream->fetched = evbuffer_new();
	stream->ready = evbuffer_new();
	if (stream->fetched == NULL || stream->ready == NULL) {
		log_error("%s: out of memory for a GridFS answer", stream->what);
		answer_error(exchange, &stream->request, 500);
		stream_free(stream);
		return;
	}
	fetch(exchange, stream);
}

static void open_copy(struct exchange *exchange, struct gridfs_stream *stream);

/* The spool's fill of this file ended: send the copy, or read GridFS after all. */
static void on_spooled(struct exchange *exchange, void *arg)
{
	struct gridfs_stream *stream = arg;
	if (!exchange_can_respond(exchange)) {
		stream_free(stream);
		return;
	}
	if (stream->job.status == LOOKUP_FOUND) {
		open_copy(exchange, stream);
		return;
	}
	log_debug("%s: no spooled copy (%s): reading GridFS", stream->what, stream->job.detail);
	stream_from_gridfs(exchange, stream);
}

/* On a disk thread: the copy, if the spool has it. */
static void copy_open_run(struct disk_work *work)
{
	struct copy_open *copy = (struct copy_open *)work;
	copy->fd = gridfs_spool_open_copy(copy->spool, copy->entry);
}

static void on_copy_opened(struct exchange *exchange, void *arg)
{
	struct gridfs_stream *stream = arg;
	int fd = stream->copy.work.skipped ? -1 : stream->copy.fd;
	if (!exchange_can_respond(exchange)) {
		disk_io_close(stream->io, fd, stream->lane);
		stream_free(stream);
		return;
	}
	if (fd >= 0) {
		send_copy(exchange, stream, fd);
		stream_free(stream);
		return;
	}
	if (stream->filled) {
		stream_from_gridfs(exchange, stream); /* filled, and gone again: GridFS itself */
		return;
	}
	/* The copy's fill (one for every request that asks meanwhile), then the copy. */
	stream->filled = 1;
	stream->job.delivery = exchange_wait(exchange, stream->timeout_ms, on_spooled, NULL, stream);
	if (stream->job.delivery != NULL) {
		gridfs_spool_wait(stream->spool, &stream->file.entry, &stream->job);
		return;
	}
	stream_from_gridfs(exchange, stream);
}

/* Opens the spooled copy on the disk pool; without a disk thread in time, 503. */
static void on_copy_deadline(struct exchange *exchange, void *arg)
{
	struct gridfs_stream *stream = arg;
	if (!disk_start_refused(exchange, &stream->request, stream->io, &stream->copy.work,
				stream->what, "its spooled copy"))
		return; /* queued or under way: it is waited for */
	stream_free(stream);
}

static void open_copy(struct exchange *exchange, struct gridfs_stream *stream)
{
	stream->copy = (struct copy_open){.spool = stream->spool, .entry = &stream->file.entry,
					  .fd = -1};
	stream->copy.work.delivery =
		exchange_wait(exchange, stream->request.config->disk_queue_timeout_ms,
			      on_copy_opened, on_copy_deadline, stream);
	if (stream->copy.work.delivery != NULL &&
	    disk_io_submit(stream->io, &stream->copy.work, copy_open_run, stream->lane,
			   TASK_START) == 0)
		return;
	if (stream->copy.work.delivery != NULL)
		exchange_wait_cancel(exchange);
	stream_from_gridfs(exchange, stream); /* stopping, or out of memory: GridFS itself */
}

/* A copy of file in the stream's own storage, its strings pointing there too. */
static void keep_file(struct gridfs_representation *copy, const struct gridfs_representation *file)
{
	*copy = *file;
	copy->representation.content_type = copy->content_type;
	copy->representation.file_lines = copy->file_lines;
}

void body_gridfs_send(struct exchange *exchange, const struct request *request,
		      const struct representation *representation, const struct file_body *body,
		      const struct file_plan *plan)
{
	const struct config *config = request->config;
	(void)representation; /* body->gridfs's, copied below into the stream's own storage */
	struct gridfs_stream *stream =
		calloc(1, sizeof(*stream) + plan->count * sizeof(stream->parts[0]));
	if (stream == NULL) {
		log_error("mid=%s: out of memory for a GridFS answer", request->route.mid);
		answer_error(exchange, request, 500);
		return;
	}
	stream->request = *request;
	keep_file(&stream->file, body->gridfs);
	snprintf(stream->what, sizeof(stream->what), "mid=%s: GridFS file %s", request->route.mid,
		 body->gridfs->entry.id);
	stream->spool = body->spool;
	stream->pool = body->pool;
	stream->io = body->io;
	stream->lane = body->lane;
	stream->window = config->gridfs_window;
	stream->timeout_ms = config->lookup_timeout_ms;
	stream->plan = *plan;
	memcpy(stream->parts, plan->parts, plan->count * sizeof(stream->parts[0]));
	stream->plan.parts = stream->parts;

	if (stream->spool != NULL && stream->io != NULL) {
		open_copy(exchange, stream);
		return;
	}
	stream_from_gridfs(exchange, stream);
}
