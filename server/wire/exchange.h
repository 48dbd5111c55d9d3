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
 *     response's head and body on the wire (whole, or streamed part by part
 *     with a drain notification), and the access-log line.
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

#include "base/access_log.h"
#include "config/config.h"
#include "http/head.h"
#include "db/lookup.h"
#include "base/metrics.h"
#include "http/proxy_trust.h"
#include "config/settings.h"

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

/*
 * Runs the caller's job (its call and call_arg set; kind becomes LOOKUP_CALL)
 * in the lookup pool, within the lookup deadline, as exchange_lookup does:
 * before a response started, the client and the deadline are watched too
 * (on_deadline as there); while a body streams, only the job is awaited.
 * on_result runs once, always, on the worker's loop. One job at a time per
 * exchange; -1 when it cannot be queued. The job must live until on_result.
 */
int exchange_call(struct exchange *exchange, struct lookup_job *job, exchange_wait_cb on_result,
		  exchange_wait_cb on_deadline, void *arg);

/*
 * Like exchange_call, but the job is not queued: the caller hands it to
 * whoever will activate job->delivery, exactly once (the GridFS spool, when
 * a copy it fills is complete). The client is watched meanwhile (for the
 * lookup deadline); on_result runs always. -1 when it cannot wait.
 */
int exchange_await(struct exchange *exchange, struct lookup_job *job, exchange_wait_cb on_result,
		   void *arg);

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

/* --- A body sent as it arrives (GridFS chunks) --- */

/*
 * Sends the head now; the body_length bytes follow by exchange_stream_append,
 * as they arrive. 0: the body is awaited; 1: the response is already complete
 * (HEAD, or an empty body); -1: nothing can be sent (the connection closes).
 * Only while exchange_can_respond.
 */
int exchange_stream_start(struct exchange *exchange, struct head *head, uint64_t body_length);

/* True from exchange_stream_start until the last byte is queued or the client is gone. */
int exchange_stream_alive(const struct exchange *exchange);

/* Bytes queued on the connection and not yet taken by the socket (0 unless streaming). */
size_t exchange_stream_queued(const struct exchange *exchange);

/*
 * Moves part's bytes to the connection and writes what the socket takes.
 * The append that completes body_length ends the response (keep-alive as
 * usual). -1 when the stream is not alive, or part goes past body_length
 * (then the connection is closed).
 */
int exchange_stream_append(struct exchange *exchange, struct evbuffer *part);

/*
 * Calls on_drained(exchange, arg) once, on the worker's loop, when at most low
 * bytes are queued (soon, if that is so already), or when the client goes
 * (exchange_stream_alive is then false). One wait at a time; -1 when the
 * stream is not alive or a wait is pending.
 */
int exchange_stream_when_drained(struct exchange *exchange, size_t low, exchange_wait_cb on_drained,
				 void *arg);

/*
 * Ends a stream that cannot be completed (its data is bad): the connection is
 * closed, so the client sees a short body, never wrong bytes.
 */
void exchange_stream_abort(struct exchange *exchange);

#endif
