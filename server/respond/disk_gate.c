/*
 * disk_gate: one read at a time per response (the exchange's one wait), the
 * range the last completed read brought in, and the decision per window:
 *
 *   in the page cache                 -> send it; read the next window ahead
 *   a read of it under way            -> wait for that read
 *   read already, and gone again      -> counted as evicted, read again
 *                                        (up to EVICTIONS_MAX times a window:
 *                                        then the range is copied into memory
 *                                        on the pool and sent from there, so
 *                                        the loop never reads the storage)
 *   not in the cache                  -> read it (and what follows, up to a
 *                                        window), then send it
 *
 * Where the kernel cannot tell what is cached (DISK_MAY_BLOCK), a window the
 * gate has read counts as in memory.
 */
#include "respond/disk_gate.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "base/log.h"
#include "wire/wait.h"

/* Times one window is read again after its pages were evicted, before it is copied instead. */
#define EVICTIONS_MAX 2

/* Kept small: a listener of a long track holds one for as long as it plays. */
struct disk_gate {
	struct disk_read *read;	    /* the read in flight or last done; made at the first one */
	struct exchange *exchange; /* valid while the feed holds the gate */
	struct disk_io *io;
	struct disk_file *file;	    /* for disk_residency; kept by the keeper */
	void (*release)(void *owner); /* the keeper's, and what it keeps: held until the gate goes */
	void *owner;
	uint64_t read_from, read_to; /* what the last read brought in: [from, to), empty when equal */
	char *copy;		    /* [copy_from, copy_to) in memory, not yet sent; NULL: none */
	uint64_t copy_from, copy_to;
	uint64_t evicted_at;	    /* the window found evicted last, and how often */
	uint32_t window;
	uint16_t lane;
	uint8_t evictions;
	uint8_t refs;		    /* the feed's, and the read's in flight */
	bool feeding;		    /* the feed still holds the gate */
	bool reading;		    /* a read is in flight: read.offset, read.length */
};

static void gate_unref(struct disk_gate *gate)
{
	if (--gate->refs > 0)
		return;
	gate->release(gate->owner);
	free(gate->copy);
	free(gate->read);
	free(gate);
}

static bool was_read(const struct disk_gate *gate, int fd, uint64_t offset, uint64_t length)
{
	return fd == disk_file_fd(gate->file) && offset >= gate->read_from &&
	       offset + length <= gate->read_to;
}

static void on_read_done(struct exchange *exchange, void *arg)
{
	struct disk_gate *gate = arg;
	struct disk_read *read = gate->read;
	char *copy = read->into;
	read->into = NULL;
	gate->reading = false;
	bool feeding = gate->feeding;
	if (read->work.skipped || read->error_number != 0 || (copy != NULL && read->read == 0)) {
		if (feeding)
			log_error("reading a track's window at %llu: %s; closing the connection",
				  (unsigned long long)read->offset,
				  read->work.skipped	     ? "stopping"
				  : read->error_number != 0 ? strerror(read->error_number)
							     : "the file is shorter than it was");
		free(copy);
		gate_unref(gate);
		if (feeding)
			exchange_stream_abort(exchange); /* the client sees a short body, never wrong bytes */
		return;
	}
	if (copy != NULL) {
		disk_io_count_copied(gate->io);
		free(gate->copy);
		gate->copy = copy;
		gate->copy_from = read->offset;
		gate->copy_to = read->offset + read->read;
	} else {
		gate->read_from = read->offset;
		gate->read_to = read->offset + read->read;
	}
	gate_unref(gate);
	if (feeding)
		exchange_window_arrived(exchange);
}

/*
 * Starts reading [offset, offset + length) of fd, into the page cache, or
 * into memory at into (given to the gate at the read's end); false when it
 * cannot be asked for (into is the caller's again).
 */
static bool start_read(struct disk_gate *gate, int fd, uint64_t offset, uint64_t length,
		       char *into)
{
	/* Most streams never need one: every window of a cached track is in memory. */
	bool first = gate->read == NULL; /* the stream's first read tells the file it is read in order */
	if (first && (gate->read = malloc(sizeof(*gate->read))) == NULL)
		return false;
	struct event *delivery = exchange_wait(gate->exchange, 0, on_read_done, NULL, gate);
	if (delivery == NULL)
		return false;
	*gate->read = (struct disk_read){.work.delivery = delivery, .fd = fd, .file = gate->file,
					 .offset = offset, .length = length, .into = into,
					 .first = first};
	if (disk_io_submit(gate->io, &gate->read->work, disk_read_run, gate->lane, TASK_CONTINUE) <
	    0) {
		exchange_wait_cancel(gate->exchange);
		return false;
	}
	gate->reading = true;
	gate->refs++;
	return true;
}

/* Whether the read in flight asks for all of [offset, offset + length). */
static bool reading_covers(const struct disk_gate *gate, uint64_t offset, uint64_t length)
{
	return gate->reading && offset >= gate->read->offset &&
	       offset + length <= gate->read->offset + gate->read->length;
}

/* Whether [offset, offset + length) may be sent from the loop: in memory, or read just now. */
static bool in_memory(const struct disk_gate *gate, int fd, uint64_t offset, uint64_t length)
{
	(void)fd; /* the feed's pieces are all of this one file */
	switch (disk_residency(gate->file, offset, length)) {
	case DISK_CACHED:
		return true;
	case DISK_MAY_BLOCK:
		return was_read(gate, fd, offset, length);
	case DISK_NOT_CACHED:
		break;
	}
	return false;
}

/* Puts the copy's bytes from offset on, up to length, on output; false if out of memory. */
static bool send_copy(struct disk_gate *gate, uint64_t offset, uint64_t length,
		      struct evbuffer *output)
{
	uint64_t left = gate->copy_to - offset;
	uint64_t part = length < left ? length : left;
	if (evbuffer_add(output, gate->copy + (offset - gate->copy_from), (size_t)part) < 0)
		return false;
	if (part == left) {
		free(gate->copy);
		gate->copy = NULL;
	}
	return true;
}

/*
 * Memory this short (the window went EVICTIONS_MAX times): [offset, offset +
 * length) is read into memory, where nothing evicts it.
 */
static enum feed_gate_say copy_instead(struct disk_gate *gate, int fd, uint64_t offset,
				       uint64_t length)
{
	char *into = malloc((size_t)length);
	if (into != NULL && start_read(gate, fd, offset, length, into))
		return FEED_GATE_WAIT;
	free(into);
	return FEED_GATE_FAILED;
}

static enum feed_gate_say gate_ready(void *arg, int fd, uint64_t offset, uint64_t length,
				     uint64_t ahead, struct evbuffer *output)
{
	struct disk_gate *gate = arg;
	if (gate->copy != NULL && offset >= gate->copy_from && offset < gate->copy_to)
		return send_copy(gate, offset, length, output) ? FEED_GATE_COPIED : FEED_GATE_FAILED;
	/*
	 * The read under way brings these bytes: looked at once it is in (its
	 * arrival runs the feed), not now: a look now costs a mincore a window
	 * and would mostly find the window still coming.
	 */
	if (reading_covers(gate, offset, length))
		return FEED_GATE_WAIT;
	if (!in_memory(gate, fd, offset, length)) {
		if (gate->reading)
			return FEED_GATE_WAIT; /* looked at again once the read under way is in */
		if (was_read(gate, fd, offset, length)) {
			/* Read ahead, and evicted before its turn: read again, a few times. */
			disk_io_count_evicted(gate->io);
			gate->evictions = gate->evicted_at == offset ? gate->evictions + 1 : 1;
			gate->evicted_at = offset;
			if (gate->evictions > EVICTIONS_MAX)
				return copy_instead(gate, fd, offset, length);
		}
		/* This window and what follows it, up to a window in all. */
		uint64_t more = length + ahead < gate->window ? length + ahead : gate->window;
		return start_read(gate, fd, offset, more > length ? more : length, NULL)
			       ? FEED_GATE_WAIT
			       : FEED_GATE_FAILED;
	}
	/*
	 * These bytes go now. What follows them is read ahead while they are sent,
	 * a window at a time from where the last read ended, once less than half a
	 * window of it is read.
	 */
	uint64_t sent_to = offset + length, end = sent_to + ahead;
	uint64_t read_to = gate->read_from <= sent_to && gate->read_to > sent_to
				   ? gate->read_to
				   : sent_to;
	if (!gate->reading && read_to < end && read_to - sent_to < gate->window / 2) {
		uint64_t next_length = end - read_to < gate->window ? end - read_to : gate->window;
		if (!in_memory(gate, fd, read_to, next_length))
			start_read(gate, fd, read_to, next_length, NULL);
	}
	return FEED_GATE_SEND;
}

static void gate_release(void *arg)
{
	struct disk_gate *gate = arg;
	gate->feeding = false;
	gate_unref(gate);
}

int disk_gate_attach(struct exchange *exchange, struct disk_io *io, unsigned lane,
		     struct disk_file *file, uint64_t window, const struct file_keeper *keeper)
{
	struct disk_gate *gate = calloc(1, sizeof(*gate));
	if (gate == NULL)
		return -1;
	*gate = (struct disk_gate){
		.exchange = exchange,
		.io = io,
		.lane = lane,
		.file = file,
		.window = window,
		.refs = 1,
		.feeding = true,
		.evicted_at = UINT64_MAX,
		.release = keeper->release,
		.owner = keeper->owner,
	};
	keeper->hold(keeper->owner);
	exchange_feed_windows(exchange, gate_ready, gate_release, gate, window);
	return 0;
}
