/*
 * feed: a response body recorded and moved to the connection's output a
 * part at a time, still by sendfile, for two reasons that may hold at once:
 *   - pacing (--limit-rate): what may have gone out by a moment is nginx's
 *     limit_rate allowance (pacing.h), and
 *   - the disk: a file's bytes go to the output only once the window they
 *     lie in is in the page cache (the gate, given by whoever made the
 *     body: respond/'s disk window), so the loop's sendfile never waits for
 *     a device; meanwhile the gate brings the window in off the loop, and the
 *     next one while this one is sent.
 * Without pacing, the output is topped up a part at a time (a window, at
 * most 256 KiB: feed.c says why) whenever it is empty (feed_output_changed). A feed is as small as
 * it can be, as every listener of a track longer than a window has one: an
 * unpaced feed has no timer of its own.
 *
 * A file segment cannot be cut once it is on an output: libevent 2.1.12's
 * evbuffer_write_atmost ignores its limit for a sendfile chain
 * (evbuffer_write_sendfile sends the whole chain, as much as the socket
 * takes), and evbuffer_remove_buffer cannot split one. So each part moved is
 * a segment range of its own, and no write can send more than is on the
 * output. bufferevent_set_rate_limit is not used for the same reason: its
 * bucket only learns afterwards what sendfile wrote.
 *
 * The feed knows nothing of the exchange above it: what it moved and a
 * failure are told through the sink's callbacks (the exchange's), and a
 * gate's window arriving comes back through feed_run. Inside wire/ only.
 *
 * Ownership: the feed is its exchange's (exchange->feed), freed when the
 * request side ends (the last byte written, or the client gone); without a
 * gate it holds a reference to each segment it still has to send (with one,
 * the gate keeps them), and it holds its gate (given back by the gate's
 * release, last).
 */
#ifndef MUSICD_FEED_H
#define MUSICD_FEED_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The disk's say on a file range (feed_gate_fn). */
enum feed_gate_say {
	FEED_GATE_WAIT,	  /* not yet: the gate brings the bytes in, then runs the feed again
			     through its owner */
	FEED_GATE_SEND,	  /* the range may be sent from the file now */
	FEED_GATE_COPIED, /* the gate put the range's first bytes (one at least) on output from
			     a copy in memory: the feed counts them as sent from the file */
	FEED_GATE_FAILED, /* the bytes cannot be brought in (out of memory, the pool stopped):
			     the answer fails, rather than the loop reading the storage */
};

/*
 * The disk's say on bytes [offset, offset + length) of fd, next to go to
 * output. ahead: the body's bytes in this file after the range, which the
 * gate may start bringing in meanwhile.
 */
typedef enum feed_gate_say (*feed_gate_fn)(void *arg, int fd, uint64_t offset, uint64_t length,
					   uint64_t ahead, struct evbuffer *output);

/*
 * The gate also keeps the files of the body's segments open until its release
 * (after the feed dropped every segment), so the feed holds no reference of
 * its own to them.
 */
struct feed_gate {
	feed_gate_fn ready;
	void (*release)(void *arg); /* the feed is done with the gate */
	void *arg;
	uint64_t window; /* the most bytes of a file one part moves */
};

/* Whom the feed tells (one set of functions for every feed: a feed keeps a pointer to it). */
struct feed_sink_ops {
	void (*added)(void *context, size_t length); /* moved to the output; may end the answer */
	void (*failed)(void *context);		      /* out of memory: the answer cannot go on */
};

/* Where the feed puts the body, and whom it tells. */
struct feed_sink {
	struct event_base *base; /* a paced feed's timer's */
	struct evbuffer *output;
	const struct feed_sink_ops *ops;
	void *context;
};

struct feed;

/*
 * A feed to sink, paced at rate bytes a second after the first after bytes
 * (rate 0: unpaced), through gate (NULL: none, taken over: released when the
 * feed is freed, or at once on failure). NULL if out of memory.
 */
struct feed *feed_new(const struct feed_sink *sink, uint64_t rate, uint64_t after,
		      const struct feed_gate *gate);

/* Records text (copied), a streamed part (its bytes move out of part), a segment range. */
int feed_add_text(struct feed *feed, const void *data, size_t length);
int feed_add_part(struct feed *feed, struct evbuffer *part);
/* As evbuffer_add_file_segment: a failure drops the caller's reference to segment. */
int feed_add_segment(struct feed *feed, struct evbuffer_file_segment *segment, int fd,
		     uint64_t offset, uint64_t length);

/* Bytes recorded and not yet on the output (0 for NULL). */
uint64_t feed_held(const struct feed *feed);

/*
 * Moves what may go now to the output and waits for the rest (a timer, the
 * output draining, or the gate). The sink's added callback runs last, and
 * may end the answer (and free the feed) when it is given the final byte.
 */
void feed_run(struct feed *feed);

/*
 * The output changed to length bytes queued: true when an unpaced feed waiting
 * for room wants to run again (the owner calls feed_run on the loop's next
 * turn, not inside the write that changed the output).
 */
bool feed_output_changed(struct feed *feed, size_t length);

/* Stops and frees it, dropping what was not sent. NULL is nothing. */
void feed_free(struct feed *feed);

#endif
