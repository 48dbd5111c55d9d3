/*
 * feed: the recorded body (pieces: a text's bytes, or a file segment's
 * range), what may move now (the pacing allowance, the output's room, the
 * gate's windows), and the move itself. A feed costs one allocation for
 * itself (its timer and first pieces inside), and an evbuffer for the
 * segments' references or one for the texts.
 */
#include "wire/feed.h"

#include <event2/event_struct.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "wire/pacing.h"

/* Pieces kept inside the feed: a body of one range (a multipart body grows the array). */
#define PIECES_INLINE 1

struct piece {
	struct evbuffer_file_segment *segment; /* NULL: the next length bytes of texts */
	int fd;				       /* the segment's descriptor, for the gate */
	uint64_t offset, length;	       /* a segment's range, a text's length */
};

/* What a paced feed has besides (made only for one: most feeds are not paced). */
struct pace {
	uint64_t rate, after;	 /* bytes per second, and those sent at once first */
	uint64_t slice;		 /* what a feed waits for once the allowance is steady */
	struct timespec started; /* when the body began */
	struct event *timer;	 /* the wait for allowance or for the socket */
};

/*
 * Kept small: every listener of a track longer than a window has one for as
 * long as it plays (minutes), so each byte here is a byte a listener.
 */
struct feed {
	const struct feed_sink_ops *ops;
	void *context;		  /* the sink's */
	struct evbuffer *output;
	struct feed_gate gate;	  /* gate.ready NULL: none */
	struct pace *pace;	  /* NULL: unpaced */
	uint64_t window;	  /* the most bytes of a file moved at once */
	uint64_t fed;		  /* body bytes moved to the output */
	uint64_t next_done;	  /* the piece being fed: its bytes fed already */
	uint64_t held;		  /* recorded and not yet fed */
	struct evbuffer *texts;	  /* the text pieces' bytes, in order; NULL until one */
	struct evbuffer *holds;	  /* a chain per segment piece: its reference; NULL until one */
	struct piece *pieces;	  /* inline, or malloc'd once more are recorded */
	uint32_t count, capacity;
	uint32_t next;		  /* the piece being fed */
	bool awaiting_room;	  /* unpaced: waiting for the output to drain */
	bool awaiting_gate;	  /* the gate is bringing the next window in */
	struct piece inline_pieces[PIECES_INLINE];
};

/* Unpaced and without a gate, a feed still moves a file this much at a time. */
#define FEED_WINDOW_DEFAULT ((uint64_t)1 << 20)
/*
 * Unpaced, the output is topped up this much at a time at most (a window may
 * be larger): one sendfile sends what is on the output, as much as the socket
 * takes, and on loopback a socket takes megabytes at once; a loop that sends
 * smaller parts turns to its other connections sooner (nginx's
 * sendfile_max_chunk, for the same reason).
 */
#define FEED_CHUNK_MAX ((uint64_t)256 * 1024)

static void on_timer(evutil_socket_t fd, short what, void *arg);

struct feed *feed_new(const struct feed_sink *sink, uint64_t rate, uint64_t after,
		      const struct feed_gate *gate)
{
	struct feed *feed = calloc(1, sizeof(*feed));
	if (feed != NULL && rate > 0 &&
	    ((feed->pace = calloc(1, sizeof(*feed->pace))) == NULL ||
	     (feed->pace->timer = evtimer_new(sink->base, on_timer, feed)) == NULL)) {
		free(feed->pace);
		free(feed);
		feed = NULL;
	}
	if (feed == NULL) {
		if (gate != NULL)
			gate->release(gate->arg);
		return NULL;
	}
	feed->ops = sink->ops;
	feed->context = sink->context;
	feed->output = sink->output;
	if (gate != NULL)
		feed->gate = *gate;
	if (feed->pace != NULL) {
		feed->pace->rate = rate;
		feed->pace->after = after;
		feed->pace->slice = pacing_slice(rate);
		feed->pace->started = clock_now();
	}
	feed->window = gate != NULL && gate->window > 0 ? gate->window : FEED_WINDOW_DEFAULT;
	feed->pieces = feed->inline_pieces;
	feed->capacity = PIECES_INLINE;
	return feed;
}

void feed_free(struct feed *feed)
{
	if (feed == NULL)
		return;
	if (feed->pace != NULL) {
		event_free(feed->pace->timer);
		free(feed->pace);
	}
	if (feed->texts != NULL)
		evbuffer_free(feed->texts);
	if (feed->holds != NULL)
		evbuffer_free(feed->holds); /* the segments' references */
	if (feed->pieces != feed->inline_pieces)
		free(feed->pieces);
	if (feed->gate.ready != NULL)
		feed->gate.release(feed->gate.arg);
	free(feed);
}

uint64_t feed_held(const struct feed *feed)
{
	return feed != NULL ? feed->held : 0;
}

/* --- The record --- */

static struct piece *new_piece(struct feed *feed)
{
	if (feed->count == feed->capacity) {
		uint32_t capacity = feed->capacity * 2;
		struct piece *grown = malloc(capacity * sizeof(*grown));
		if (grown == NULL)
			return NULL;
		memcpy(grown, feed->pieces, feed->count * sizeof(*grown));
		if (feed->pieces != feed->inline_pieces)
			free(feed->pieces);
		feed->pieces = grown;
		feed->capacity = capacity;
	}
	return &feed->pieces[feed->count++];
}

/* The last piece, when it is a text not yet wholly fed: new text can join it. */
static struct piece *open_text(struct feed *feed)
{
	if (feed->count == 0 || feed->count == feed->next)
		return NULL;
	struct piece *last = &feed->pieces[feed->count - 1];
	return last->segment == NULL ? last : NULL;
}

/* length more bytes at the end of texts belong to the body. */
static int add_text_piece(struct feed *feed, size_t length)
{
	struct piece *piece = open_text(feed);
	if (piece == NULL && (piece = new_piece(feed)) != NULL)
		*piece = (struct piece){.fd = -1};
	if (piece == NULL)
		return -1;
	piece->length += length;
	feed->held += length;
	return 0;
}

static int have_texts(struct feed *feed)
{
	return feed->texts != NULL || (feed->texts = evbuffer_new()) != NULL ? 0 : -1;
}

int feed_add_text(struct feed *feed, const void *data, size_t length)
{
	if (length == 0)
		return 0;
	if (have_texts(feed) < 0 || evbuffer_add(feed->texts, data, length) < 0)
		return -1;
	return add_text_piece(feed, length);
}

int feed_add_part(struct feed *feed, struct evbuffer *part)
{
	size_t length = evbuffer_get_length(part);
	if (length == 0)
		return 0;
	if (have_texts(feed) < 0 || evbuffer_add_buffer(feed->texts, part) < 0)
		return -1;
	return add_text_piece(feed, length);
}

int feed_add_segment(struct feed *feed, struct evbuffer_file_segment *segment, int fd,
		     uint64_t offset, uint64_t length)
{
	if (feed->gate.ready != NULL) {
		/* The gate keeps the file: no reference of the feed's own. */
		struct piece *piece = new_piece(feed);
		if (piece == NULL) {
			evbuffer_file_segment_free(segment); /* as a failed add would */
			return -1;
		}
		*piece = (struct piece){.segment = segment, .fd = fd, .offset = offset,
					.length = length};
		feed->held += length;
		return 0;
	}
	if (feed->holds == NULL) {
		/* Flagged as a socket's output is, so the segment is referenced, never read in. */
		if ((feed->holds = evbuffer_new()) == NULL ||
		    evbuffer_set_flags(feed->holds, EVBUFFER_FLAG_DRAINS_TO_FD) < 0) {
			/* As a failed evbuffer_add_file_segment would, the caller's reference goes. */
			evbuffer_file_segment_free(segment);
			return -1;
		}
	}
	/* The reference every part of this piece is cut from (a failed add drops the caller's). */
	if (evbuffer_add_file_segment(feed->holds, segment, (ev_off_t)offset, (ev_off_t)length) < 0)
		return -1;
	struct piece *piece = new_piece(feed);
	if (piece == NULL)
		return -1;
	*piece = (struct piece){.segment = segment, .fd = fd, .offset = offset, .length = length};
	feed->held += length;
	return 0;
}

/* --- The move --- */

static void wait_for(struct feed *feed, double seconds)
{
	long microseconds = (long)(seconds * 1e6) + 1;
	if (microseconds < 1000)
		microseconds = 1000; /* the loop's clock is a millisecond's */
	struct timeval delay = {.tv_sec = microseconds / 1000000, .tv_usec = microseconds % 1000000};
	evtimer_add(feed->pace->timer, &delay);
}

/*
 * Moves up to length bytes of the record, from where the feed stopped, to the
 * output, a file's bytes at most a window at a time and only once the gate
 * lets them go; the bytes moved, or -1 if out of memory.
 */
static int64_t move_to(struct feed *feed, uint64_t length)
{
	uint64_t moved = 0;
	while (moved < length && feed->next < feed->count) {
		struct piece *piece = &feed->pieces[feed->next];
		uint64_t take = piece->length - feed->next_done;
		if (take > length - moved)
			take = length - moved;
		int added;
		if (piece->segment != NULL) {
			if (take > feed->window)
				take = feed->window;
			uint64_t from = piece->offset + feed->next_done;
			enum feed_gate_say say = FEED_GATE_SEND;
			size_t before = 0; /* the output's length, for what a gate puts on it */
			if (feed->gate.ready != NULL) {
				before = evbuffer_get_length(feed->output);
				say = feed->gate.ready(feed->gate.arg, piece->fd, from, take,
						       piece->length - feed->next_done - take,
						       feed->output);
			}
			if (say == FEED_GATE_WAIT) {
				feed->awaiting_gate = true;
				break;
			}
			if (say == FEED_GATE_FAILED)
				return -1;
			if (say == FEED_GATE_COPIED) {
				uint64_t copied = evbuffer_get_length(feed->output) - before;
				added = copied > 0 && copied <= take ? 0 : -1;
				take = copied;
			} else {
				added = evbuffer_add_file_segment(feed->output, piece->segment,
								  (ev_off_t)from, (ev_off_t)take);
			}
		} else {
			added = evbuffer_remove_buffer(feed->texts, feed->output, (size_t)take) ==
					(int)take
				? 0
				: -1;
		}
		if (added < 0)
			return -1;
		feed->next_done += take;
		feed->held -= take;
		feed->fed += take;
		moved += take;
		if (feed->next_done == piece->length) {
			feed->next++;
			feed->next_done = 0;
		}
	}
	if (feed->next == feed->count)
		feed->next = feed->count = 0; /* everything recorded went out: start the array again */
	return (int64_t)moved;
}

/*
 * Paced: what the next feed waits for: a slice, or the rest when less is left
 * (a multipart answer's closing boundary must not wait a whole slice).
 */
static uint64_t next_slice(const struct feed *feed)
{
	return feed->pace->slice < feed->held ? feed->pace->slice : feed->held;
}

/* Paced: waits until the next slice is due, due bytes being due already. */
static void wait_for_next_slice(struct feed *feed, double due)
{
	wait_for(feed, ((double)next_slice(feed) - due) / (double)feed->pace->rate);
}

/* Unpaced: what a top-up moves at most. */
static uint64_t chunk_of(const struct feed *feed)
{
	return feed->window < FEED_CHUNK_MAX ? feed->window : FEED_CHUNK_MAX;
}

void feed_run(struct feed *feed)
{
	feed->awaiting_gate = false;
	if (feed->held == 0 || (feed->pace != NULL && evtimer_pending(feed->pace->timer, NULL)))
		return; /* a stream's next part is awaited (its append runs the feed), or a wait is on */
	size_t queued = evbuffer_get_length(feed->output);
	uint64_t length;
	double due = 0;
	if (feed->pace == NULL) {
		/*
		 * Topped up once the output is empty. The socket's own buffer still
		 * holds what it took, so the client waits for nothing meanwhile; and a
		 * part added before the last one is out would be a second evbuffer
		 * chain on the output (libevent allocates each at 1 KiB): every
		 * listener of a long track would carry two.
		 */
		if (queued > 0) {
			feed->awaiting_room = true; /* feed_output_changed runs it again */
			return;
		}
		feed->awaiting_room = false;
		length = chunk_of(feed);
	} else {
		const struct pace *pace = feed->pace;
		double rate = (double)pace->rate;
		if (queued >= pace->slice) {
			/* The client is behind the rate: nothing more until the socket took a slice. */
			wait_for(feed, (double)pace->slice / rate);
			return;
		}
		due = pacing_allowed(pace->rate, pace->after, clock_seconds_since(&pace->started)) -
		      (double)feed->fed;
		length = due < (double)feed->held ? (due > 0 ? (uint64_t)due : 0) : feed->held;
		if (length < next_slice(feed)) {
			/* Less than a slice is due: wait until a whole one is, rather than trickle. */
			wait_for_next_slice(feed, due);
			return;
		}
	}
	int64_t moved = move_to(feed, length);
	if (moved < 0) {
		feed->ops->failed(feed->context);
		return;
	}
	if (moved == 0)
		return; /* the gate brings the next window in, and runs the feed again */
	if (feed->pace != NULL && feed->held > 0 && !feed->awaiting_gate)
		wait_for_next_slice(feed, due - (double)moved); /* under a byte was due and not sent */
	if (feed->pace == NULL && feed->held > 0 && !feed->awaiting_gate)
		feed->awaiting_room = true; /* the output's draining (in added's write, or later) wakes it */
	/* Last: with the final byte this completes the response, and may free the feed. */
	feed->ops->added(feed->context, (size_t)moved);
}

bool feed_output_changed(struct feed *feed, size_t length)
{
	if (!feed->awaiting_room || length > 0) /* empty: topped up (feed_run) */
		return false;
	feed->awaiting_room = false;
	return true;
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct feed *feed = arg;
	(void)fd;
	(void)what;
	feed_run(feed);
}
