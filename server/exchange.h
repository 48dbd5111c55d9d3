/*
 * exchange: the connection and the request on the wire. It is the one module
 * that knows evhttp's private behaviour (libevent 2.1.12) and works around
 * it; everything above it (response, handlers, worker) sees requests that
 * are safe to answer and a way to send an answer.
 *
 * What it owns, per worker (an exchange_server):
 *   - accepting: the listener's errors (EMFILE ...) pause accepting briefly
 *     and are logged once per interval, never spun on; beyond
 *     --max-connections a new connection is closed at once;
 *   - each connection: a deadline for every request head (--header-timeout,
 *     from the connection's start or the head's first byte: 408), the idle
 *     keep-alive timeout, the no-progress send timeout, input bounded while
 *     a request waits or a response is written, and a client's FIN ending
 *     only its reading (the answer is still written in full);
 *   - stopping without dropping a connection (exchange_server_drain), and
 *     a lingering close for every connection it ends after a response;
 *   - each request (an exchange): framing that could smuggle a request is
 *     refused, the wait for work finishing later (a lookup) while watching
 *     for the client really leaving (an RST or hang-up, not a FIN), the
 *     response's head and body on the wire, and the access-log line.
 *
 * Ownership: an exchange is refcounted and touched only on its worker's
 * thread. The request side holds one reference (until the response is sent
 * or the connection goes), work in flight holds one each.
 */
#ifndef MUSICD_EXCHANGE_H
#define MUSICD_EXCHANGE_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "access_log.h"
#include "config.h"
#include "head.h"
#include "lookup.h"
#include "metrics.h"
#include "proxy_trust.h"
#include "settings.h"

struct exchange;
struct exchange_server;

/* What a worker gives its exchange server; everything here outlives it. */
struct exchange_settings {
	struct settings_slot *snapshots;   /* this worker's: each request takes the newest */
	struct lookup_pool *lookups;
	atomic_uint *open_connections;	   /* every worker's connections, for the cap */
	unsigned max_connections;
	struct metrics_worker *metrics;	   /* this worker's counters; NULL: none */
};

/* Called for each request whose head is complete; the exchange is valid during the call. */
typedef void (*exchange_request_cb)(struct exchange *exchange, void *arg);

/*
 * Serves HTTP on listen_fd (taken over, closed on failure) from base's
 * thread. NULL with a message in error.
 */
struct exchange_server *exchange_server_new(struct event_base *base, int listen_fd,
					    const struct exchange_settings *settings,
					    exchange_request_cb on_request, void *arg, char *error,
					    size_t error_size);

/*
 * Stops serving without dropping a connection, then calls on_drained(arg)
 * once no connection is left (at once if none is). The listener closes first,
 * once what is queued on it is accepted; every request read or on its way is
 * answered with "Connection: close"; an idle keep-alive connection is given
 * a last call for a request on its way, then a lingering close (FIN, then
 * reading until the client's). From the server's thread.
 */
void exchange_server_drain(struct exchange_server *server, void (*on_drained)(void *arg),
			   void *arg);

/* Exchanges not yet ended. */
unsigned exchange_server_live(const struct exchange_server *server);

/* Connections open, lingering ones included. */
unsigned exchange_server_open(const struct exchange_server *server);

/* Closes every connection and frees the server (after its loop stopped). */
void exchange_server_free(struct exchange_server *server);

/* --- The request --- */

/* The request's method as it is written ("GET", "HEAD" ...). */
const char *exchange_method(const struct exchange *exchange);

/* HEAD request? Its response carries headers only. */
int exchange_is_head(const struct exchange *exchange);

/* The request target as received ("/musicdb/...?..."). */
const char *exchange_target(const struct exchange *exchange);

/* The first value of a request header, or NULL. */
const char *exchange_header(const struct exchange *exchange, const char *name);

/* The settings snapshot this request was started with (a reload never changes it midway). */
const struct settings *exchange_snapshot(const struct exchange *exchange);

/* The snapshot's configuration. */
const struct config *exchange_config(const struct exchange *exchange);

/*
 * True when the request's framing was refused (a body it will not read, or
 * one that could be read two ways): answer 400; the connection then closes.
 */
int exchange_is_refused(const struct exchange *exchange);

/* True while a response may still be sent: the client is there and nothing was sent yet. */
int exchange_can_respond(const struct exchange *exchange);

/* Ends the connection after this response ("Connection: close"). */
void exchange_close_after_response(struct exchange *exchange);

/* --- Work finishing later --- */

/*
 * Looks mid up (kind LOOKUP_PROBE ignores it) in the lookup pool, within the
 * lookup deadline. Later, on the worker's loop, on_deadline runs if the
 * deadline passes first while a response can still be sent, and on_result
 * runs when the lookup ends, always: the client may have left or the deadline
 * answered meanwhile, and what was learned is still worth keeping
 * (exchange_can_respond says whether to answer). -1 when the lookup cannot be
 * queued: the caller answers 503. Both callbacks get arg.
 */
typedef void (*exchange_wait_cb)(struct exchange *exchange, void *arg);

int exchange_lookup(struct exchange *exchange, enum lookup_kind kind, const char *mid,
		    exchange_wait_cb on_result, exchange_wait_cb on_deadline, void *arg);

/* The lookup's job: its answer once on_result runs. */
struct lookup_job *exchange_job(struct exchange *exchange);

/* --- The response --- */

/* Fills an output buffer with a response body (text and file segments). */
typedef void (*exchange_fill_cb)(struct evbuffer *output, const void *context);

/*
 * Sends the response: head (status, reason and fields set by the caller; the
 * exchange adds the protocol version, Date and Connection), then, unless the
 * request is HEAD, the body_length bytes fill adds. File segments added to
 * the output go out by sendfile. Only while exchange_can_respond; a head that
 * cannot be formatted is logged and the connection closed, never cut.
 */
void exchange_send(struct exchange *exchange, struct head *head, uint64_t body_length,
		   exchange_fill_cb fill, const void *context);

#endif
