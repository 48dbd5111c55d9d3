/*
 * disk_gate: one read at a time per response (the exchange's one wait), the
 * range the last completed read brought in, and the decision per window:
 *
 *   in the page cache                 -> send it; read the next window ahead
 *   a read of it under way            -> wait for that read
 *   read already, and gone again      -> counted as evicted, read again
 *                                        (up to EVICTIONS_MAX times a window:
 *                                        then it is sent as it is)
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

#include "base/log.h"
#include "wire/wait.h"

/* Times one window is read again after its pages were evicted before it is sent anyway. */
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
	gate->reading = false;
	bool feeding = gate->feeding;
	if (read->work.skipped || read->error_number != 0) {
		if (feeding)
			log_error("reading a track's window at %llu: %s; closing the connection",
				  (unsigned long long)read->offset,
				  read->work.skipped ? "stopping" : strerror(read->error_number));
		gate_unref(gate);
		if (feeding)
			exchange_stream_abort(exchange); /* the client sees a short body, never wrong bytes */
		return;
	}
	gate->read_from = read->offset;
	gate->read_to = read->offset + read->read;
	gate_unref(gate);
	if (feeding)
		exchange_window_arrived(exchange);
}

/* Starts reading [offset, offset + length) of fd; false when it cannot be asked for. */
static bool start_read(struct disk_gate *gate, int fd, uint64_t offset, uint64_t length)
{
	/* Most streams never need one: every window of a cached track is in memory. */
	bool first = gate->read == NULL; /* the stream's first read tells the file it is read in order */
	if (first && (gate->read = malloc(sizeof(*gate->read))) == NULL)
		return false;
	struct event *delivery = exchange_wait(gate->exchange, 0, on_read_done, NULL, gate);
	if (delivery == NULL)
		return false;
	*gate->read = (struct disk_read){.work.delivery = delivery, .fd = fd, .file = gate->file,
					 .offset = offset, .length = length, .first = first};
	if (disk_io_submit(gate->io, &gate->read->work, disk_read_run, gate->lane, TASK_CONTINUE) <
	    0) {
		exchange_wait_cancel(gate->exchange);
		return false;
	}
	gate->reading = true;
	gate->refs++;
	return true;
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

static int gate_ready(void *arg, int fd, uint64_t offset, uint64_t length, uint64_t ahead)
{
	struct disk_gate *gate = arg;
	if (!in_memory(gate, fd, offset, length)) {
		if (gate->reading)
			return 0; /* looked at again once the read under way is in */
		if (was_read(gate, fd, offset, length)) {
			/* Read ahead, and evicted before its turn: read again, a few times. */
			disk_io_count_evicted(gate->io);
			gate->evictions = gate->evicted_at == offset ? gate->evictions + 1 : 1;
			gate->evicted_at = offset;
			if (gate->evictions > EVICTIONS_MAX)
				return 1; /* memory this short: sent as it is, the loop reads it */
		}
		/* This window and what follows it, up to a window in all. */
		uint64_t more = length + ahead < gate->window ? length + ahead : gate->window;
		return start_read(gate, fd, offset, more > length ? more : length) ? 0 : 1;
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
			start_read(gate, fd, read_to, next_length);
	}
	return 1;
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
