/*
 * gridfs_stream: one response's walk through its byte ranges.
 *
 *   decide (serve_decide) -> fetch the first span -> head + its bytes ->
 *   [queued + next chunk > window ? wait until drained : fetch the next span]
 *   -> ... -> the last byte appended (the exchange completes the response)
 *
 * The first span is read before the head is sent, so that a file whose first
 * chunks are missing answers 500 instead of a truncated 200. Later data
 * errors cannot change the status any more: the connection is closed (the
 * client sees a body shorter than its Content-Length), and it is logged.
 *
 * Ownership: the stream is the walk's state, malloc'd, with at most one of a
 * fetch (exchange_call) or a drain wait pending at any time; whichever
 * callback finds the walk over (done, failed, or the client gone) frees it.
 * The lookup thread writes only into stream->fetched, between the submit and
 * the job's delivery.
 */
#include "respond/gridfs_stream.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/gridfs_spool.h"
#include "db/gridfs_store.h"
#include "http/head.h"
#include "base/log.h"
#include "http/multipart.h"
#include "respond/response.h"
#include "respond/serve.h"

/* Room for Last-Modified, ETag and a Cache-Control of CONFIG_HEADER_VALUE_MAX. */
#define FILE_LINES_MAX (256 + CONFIG_HEADER_VALUE_MAX)
/* The URL's :param is only read for its extension; this much of its end is kept. */
#define NAME_TAIL_MAX 64

struct gridfs_stream {
	char mid[OBJECTID_HEX_LENGTH + 1];
	struct gridfs_spool *spool; /* NULL when off */
	struct gridfs_file file;
	struct response_file response; /* size, validators and type, for the heads */
	char file_lines[FILE_LINES_MAX];
	size_t window;
	int whole;		  /* 200 with the whole file, not 206 */
	int multipart;
	char boundary[MULTIPART_BOUNDARY_MAX];
	int started;		  /* the head is sent */
	size_t part;		  /* the range being read */
	int part_opened;	  /* its multipart header is appended */
	uint64_t position;	  /* its next byte to read */
	uint64_t sent;		  /* body bytes appended so far, for the log */
	struct gridfs_span span;  /* of the fetch in flight */
	struct lookup_job job;
	struct evbuffer *fetched; /* the lookup thread's, while a fetch is in flight */
	struct evbuffer *ready;	  /* the next append: part texts and bytes */
	size_t count;
	struct byte_range parts[]; /* count ranges, in request order */
};

static void stream_free(struct gridfs_stream *stream)
{
	if (stream->fetched != NULL)
		evbuffer_free(stream->fetched);
	if (stream->ready != NULL)
		evbuffer_free(stream->ready);
	free(stream);
}

static void fetch(struct exchange *exchange, struct gridfs_stream *stream);

/* On a lookup thread: the span's bytes into fetched. */
static void read_span(struct lookup_job *job, const struct lookup_call_context *context)
{
	struct gridfs_stream *stream = job->call_arg;
	job->status = lookup_status_of_store(
		gridfs_store_read(context->client, context->database, context->gridfs_bucket,
				  &stream->file, &stream->span, stream->fetched, job->detail,
				  sizeof(job->detail)));
}

/* A failed fetch before the head: the status says what happened. */
static void answer_failure(struct exchange *exchange, struct gridfs_stream *stream)
{
	struct lookup_job *job = &stream->job;
	switch (job->status) {
	case LOOKUP_UNAVAILABLE:
		log_warn("mid=%s: database unavailable reading GridFS file %s: %s", stream->mid,
			 stream->file.id, job->detail);
		response_send_error(exchange, 503);
		return;
	case LOOKUP_BAD_DATA:
		log_error("mid=%s: data error: %s", stream->mid, job->detail);
		break;
	default:
		log_error("mid=%s: database error reading GridFS file %s: %s", stream->mid,
			  stream->file.id, job->detail);
		break;
	}
	response_send_error(exchange, 500);
}

/* Appends text to ready (a multipart header or the closing); 0 or -1. */
static int add_text(struct gridfs_stream *stream, const char *text, size_t length)
{
	return length > 0 && evbuffer_add(stream->ready, text, length) == 0 ? 0 : -1;
}

/* Moves the fetched bytes (and the texts around them) into ready and advances the walk. */
static int take_fetched(struct gridfs_stream *stream)
{
	char text[MULTIPART_HEADER_MAX];
	if (stream->multipart && !stream->part_opened) {
		size_t length = multipart_part_header(text, sizeof(text), stream->boundary,
						      stream->response.content_type,
						      &stream->parts[stream->part],
						      stream->response.size);
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
		if (stream->part < stream->count)
			stream->position = stream->parts[stream->part].first;
		else if (stream->multipart &&
			 add_text(stream, text, multipart_closing(text, sizeof(text),
								  stream->boundary)) < 0)
			return -1;
	}
	return 0;
}

static void on_drained(struct exchange *exchange, void *arg)
{
	struct gridfs_stream *stream = arg;
	if (!exchange_stream_alive(exchange)) {
		log_debug("mid=%s: client left after %" PRIu64 " GridFS bytes", stream->mid,
			  stream->sent);
		stream_free(stream);
		return;
	}
	fetch(exchange, stream);
}

/* Reads on, or waits for the client first when the next chunk would overfill the window. */
static void read_on(struct exchange *exchange, struct gridfs_stream *stream)
{
	const struct byte_range *part = &stream->parts[stream->part];
	uint64_t chunk_end = (stream->position / stream->file.chunk_size + 1) *
				     stream->file.chunk_size - 1;
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

/* The head: 0 (the body follows), 1 (complete already: HEAD) or -1. */
static int send_head(struct exchange *exchange, struct gridfs_stream *stream)
{
	if (stream->whole)
		return response_stream_file(exchange, &stream->response);
	if (stream->multipart)
		return response_stream_multipart(exchange, &stream->response, stream->parts,
						 stream->count, stream->boundary);
	return response_stream_range(exchange, &stream->response, &stream->parts[0]);
}

static void on_fetched(struct exchange *exchange, void *arg)
{
	struct gridfs_stream *stream = arg;
	if (!stream->started) {
		if (!exchange_can_respond(exchange)) {
			stream_free(stream); /* the client left, or the deadline answered */
			return;
		}
		if (stream->job.status != LOOKUP_FOUND) {
			answer_failure(exchange, stream);
			stream_free(stream);
			return;
		}
		int started = send_head(exchange, stream);
		if (started != 0) {
			stream_free(stream);
			return;
		}
		stream->started = 1;
	} else if (!exchange_stream_alive(exchange)) {
		stream_free(stream);
		return;
	} else if (stream->job.status != LOOKUP_FOUND) {
		log_error("mid=%s: %s: %s; closing the connection after %" PRIu64 " of its bytes",
			  stream->mid,
			  stream->job.status == LOOKUP_BAD_DATA ? "data error"
								: lookup_status_describe(stream->job.status),
			  stream->job.detail, stream->sent);
		exchange_stream_abort(exchange);
		stream_free(stream);
		return;
	}
	if (take_fetched(stream) < 0) {
		log_error("mid=%s: out of memory streaming GridFS file %s; closing the connection",
			  stream->mid, stream->file.id);
		exchange_stream_abort(exchange);
		stream_free(stream);
		return;
	}
	stream->sent += evbuffer_get_length(stream->ready);
	if (exchange_stream_append(exchange, stream->ready) < 0 || stream->part == stream->count) {
		stream_free(stream); /* closed, or the last byte is queued */
		return;
	}
	read_on(exchange, stream);
}

static void on_deadline(struct exchange *exchange, void *arg)
{
	struct gridfs_stream *stream = arg;
	log_warn("mid=%s: GridFS file %s: database did not answer within %u ms", stream->mid,
		 stream->file.id, exchange_config(exchange)->lookup_timeout_ms);
	response_send_error(exchange, 503);
}

/* Asks a lookup thread for the next span: as many chunks as the window has room for. */
static void fetch(struct exchange *exchange, struct gridfs_stream *stream)
{
	size_t queued = exchange_stream_queued(exchange);
	uint64_t room = queued < stream->window ? stream->window - queued : 0;
	stream->span = gridfs_span_next(&stream->file, stream->position,
					stream->parts[stream->part].last, room);
	stream->job.call = read_span;
	stream->job.call_arg = stream;
	if (exchange_call(exchange, &stream->job, on_fetched, on_deadline, stream) == 0)
		return;
	if (stream->started) {
		log_warn("mid=%s: cannot queue a GridFS read (too many lookups in flight, or "
			 "stopping); closing the connection after %" PRIu64 " bytes",
			 stream->mid, stream->sent);
		exchange_stream_abort(exchange);
	} else {
		log_warn("mid=%s: cannot queue a GridFS read: too many in flight", stream->mid);
		response_send_error(exchange, 503);
	}
	stream_free(stream);
}

/* The last path segment of the request target, without its query: only its extension matters. */
static void target_name(const char *target, char out[NAME_TAIL_MAX])
{
	size_t end = strcspn(target, "?#");
	size_t start = end;
	while (start > 0 && target[start - 1] != '/')
		start--;
	if (end - start >= NAME_TAIL_MAX)
		start = end - (NAME_TAIL_MAX - 1);
	memcpy(out, target + start, end - start);
	out[end - start] = '\0';
}

/* Sends the decided answer from the spooled copy (fd, taken over), by sendfile. */
static void serve_copy(struct exchange *exchange, struct gridfs_stream *stream, int fd)
{
	struct evbuffer_file_segment *segment = evbuffer_file_segment_new(
		fd, 0, (ev_off_t)stream->file.length, EVBUF_FS_CLOSE_ON_FREE);
	if (segment == NULL) {
		close(fd);
		log_error("mid=%s: out of memory sending the copy of GridFS file %s", stream->mid,
			  stream->file.id);
		response_send_error(exchange, 500);
		return;
	}
	stream->response.segment = segment;
	if (stream->whole)
		response_send_file(exchange, &stream->response);
	else if (stream->multipart)
		response_send_multipart(exchange, &stream->response, stream->parts, stream->count);
	else
		response_send_range(exchange, &stream->response, &stream->parts[0]);
	stream->response.segment = NULL;
	evbuffer_file_segment_free(segment); /* the response holds its own references */
}

/* Starts reading the ranges from GridFS itself; owns the stream from here. */
static void stream_from_gridfs(struct exchange *exchange, struct gridfs_stream *stream)
{
	stream->position = stream->parts[0].first;
	stream->fetched = evbuffer_new();
	stream->ready = evbuffer_new();
	if (stream->fetched == NULL || stream->ready == NULL) {
		log_error("mid=%s: out of memory for a GridFS response", stream->mid);
		response_send_error(exchange, 500);
		stream_free(stream);
		return;
	}
	fetch(exchange, stream);
}

/* The spool's fill of this file ended: send the copy, or read GridFS after all. */
static void on_spooled(struct exchange *exchange, void *arg)
{
	struct gridfs_stream *stream = arg;
	if (!exchange_can_respond(exchange)) {
		stream_free(stream);
		return;
	}
	if (stream->job.status == LOOKUP_FOUND) {
		int fd = gridfs_spool_open_copy(stream->spool, &stream->file);
		if (fd >= 0) {
			serve_copy(exchange, stream, fd);
			stream_free(stream);
			return;
		}
	} else {
		log_debug("mid=%s: no spooled copy (%s): reading GridFS", stream->mid,
			  stream->job.detail);
	}
	stream_from_gridfs(exchange, stream);
}

void gridfs_stream_serve(struct exchange *exchange, const char *mid,
			 const struct gridfs_file *file, struct gridfs_spool *spool)
{
	const struct config *config = exchange_config(exchange);
	char name[NAME_TAIL_MAX];
	/* Room for as many ranges as serve_decide may return. */
	struct gridfs_stream *stream =
		calloc(1, sizeof(*stream) + config->max_ranges * sizeof(stream->parts[0]));
	if (stream == NULL) {
		log_error("mid=%s: out of memory for a GridFS response", mid);
		response_send_error(exchange, 500);
		return;
	}
	snprintf(stream->mid, sizeof(stream->mid), "%s", mid);
	stream->spool = spool;
	stream->file = *file;
	stream->window = config->gridfs_window;
	struct response_file *response = &stream->response;
	response->size = file->length;
	response->mtime = gridfs_last_modified(file);
	target_name(exchange_target(exchange), name);
	response->content_type = gridfs_content_type(&stream->file, name);
	response->cache_control = config->cache_control;
	gridfs_etag(response->etag, file);
	http_date_format(response->last_modified, response->mtime);
	if (head_file_lines(stream->file_lines, sizeof(stream->file_lines),
			    response->last_modified, response->etag, config->cache_control) == 0) {
		log_error("mid=%s: GridFS file %s: validators do not fit a head", mid, file->id);
		response_send_error(exchange, 500);
		goto done;
	}
	response->file_lines = stream->file_lines;

	switch (serve_decide(exchange, response, stream->parts, &stream->count)) {
	case SERVE_NOT_MODIFIED:
		response_send_not_modified(exchange, response);
		goto done;
	case SERVE_PRECONDITION_FAILED:
		response_send_error(exchange, 412);
		goto done;
	case SERVE_UNSATISFIABLE:
		response_send_unsatisfiable(exchange, response);
		goto done;
	case SERVE_WHOLE:
		stream->whole = 1;
		stream->count = 1;
		stream->parts[0] = (struct byte_range){0, file->length ? file->length - 1 : 0};
		break;
	case SERVE_PARTS:
		stream->multipart = stream->count > 1;
		break;
	}
	if (exchange_is_head(exchange) || file->length == 0) {
		send_head(exchange, stream); /* headers only, or an empty 200 */
		goto done;
	}
	if (spool != NULL) {
		int fd = gridfs_spool_open_copy(spool, file);
		if (fd >= 0) {
			serve_copy(exchange, stream, fd);
			goto done;
		}
		/* The copy's fill (one for every request that asks meanwhile), then the copy. */
		if (exchange_await(exchange, &stream->job, on_spooled, stream) == 0) {
			gridfs_spool_wait(spool, file, &stream->job);
			return;
		}
	}
	stream_from_gridfs(exchange, stream);
	return;
done:
	stream_free(stream);
}
