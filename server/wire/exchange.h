/*
 * exchange: the connection and the request on the wire, the one face of
 * wire/ (server.c, connection.c, exchange.c and wait.c implement it; their
 * shared state is wire_state.h). It is the only part of musicd that knows
 * evhttp's private behaviour (libevent 2.1.12) and works around it;
 * everything above it (the answers, the handlers, the workers) sees requests
 * that are safe to answer and a way to send an answer.
 *
 * What it owns, per worker (an exchange_server):
 *   - accepting: the listener's errors (EMFILE ...) pause accepting briefly
 *     and are logged once per interval, never spun on; beyond the server's
 *     connection cap a new connection is closed at once;
 *   - each connection: every byte it sends scanned before evhttp parses it
 *     (request_scan.h: a request the scan refuses is answered here, 400 and
 *     its kin, once the answers before it are out, and the connection
 *     closed), a deadline for every request head (--header-timeout, from the
 *     connection's start or the head's first byte: 408), the idle keep-alive
 *     timeout, the no-progress send timeout, input bounded whoever reads or
 *     answers (a head and a body at most), and a client's FIN ending only its
 *     reading (the answer is still written in full);
 *   - stopping without dropping a connection (exchange_server_drain), and
 *     a lingering close for every connection it ends after a response;
 *   - each request (an exchange): any "close" among its Connection options
 *     honoured, an absolute-form target served as its origin-form, the wait
 *     for work finishing elsewhere (a database job) while watching for the
 *     client really leaving (an RST or hang-up, not a FIN), the response's
 *     head and body on the wire (whole, or streamed part by part with a drain
 *     notification), and the access-log line.
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
#include "base/address_counts.h"
#include "config/config.h"
#include "http/response_head.h"
#include "base/metrics.h"
#include "http/proxy_trust.h"
#include "config/settings.h"
#include "wire/client.h"
#include "wire/server_settings.h"
#include "wire/feed.h"
#include "wire/send.h"

struct exchange;
struct exchange_server;

/* The servers one process runs at most: a track listener's workers and the metrics listener. */
#define EXCHANGE_SERVERS_MAX (CONFIG_MAX_WORKERS + 1)

/* struct exchange_settings, what a worker gives its exchange server: wire/server_settings.h. */

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

/*
 * The first value of each of count headers, in one pass over the request's
 * fields (values[i] is what exchange_header(names[i]) answers).
 */
void exchange_headers(const struct exchange *exchange, const char *const *names,
		      const char **values, size_t count);

/* The settings snapshot this request was started with (a reload never changes it midway). */
const struct settings *exchange_snapshot(const struct exchange *exchange);

/* The snapshot's configuration. */
const struct config *exchange_config(const struct exchange *exchange);

/* True while a response may still be sent: the client is there and nothing was sent yet. */
int exchange_can_respond(const struct exchange *exchange);

/* Ends the connection after this response ("Connection: close"). */
void exchange_close_after_response(struct exchange *exchange);

/* --- Work finishing elsewhere --- */

/* This worker's counters (NULL: none), for what handlers count on its thread. */
struct metrics_worker *exchange_metrics(const struct exchange *exchange);

typedef void (*exchange_wait_cb)(struct exchange *exchange, void *arg);

/* exchange_wait, exchange_wait_cancel: wire/wait.h (it is above this file: it uses it). */

/* --- The client's limits (respond/client_limits.c says which apply where) --- */

/* exchange_peer, exchange_client: wire/client.h. */

/*
 * Holds one of the places of the client whose key is key
 * (proxy_trust_client_key over exchange_client) in the workers' table under
 * cap until the client has the answer's last byte, or is gone (unsent.h), at
 * most one per exchange (a second call is ADDRESS_TAKEN, holding nothing
 * more). Without a table, ADDRESS_TAKEN and nothing is held.
 */
enum address_take exchange_hold_client_place(struct exchange *exchange,
					     const uint8_t key[ADDRESS_KEY_SIZE], unsigned cap);

/*
 * Sends the body of the response to come at rate bytes a second once its
 * first after bytes went at full speed (wire/pacing.h), still by sendfile;
 * rate 0: at full speed (the default). Before exchange_send or
 * exchange_stream_start.
 */
void exchange_pace(struct exchange *exchange, uint64_t rate, uint64_t after);

/* --- A file's bytes only once the disk has them --- */

/*
 * The body of the response to come goes out through gate: each range of a
 * file (at most window bytes) is moved to the output only once
 * ready(arg, fd, offset, length, ahead) says it may be sent from the loop
 * (1); when it says not yet (0), the gate is bringing it in and calls
 * exchange_window_arrived once it is there. release(arg) runs once the
 * response no longer needs the gate (whether or not it used it). Before
 * exchange_send.
 */
void exchange_feed_windows(struct exchange *exchange, feed_gate_fn ready,
			   void (*release)(void *arg), void *arg, uint64_t window);

/* The gate brought a range in (or gave up): the body is fed on, if it is still being sent. */
void exchange_window_arrived(struct exchange *exchange);

/* --- The response --- */

/* exchange_body_add, exchange_body_add_segment: wire/send.h. */

/* Fills a response body (text and file segments) through the two functions above. */
typedef void (*exchange_fill_cb)(struct exchange_body *body, const void *context);

/*
 * Sends the response: head (status, reason and fields set by the caller; the
 * exchange adds the protocol version, Date and Connection), then, unless the
 * request is HEAD, the body_length bytes fill adds. File segments added to
 * the output go out by sendfile. Only while exchange_can_respond; a head that
 * cannot be formatted is logged and the connection closed, never cut.
 */
void exchange_send(struct exchange *exchange, struct response_head *head, uint64_t body_length,
		   exchange_fill_cb fill, const void *context);

/* --- A body sent as it arrives (GridFS chunks) --- */

/*
 * Sends the head now; the body_length bytes follow by exchange_stream_append,
 * as they arrive. 0: the body is awaited; 1: the response is already complete
 * (HEAD, or an empty body); -1: nothing can be sent (the connection closes).
 * Only while exchange_can_respond.
 */
int exchange_stream_start(struct exchange *exchange, struct response_head *head, uint64_t body_length);

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
