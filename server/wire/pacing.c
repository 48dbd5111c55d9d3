/*
 * pacing: the recorded body (pieces: a text's bytes, or a file segment's
 * range), its credit, and the feed that moves slices of it to the output.
 * The body a fill writes (exchange_body_add, exchange_body_add_segment) goes
 * straight to the output when the response is not paced, and is recorded
 * here when it is.
 */
#include "wire/pacing.h"

#include <stdlib.h>

#include "base/clock.h"
#include "base/log.h"
#include "wire/exchange.h"
#include "wire/wire_state.h"

#define PIECES_FIRST 4 /* a body of one range, or a short multipart one */

/* (Without libm, which nothing else needs.) */
static double larger(double a, double b)
{
	return a > b ? a : b;
}

struct piece {
	struct evbuffer_file_segment *segment; /* NULL: the next length bytes of texts */
	uint64_t offset, length;	       /* a segment's range, a text's length */
};

struct pacing {
	struct exchange *exchange;
	double rate;		  /* bytes per second */
	uint64_t slice;		  /* a feed's size once the credit is steady */
	double credit;		  /* bytes that may go out now */
	double credit_max;	  /* what refilling may raise it to */
	struct timespec refilled; /* when the credit was last topped up */
	struct event *timer;	  /* the wait for credit or for the socket */
	struct evbuffer *texts;	  /* the text pieces' bytes, in order; NULL until one */
	struct evbuffer *holds;	  /* a chain per segment piece: its reference; NULL until one */
	struct piece *pieces;
	size_t count, capacity;
	size_t next;		  /* the piece being fed */
	uint64_t next_done;	  /* its bytes fed already */
	uint64_t held;		  /* recorded and not yet fed */
};

uint64_t pacing_slice(uint64_t rate)
{
	uint64_t slice = rate / (1000 / PACING_INTERVAL_MS);
	return slice > PACING_SLICE_MIN ? slice : PACING_SLICE_MIN;
}

static void on_timer(evutil_socket_t fd, short what, void *arg);

int pacing_start(struct exchange *exchange)
{
	struct pacing *pacing = calloc(1, sizeof(*pacing));
	if (pacing == NULL)
		return -1;
	pacing->timer = evtimer_new(exchange->server->base, on_timer, pacing);
	if (pacing->timer == NULL) {
		free(pacing);
		return -1;
	}
	pacing->exchange = exchange;
	pacing->rate = (double)exchange->pace_rate;
	pacing->slice = pacing_slice(exchange->pace_rate);
	pacing->credit = (double)exchange->pace_after + (double)pacing->slice;
	pacing->credit_max = larger(pacing->rate * PACING_CREDIT_SECONDS, (double)pacing->slice);
	pacing->refilled = clock_now();
	exchange->pacing = pacing;
	metrics_count_paced(exchange->server->settings->metrics);
	return 0;
}

void pacing_free(struct pacing *pacing)
{
	if (pacing == NULL)
		return;
	event_free(pacing->timer);
	if (pacing->texts != NULL)
		evbuffer_free(pacing->texts);
	if (pacing->holds != NULL)
		evbuffer_free(pacing->holds); /* the segments' references */
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
		size_t capacity = pacing->capacity ? pacing->capacity * 2 : PIECES_FIRST;
		struct piece *grown = realloc(pacing->pieces, capacity * sizeof(*grown));
		if (grown == NULL)
			return NULL;
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
	if (pacing == NULL)
		return evbuffer_add(body->output, data, length);
	if (length == 0)
		return 0;
	if (have_texts(pacing) < 0 || evbuffer_add(pacing->texts, data, length) < 0)
		return -1;
	return add_text_piece(pacing, length);
}

int exchange_body_add_segment(struct exchange_body *body, struct evbuffer_file_segment *segment,
			      uint64_t offset, uint64_t length)
{
	struct pacing *pacing = body->pacing;
	if (pacing == NULL)
		return evbuffer_add_file_segment(body->output, segment, (ev_off_t)offset,
						 (ev_off_t)length);
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

static void refill(struct pacing *pacing)
{
	struct timespec now = clock_now();
	double earned = pacing->rate * clock_seconds_since(&pacing->refilled);
	pacing->refilled = now;
	/* Unused credit above the cap (the --limit-rate-after bytes) stays; refilling stops at it. */
	if (pacing->credit < pacing->credit_max)
		pacing->credit = pacing->credit + earned < pacing->credit_max ? pacing->credit + earned
									     : pacing->credit_max;
}

static void wait_for(struct pacing *pacing, double seconds)
{
	long microseconds = (long)(seconds * 1e6) + 1;
	if (microseconds < 1000)
		microseconds = 1000; /* the loop's clock is a millisecond's */
	struct timeval delay = {.tv_sec = microseconds / 1000000, .tv_usec = microseconds % 1000000};
	evtimer_add(pacing->timer, &delay);
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

void pacing_feed(struct exchange *exchange)
{
	struct pacing *pacing = exchange->pacing;
	struct evbuffer *output =
		bufferevent_get_output(evhttp_connection_get_bufferevent(
			evhttp_request_get_connection(exchange->req)));
	refill(pacing);
	if (pacing->held == 0)
		return; /* a stream's next part is awaited: its append feeds again */
	if (evtimer_pending(pacing->timer, NULL))
		return; /* a wait is on already */
	if (evbuffer_get_length(output) >= pacing->slice) {
		/* The client is behind the rate: nothing more until the socket took a slice. */
		wait_for(pacing, (double)pacing->slice / pacing->rate);
		return;
	}
	uint64_t allowed = (uint64_t)pacing->credit;
	uint64_t length = allowed < pacing->held ? allowed : pacing->held;
	uint64_t wanted = pacing->slice < pacing->held ? pacing->slice : pacing->held;
	if (length < wanted) {
		/* Less than a slice is due: wait until a whole one is, rather than trickle. */
		wait_for(pacing, ((double)wanted - pacing->credit) / pacing->rate);
		return;
	}
	if (move_to(pacing, output, length) < 0) {
		log_error("out of memory feeding a paced response; closing the connection");
		exchange_stream_abort(exchange);
		return;
	}
	pacing->credit -= (double)length;
	if (pacing->held > 0)
		wait_for(pacing, larger((double)pacing->slice - pacing->credit, 0) / pacing->rate);
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
