/*
 * exchange: one request's life on a worker, from evhttp handing it over to
 * the last byte written or the client vanishing. It owns what outlives the
 * request callback: the wait for a lookup (watching for the client leaving
 * and for the deadline), the response-time clock and the access-log line.
 *
 * Ownership: refcounted, touched only on its worker's thread. One reference
 * belongs to the request side (dropped when evhttp completes or drops the
 * request), one to a lookup in flight (dropped when its result is delivered
 * back on the worker's loop). req is NULL once evhttp has freed the request;
 * never use it after that.
 */
#ifndef MUSICD_EXCHANGE_H
#define MUSICD_EXCHANGE_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdint.h>
#include <time.h>

#include "lookup.h"

struct worker;

struct exchange {
	struct worker *worker;
	struct evhttp_request *req;	/* NULL once evhttp freed it */
	struct evhttp_connection *connection;
	struct timespec started;	/* CLOCK_MONOTONIC */
	time_t started_wall;
	int status;			/* 0 until a response is under way */
	uint64_t body_length;		/* body bytes the response promised */
	int refs;
	int close_after;		/* end the connection once this response is sent */

	/* While waiting on a lookup. */
	struct event *client_gone;	/* EV_CLOSED on the connection's socket */
	struct event *deadline;
	void (*on_deadline)(struct exchange *exchange);
	void (*on_lookup_result)(struct exchange *exchange);
	struct lookup_job job;
};

/*
 * Starts tracking req (once per request, from the request callback). The
 * caller holds a reference to release when its callback returns. NULL if out
 * of memory.
 */
struct exchange *exchange_begin(struct worker *worker, struct evhttp_request *req);

/* HEAD request? Its response carries headers only. */
int exchange_is_head(const struct exchange *exchange);

/* The request's method as it is written ("GET", "HEAD" ...). */
const char *exchange_method(const struct exchange *exchange);

/*
 * Looks mid up (kind LOOKUP_PROBE ignores it) in the lookup pool, within the
 * lookup deadline. Later, on the worker's loop, exactly one of on_result (the
 * job holds the answer) or on_deadline runs, and only while a response can
 * still be sent. -1 when the lookup cannot be queued: the caller answers 503.
 */
int exchange_lookup(struct exchange *exchange, enum lookup_kind kind, const char *mid,
		    void (*on_result)(struct exchange *exchange),
		    void (*on_deadline)(struct exchange *exchange));

/*
 * Ends the connection after this response ("Connection: close"). evhttp
 * honours that header itself, except after CONNECT, where it would keep the
 * connection: then the socket is shut down once the response is out.
 */
void exchange_close_after_response(struct exchange *exchange);

/* Records that a response with this status and body length is being sent. */
void exchange_responding(struct exchange *exchange, int status, uint64_t body_length);

/* Arms the send timeout for a long body (and disarms the idle read timeout, libevent #715). */
void exchange_body_started(struct exchange *exchange);

/* Drops a reference; the last one frees the exchange. */
void exchange_release(struct exchange *exchange);

#endif
