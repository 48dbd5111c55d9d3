/*
 * body_file: a decided plan's bytes as parts of one file segment, sent only
 * from the page cache, so that the loop's sendfile never waits for a disk.
 *
 *   the body's first window cached?
 *     yes: one window or less  -> head and body now (sendfile, as ever)
 *          more               -> head now, the body through a disk gate
 *                                (disk_gate.h: each next window read ahead)
 *     no:  read that window on the disk pool first (a start: when its lane's
 *          queue stays full past --disk-queue-timeout, 503 and Retry-After;
 *          a read error, 500), then as above
 *
 * The head waits for the first window, as nginx's does with `aio threads`,
 * so that a start refused for a full queue, or a file that cannot be read,
 * still gets a status of its own instead of a cut 200.
 *
 * Adding a segment cannot fail for a validated range except on allocation
 * failure, and a failed add drops the caller's reference to a segment the
 * open-file cache shares (libevent 2.1.12, evbuffer_add_file_segment; a fed
 * body's record keeps that contract, feed.h): so that aborts rather than
 * send a body short of its Content-Length.
 */
#include "respond/body_file.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "respond/answer.h"
#include "respond/disk_gate.h"
#include "respond/disk_start.h"
#include "wire/wait.h"

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
		log_flush(ABORT_LOG_WAIT_MS);
		abort();
	}
}

static void add_text(struct exchange_body *output, const char *text, size_t length)
{
	if (length == 0 || exchange_body_add(output, text, length) < 0) {
		log_error("cannot queue a multipart text: aborting");
		log_flush(ABORT_LOG_WAIT_MS);
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

/* The file bytes plan sends. */
static uint64_t plan_file_bytes(const struct file_plan *plan)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < plan->count; i++)
		bytes += plan->parts[i].last - plan->parts[i].first + 1;
	return bytes;
}

/* The head and the body, now; through a gate when the body is longer than a window. */
static void send_now(struct exchange *exchange, const struct request *request,
		     const struct representation *representation, const struct file_body *body,
		     const struct file_plan *plan, bool gated)
{
	if (gated && disk_gate_attach(exchange, body->io, body->lane, body->disk,
				      request->config->disk_window, &body->keeper) < 0)
		log_warn("out of memory for a disk gate: the body goes out ungated");
	struct file_head_text text;
	struct response_head head =
		file_plan_head(request, representation, body->download_path, plan, &text);
	struct file_fill file = {representation, body, plan};
	answer_send(exchange, request, &head, head.content_length, fill, &file);
}

/*
 * Whether every window the body starts with is in memory: the first window of
 * its first part, or, for a body of at most a window, each of its parts.
 */
static bool start_cached(const struct file_body *body, const struct file_plan *plan,
			 uint64_t window, bool small, struct byte_range *first)
{
	const struct byte_range *part = &plan->parts[0];
	uint64_t length = part->last - part->first + 1;
	*first = (struct byte_range){part->first, part->first + (length < window ? length : window) - 1};
	if (disk_residency(body->disk, first->first, first->last - first->first + 1) != DISK_CACHED)
		return false;
	for (size_t i = 1; small && i < plan->count; i++) {
		part = &plan->parts[i];
		if (disk_residency(body->disk, part->first, part->last - part->first + 1) !=
		    DISK_CACHED) {
			*first = *part;
			return false;
		}
	}
	return true;
}

/* --- A start whose first window is read first --- */

/* What the answer needs once the window is in: copies, the caller's are gone by then. */
struct waiting_start {
	struct disk_read read; /* first: the pool hands back its work */
	struct request request;
	struct representation representation;
	struct file_body body;
	struct file_plan plan;
	bool small;
	char *texts;		   /* content type, file lines, Cache-Control, download path */
	struct byte_range parts[]; /* plan.count */
};

static void waiting_free(struct waiting_start *start)
{
	start->body.keeper.release(start->body.keeper.owner);
	free(start->texts);
	free(start);
}

static char *copy_text(char **into, const char *text)
{
	if (text == NULL)
		return NULL;
	size_t size = strlen(text) + 1;
	char *copy = memcpy(*into, text, size);
	*into += size;
	return copy;
}

static size_t text_size(const char *text)
{
	return text != NULL ? strlen(text) + 1 : 0;
}

static struct waiting_start *waiting_new(const struct request *request,
					 const struct representation *representation,
					 const struct file_body *body,
					 const struct file_plan *plan, bool small)
{
	struct waiting_start *start = calloc(1, sizeof(*start) + plan->count * sizeof(start->parts[0]));
	size_t texts = text_size(representation->content_type) + text_size(representation->file_lines) +
		       text_size(representation->cache_control) + text_size(body->download_path);
	if (start == NULL || (start->texts = malloc(texts)) == NULL) {
		free(start);
		return NULL;
	}
	start->request = *request;
	start->representation = *representation;
	start->body = *body;
	start->plan = *plan;
	start->small = small;
	memcpy(start->parts, plan->parts, plan->count * sizeof(start->parts[0]));
	start->plan.parts = start->parts;
	char *next = start->texts;
	start->representation.content_type = copy_text(&next, representation->content_type);
	start->representation.file_lines = copy_text(&next, representation->file_lines);
	start->representation.cache_control = copy_text(&next, representation->cache_control);
	start->body.download_path = copy_text(&next, body->download_path);
	body->keeper.hold(body->keeper.owner); /* the file stays open while the window is read */
	return start;
}

static void on_first_window(struct exchange *exchange, void *arg)
{
	struct waiting_start *start = arg;
	struct disk_read *read = &start->read;
	if (!exchange_can_respond(exchange)) {
		/* The client left, or the queue's deadline answered. */
	} else if (read->work.skipped) {
		answer_error(exchange, &start->request, 503); /* stopping */
	} else if (read->error_number != 0) {
		log_error("%s: cannot be read: %s", start->body.download_path
							   ? start->body.download_path
							   : "a file",
			  strerror(read->error_number));
		answer_error(exchange, &start->request, 500);
	} else {
		send_now(exchange, &start->request, &start->representation, &start->body,
			 &start->plan, !start->small);
	}
	waiting_free(start);
}

/* No room in the lane's queue within --disk-queue-timeout: the start is taken back, 503. */
static void on_queue_deadline(struct exchange *exchange, void *arg)
{
	struct waiting_start *start = arg;
	const char *what = start->body.download_path ? start->body.download_path : "a file";
	if (!disk_start_refused(exchange, &start->request, start->body.io, &start->read.work, what,
				NULL))
		return; /* queued or under way: it is waited for */
	waiting_free(start);
}

static void read_first(struct exchange *exchange, const struct request *request,
		       const struct representation *representation, const struct file_body *body,
		       const struct file_plan *plan, bool small, const struct byte_range *first)
{
	struct waiting_start *start = waiting_new(request, representation, body, plan, small);
	if (start == NULL) {
		log_error("out of memory for a start waiting for the disk");
		answer_error(exchange, request, 500);
		return;
	}
	const struct config *config = request->config;
	start->read = (struct disk_read){
		.fd = body->fd,
		.file = body->disk,
		.offset = first->first,
		.length = first->last - first->first + 1,
		.first = true,
	};
	start->read.work.delivery = exchange_wait(exchange, config->disk_queue_timeout_ms,
						  on_first_window, on_queue_deadline, start);
	if (start->read.work.delivery == NULL) {
		waiting_free(start);
		log_error("out of memory for a start waiting for the disk");
		answer_error(exchange, request, 500);
		return;
	}
	if (disk_io_submit(body->io, &start->read.work, disk_read_run, body->lane, TASK_START) < 0) {
		exchange_wait_cancel(exchange);
		waiting_free(start);
		answer_error(exchange, request, 503); /* stopping */
	}
}

void body_file_send(struct exchange *exchange, const struct request *request,
		    const struct representation *representation, const struct file_body *body,
		    const struct file_plan *plan)
{
	uint64_t window = request->config->disk_window;
	bool small = plan_file_bytes(plan) <= window;
	struct byte_range first;
	if (body->io == NULL || body->disk == NULL || start_cached(body, plan, window, small, &first)) {
		send_now(exchange, request, representation, body, plan, body->io != NULL && !small);
		return;
	}
	read_first(exchange, request, representation, body, plan, small, &first);
}
