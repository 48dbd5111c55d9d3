/*
 * pacing: the recorded body (pieces: a text's bytes, or a file segment's
 * range), its allowance, and the feed that moves slices of it to the
 * output. The body a fill writes (exchange_body_add, exchange_body_add_segment)
 * goes straight to the output when the response is not paced, and is
 * recorded here when it is. A paced response costs one allocation for
 * itself (its timer and first pieces inside), and an evbuffer for the
 * segments' references or one for the texts.
 */
#include "wire/pacing.h"

#include <event2/event_struct.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "wire/exchange.h"
#include "wire/wire_state.h"

/* Pieces kept inside the pacing: a body of one range, or a stream's one growing text. */
#define PIECES_INLINE 2

struct piece {
	struct evbuffer_file_segment *segment; /* NULL: the next length bytes of texts */
	uint64_t offset, length;	       /* a segment's range, a text's length */
};

struct pacing {
	struct exchange *exchange;
	uint64_t rate, after;	  /* bytes per second, and those sent at once first */
	uint64_t slice;		  /* what a feed waits for once the allowance is steady */
	struct timespec started;  /* when the body began */
	uint64_t fed;		  /* body bytes moved to the output */
	struct event timer;	  /* the wait for allowance or for the socket */
	struct evbuffer *texts;	  /* the text pieces' bytes, in order; NULL until one */
	struct evbuffer *holds;	  /* a chain per segment piece: its reference; NULL until one */
	struct piece *pieces;	  /* inline, or malloc'd once more are recorded */
	size_t count, capacity;
	size_t next;		  /* the piece being fed */
	uint64_t next_done;	  /* its bytes fed already */
	uint64_t held;		  /* recorded and not yet fed */
	struct piece inline_pieces[PIECES_INLINE];
};

uint64_t pacing_slice(uint64_t rate)
{
	uint64_t slice = rate / (1000 / PACING_INTERVAL_MS);
	return slice > PACING_SLICE_MIN ? slice : PACING_SLICE_MIN;
}

double pacing_allowed(uint64_t rate, uint64_t after, double seconds)
{
	return (double)after + (double)pacing_slice(rate) + (double)rate * (seconds > 0 ? seconds : 0);
}

static void on_timer(evutil_socket_t fd, short what, void *arg);

int pacing_start(struct exchange *exchange)
{
	struct pacing *pacing = calloc(1, sizeof(*pacing));
	if (pacing == NULL)
		return -1;
	if (evtimer_assign(&pacing->timer, exchange->server->base, on_timer, pacing) < 0) {
		free(pacing);
		return -1;
	}
	pacing->exchange = exchange;
	pacing->rate = exchange->pace_rate;
	pacing->after = exchange->pace_after;
	pacing->slice = pacing_slice(exchange->pace_rate);
	pacing->started = clock_now();
	pacing->pieces = pacing->inline_pieces;
	pacing->capacity = PIECES_INLINE;
	exchange->pacing = pacing;
	metrics_count_paced(exchange->server->settings->metrics);
	return 0;
}

void pacing_free(struct pacing *pacing)
{
	if (pacing == NULL)
		return;
	event_del(&pacing->timer);
	if (pacing->texts != NULL)
		evbuffer_free(pacing->texts);
	if (pacing->holds != NULL)
		evbuffer_free(pacing->holds); /* the segments' references */
	if (pacing->pieces != pacing->inline_pieces)
		free(pacing->pieces);
	free(pacing);
}

uint64_t pacing_held(const struct pacing *pacing)
{
	return pacing != NULL ? pacing->held : 0;
}

/* --- The record --- */

static struct piece *new_piece(struct pacing *pacing)
{
	if (pacing->count == pacing->capacity) {
		size_t capacity = pacing->capacity * 2;
		struct piece *grown = malloc(capacity * sizeof(*grown));
		if (grown == NULL)
			return NULL;
		memcpy(grown, pacing->pieces, pacing->count * sizeof(*grown));
		if (pacing->pieces != pacing->inline_pieces)
			free(pacing->pieces);
		pacing->pieces = grown;
		pacing->capacity = capacity;
	}
	return &pacing->pieces[pacing->count++];
}

/* The last piece, when it is a text not yet wholly fed: new text can join it. */
static struct piece *open_text(struct pacing *pacing)
{
	if (pacing->count == 0 || pacing->count == pacing->next)
		return NULL;
	struct piece *last = &pacing->pieces[pacing->count - 1];
	return last->segment == NULL ? last : NULL;
}

/* length more bytes at the end of texts belong to the body. */
static int add_text_piece(struct pacing *pacing, size_t length)
{
	struct piece *piece = open_text(pacing);
	if (piece == NULL && (piece = new_piece(pacing)) != NULL)
		*piece = (struct piece){.length = 0};
	if (piece == NULL)
		return -1;
	piece->length += length;
	pacing->held += length;
	return 0;
}

static int have_texts(struct pacing *pacing)
{
	return pacing->texts != NULL || (pacing->texts = evbuffer_new()) != NULL ? 0 : -1;
}

int pacing_add_part(struct pacing *pacing, struct evbuffer *part)
{
	size_t length = evbuffer_get_length(part);
	if (length == 0)
		return 0;
	if (have_texts(pacing) < 0 || evbuffer_add_buffer(pacing->texts, part) < 0)
		return -1;
	return add_text_piece(pacing, length);
}

int exchange_body_add(struct exchange_body *body, const void *data, size_t length)
{
	struct pacing *pacing = body->pacing;
	if (pacing == NULL) {
		if (exchange_body_queue_kept(body) < 0)
			return -1;
		if (body->file_bytes == 0)
			body->text_before_file += length;
		return evbuffer_add(body->output, data, length);
	}
	if (length == 0)
		return 0;
	if (have_texts(pacing) < 0 || evbuffer_add(pacing->texts, data, length) < 0)
		return -1;
	return add_text_piece(pacing, length);
}

int exchange_body_add_segment(struct exchange_body *body, struct evbuffer_file_segment *segment,
			      int fd, uint64_t offset, uint64_t length)
{
	struct pacing *pacing = body->pacing;
	if (pacing == NULL) {
		int kept = exchange_body_keep_part(body, segment, fd, offset, length);
		if (kept < 0) {
			evbuffer_file_segment_free(segment); /* as a failed add would */
			return -1;
		}
		body->file_bytes += length;
		if (kept)
			return 0;
		return evbuffer_add_file_segment(body->output, segment, (ev_off_t)offset,
						 (ev_off_t)length);
	}
	if (pacing->holds == NULL) {
		/* Flagged as a socket's output is, so the segment is referenced, never read in. */
		if ((pacing->holds = evbuffer_new()) == NULL ||
		    evbuffer_set_flags(pacing->holds, EVBUFFER_FLAG_DRAINS_TO_FD) < 0) {
			/* As a failed evbuffer_add_file_segment would, the caller's reference goes. */
			evbuffer_file_segment_free(segment);
			return -1;
		}
	}
	/* The reference every slice of this piece is cut from (a failed add drops the caller's). */
	if (evbuffer_add_file_segment(pacing->holds, segment, (ev_off_t)offset, (ev_off_t)length) < 0)
		return -1;
	struct piece *piece = new_piece(pacing);
	if (piece == NULL)
		return -1;
	*piece = (struct piece){.segment = segment, .offset = offset, .length = length};
	pacing->held += length;
	return 0;
}

/* --- The feed --- */

static void wait_for(struct pacing *pacing, double seconds)
{
	long microseconds = (long)(seconds * 1e6) + 1;
	if (microseconds < 1000)
		microseconds = 1000; /* the loop's clock is a millisecond's */
	struct timeval delay = {.tv_sec = microseconds / 1000000, .tv_usec = microseconds % 1000000};
	evtimer_add(&pacing->timer, &delay);
}

/* Moves length bytes of the record, from where the feed stopped, to output; 0 or -1. */
static int move_to(struct pacing *pacing, struct evbuffer *output, uint64_t length)
{
	while (length > 0) {
		struct piece *piece = &pacing->pieces[pacing->next];
		uint64_t take = piece->length - pacing->next_done;
		if (take > length)
			take = length;
		int moved = piece->segment != NULL
				    ? evbuffer_add_file_segment(output, piece->segment,
								(ev_off_t)(piece->offset + pacing->next_done),
								(ev_off_t)take)
				    : (evbuffer_remove_buffer(pacing->texts, output, (size_t)take) ==
						       (int)take
					       ? 0
					       : -1);
		if (moved < 0)
			return -1;
		pacing->next_done += take;
		pacing->held -= take;
		pacing->fed += take;
		length -= take;
		if (pacing->next_done == piece->length) {
			pacing->next++;
			pacing->next_done = 0;
		}
	}
	if (pacing->next == pacing->count)
		pacing->next = pacing->count = 0; /* everything recorded went out: start the array again */
	return 0;
}

/*
 * What the next feed waits for: a slice, or the rest when less is left (a
 * multipart answer's closing boundary must not wait a whole slice).
 */
static uint64_t next_slice(const struct pacing *pacing)
{
	return pacing->slice < pacing->held ? pacing->slice : pacing->held;
}

/* Waits until the next slice is due, due bytes being due already. */
static void wait_for_next_slice(struct pacing *pacing, double due)
{
	wait_for(pacing, ((double)next_slice(pacing) - due) / (double)pacing->rate);
}

void pacing_feed(struct exchange *exchange)
{
	struct pacing *pacing = exchange->pacing;
	struct evbuffer *output =
		bufferevent_get_output(evhttp_connection_get_bufferevent(
			evhttp_request_get_connection(exchange->req)));
	if (pacing->held == 0 || evtimer_pending(&pacing->timer, NULL))
		return; /* a stream's next part is awaited (its append feeds again), or a wait is on */
	double rate = (double)pacing->rate;
	if (evbuffer_get_length(output) >= pacing->slice) {
		/* The client is behind the rate: nothing more until the socket took a slice. */
		wait_for(pacing, (double)pacing->slice / rate);
		return;
	}
	double due = pacing_allowed(pacing->rate, pacing->after,
				    clock_seconds_since(&pacing->started)) -
		     (double)pacing->fed;
	uint64_t length = due < (double)pacing->held ? (due > 0 ? (uint64_t)due : 0) : pacing->held;
	if (length < next_slice(pacing)) {
		/* Less than a slice is due: wait until a whole one is, rather than trickle. */
		wait_for_next_slice(pacing, due);
		return;
	}
	if (move_to(pacing, output, length) < 0) {
		log_error("out of memory feeding a paced response; closing the connection");
		exchange_stream_abort(exchange);
		return;
	}
	if (pacing->held > 0)
		wait_for_next_slice(pacing, due - (double)length); /* under a byte was due and not sent */
	/* Last: with the final byte this completes the response, and may free the exchange. */
	exchange_stream_added(exchange, (size_t)length);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct pacing *pacing = arg;
	(void)fd;
	(void)what;
	pacing_feed(pacing->exchange);
}
