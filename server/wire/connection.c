/*
 * connection: a connection's life on the wire. evhttp accepts it and asks
 * for its bufferevent (connection_new); one loop pass later, before any byte
 * is read, it is set up: counted against the server's cap (closed at once
 * beyond it), given its close callback, the scan of every byte it sends, a
 * bound on its input and its first head deadline. Bytes are scanned as they
 * reach the input, before evhttp's read callback parses them; a request the
 * scan refuses is answered here once the answers before it are out. A head
 * not complete in time is answered 408. evhttp frees the connection on an
 * error, a timeout or Connection: close, and says so (on_connection_freed);
 * a connection musicd ends gets a lingering close (linger.c).
 */
#include "wire/wire_state.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <errno.h>
#include <event2/bufferevent_struct.h>

#include "base/clock.h"
#include "base/log.h"
#include "http/response_head.h"
#include "http/url_redact.h"

/*
 * The most one read takes from the socket: a head fits (a player's is a few
 * hundred bytes). It is read onto the stack, then added to the input, whose
 * chain is then sized to what came (evbuffer_chain_new rounds up to a power
 * of two, 512 bytes at least): a request of a few hundred bytes costs a
 * 512-byte chain, which glibc hands out from its per-thread cache, where a
 * 4 KiB chain reserved for every read took the slower path that first
 * consolidates freed chunks (malloc_consolidate, seen in the perf profile of
 * scripts/benchmarks/bench's c2), and a 16 KiB one was a 32 KiB malloc per connection.
 * Larger heads and bodies take a few reads.
 */
#define READ_MAX (4096 - 128)
/*
 * Draining: how long an idle keep-alive connection is still read for a
 * request its client may be sending right now (answered, with "Connection:
 * close") before it is closed.
 */
#define DRAIN_LAST_CALL_MS 1000

static void set_up_connection(struct connection *connection);
static int take_over_reading(struct connection *connection);
static void on_readable(evutil_socket_t fd, short what, void *arg);
static void release_scan(struct connection *connection);

/* --- Connections --- */

struct connection *connection_of(struct exchange_server *server,
					struct evhttp_connection *evcon)
{
	evutil_socket_t fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evcon));
	if (fd < 0 || (size_t)fd >= server->by_fd_size)
		return NULL;
	struct connection *connection = server->by_fd[fd];
	return connection != NULL && connection->evcon == evcon ? connection : NULL;
}

static int remember_connection(struct exchange_server *server, struct connection *connection)
{
	size_t fd = (size_t)connection->fd;
	if (fd >= server->by_fd_size) {
		size_t size = server->by_fd_size ? server->by_fd_size : 64;
		while (size <= fd)
			size *= 2;
		struct connection **grown = realloc(server->by_fd, size * sizeof(*grown));
		if (grown == NULL)
			return -1;
		memset(grown + server->by_fd_size, 0, (size - server->by_fd_size) * sizeof(*grown));
		server->by_fd = grown;
		server->by_fd_size = size;
	}
	server->by_fd[fd] = connection;
	return 0;
}

static void stop_reading(struct connection *connection)
{
	if (connection->reader != NULL) {
		event_free(connection->reader);
		connection->reader = NULL;
	}
}

static void connection_free(struct connection *connection)
{
	struct exchange_server *server = connection->server;
	stop_reading(connection);
	release_scan(connection);
	if (connection->input_watch != NULL)
		evbuffer_remove_cb_entry(bufferevent_get_input(connection->bev),
					 connection->input_watch);
	if (connection->fd >= 0 && (size_t)connection->fd < server->by_fd_size &&
	    server->by_fd[connection->fd] == connection)
		server->by_fd[connection->fd] = NULL;
	if (connection->counted)
		atomic_fetch_sub(server->settings->open_connections, 1);
	unsent_free(connection->unsent); /* the socket goes: so does the client */
	event_free(connection->timer);
	if (connection->last_call != NULL)
		event_free(connection->last_call);
	free(connection);
	server->connections--;
	server->check_drained(server);
}

/*
 * A head began: its deadline runs from now. The timer is not stopped when a
 * head completes (that would cost a timer removal and insertion per
 * request): when it fires it looks at the head in progress, if any, and
 * either answers 408 or waits for that head's own deadline.
 */
void connection_head_begins(struct connection *connection)
{
	connection->head_in_progress = 1;
	connection->head_started = clock_now();
	if (!connection->timer_armed) {
		evtimer_add(connection->timer, &connection->server->header_timeout);
		connection->timer_armed = 1;
	}
}

/*
 * The connection is ending, and its socket gets a lingering close instead of
 * evhttp's (which would reset a connection with unread input). The
 * bufferevent lets go of the descriptor first (bufferevent_setfd -1): then
 * bufferevent_free does not close it (BEV_OPT_CLOSE_ON_FREE applies to the
 * descriptor it holds) and evhttp_connection_free only shuts down writing
 * (it closes the descriptor itself only without BEV_OPT_CLOSE_ON_FREE), so
 * the socket keeps its number until the lingering close ends, holding its
 * place under --max-connections.
 *
 * It is not duplicated: with the epoll changelist (worker.c), libevent
 * removes a descriptor's registration at the next dispatch, after the close,
 * and a duplicate would keep the socket, and with it that registration,
 * alive under the old number. A connection accepted later on that number was
 * then woken by the lingering socket's readiness: an EPOLLOUT when it could
 * not write, which libevent 2.1's sendfile path reports as 0 bytes written
 * and bufferevent_writecb takes for EOF, ending a download midway.
 */
void connection_linger_after(struct exchange_server *server, struct bufferevent *bev)
{
	evutil_socket_t fd = bufferevent_getfd(bev);
	if (fd < 0)
		return;
	/* The lingering close reads the socket from here: the connection's reader stops first. */
	struct connection *connection =
		(size_t)fd < server->by_fd_size ? server->by_fd[fd] : NULL;
	if (connection != NULL && connection->bev != bev)
		connection = NULL;
	if (connection != NULL)
		stop_reading(connection);
	if (bufferevent_setfd(bev, -1) < 0)
		return; /* evhttp's close stands */
	atomic_fetch_add(server->settings->open_connections, 1);
	/* The last answer's client place, if held, goes with the socket. */
	struct unsent *unsent = connection != NULL ? connection->unsent : NULL;
	if (connection != NULL)
		connection->unsent = NULL;
	linger_close(&server->lingering, fd, unsent);
}

void connection_on_lingered(void *arg)
{
	struct exchange_server *server = arg;
	atomic_fetch_sub(server->settings->open_connections, 1);
	server->check_drained(server);
}

/* Closes the connection with a lingering close: what the client sent or still sends is dropped. */
void connection_linger_and_close(struct connection *connection)
{
	connection_linger_after(connection->server, evhttp_connection_get_bufferevent(connection->evcon));
	/* Runs on_connection_freed. */
	evhttp_connection_free(connection->evcon);
}

/* The peer's address, as evhttp keeps it ("-" before it is known). */
static const char *peer_address(struct connection *connection)
{
	char *address = NULL;
	ev_uint16_t port = 0;
	if (connection->evcon != NULL)
		evhttp_connection_get_peer(connection->evcon, &address, &port);
	return address != NULL ? address : "-";
}

/*
 * Answers status on the socket itself and ends the connection: for what no
 * request of evhttp's stands for (a head not complete in time: 408; a request
 * the scan refused). Nothing is being written (every answer before it is
 * complete), and the answer is short, so the socket buffer takes it whole.
 * It is logged and counted like any request, with what the scan kept of it.
 */
static void answer_on_socket(struct connection *connection, int status)
{
	struct exchange_server *server = connection->server;
	/* On the worker's thread: the slot's snapshot stays until its next request. */
	const struct settings *settings = settings_slot_current(server->settings->snapshots);
	/* No scan: not a byte of this request read yet (no method, no target, no version). */
	static const struct request_scan nothing_read;
	const struct request_scan *scan = connection->scan != NULL ? connection->scan : &nothing_read;
	/* A 400's reason phrase says nothing of what is wrong: the scan's reason does. */
	char body[RESPONSE_ERROR_BODY_SIZE];
	size_t body_length =
		response_error_body(body, status, status == 400 ? scan->refusal_reason : NULL);
	struct response_head head = {
		.http_minor = 1,
		.status = status,
		.reason = response_reason(status),
		.date = http_date_now(&server->date),
		.content_type = "text/plain; charset=utf-8",
		.has_length = 1,
		.content_length = (uint64_t)body_length,
		.connection = RESPONSE_CONNECTION_CLOSE,
	};
	if (settings->config.error_cache_control != NULL)
		response_head_add(&head, "Cache-Control", settings->config.error_cache_control);
	char text[RESPONSE_HEAD_MAX + sizeof(body)];
	size_t length = response_head_format(text, RESPONSE_HEAD_MAX, &head);
	uint64_t sent = 0;
	/* A HEAD's answer has the same head and no body. */
	size_t with_body = strcmp(scan->method, "HEAD") == 0 ? 0 : (size_t)body_length;
	if (length > 0) {
		memcpy(text + length, body, with_body);
		ssize_t written = send(connection->fd, text, length + with_body,
				       MSG_DONTWAIT | MSG_NOSIGNAL);
		if (written > (ssize_t)length)
			sent = (uint64_t)written - length;
	}
	char method[SCAN_METHOD_MAX + 1], target[SCAN_TARGET_KEEP + 1];
	snprintf(method, sizeof(method), "%s", scan->method_length > 0 ? scan->method : "-");
	/* What the scan kept of the target, without a signed-URL token (url_redact.h). */
	url_redact(scan->target_length > 0 ? scan->target : "-",
		   settings->config.url_signing_parameter, target, sizeof(target));
	metrics_count_request(server->settings->metrics, metrics_method_of(method), status, sent);
	if (settings->access_log != NULL && server->settings->log_requests) {
		struct access_entry entry = {
			.client = peer_address(connection),
			.time = time(NULL),
			/* Nothing of a request line read (a 408 on a silent connection): "-". */
			.method = scan->method_length > 0 ? method : NULL,
			.target = target,
			.http_major = scan->http_major, /* -1 until read: none logged */
			.http_minor = scan->http_minor,
			.status = status,
			.body_bytes = sent,
			.seconds = clock_seconds_since(&connection->head_started),
		};
		access_log_write(settings->access_log, &entry);
	}
	connection_linger_and_close(connection);
}

static void on_head_timeout(struct connection *connection)
{
	log_debug("request head not complete within %ld s; answering 408",
		  (long)connection->server->header_timeout.tv_sec);
	answer_on_socket(connection, 408);
}

/* --- The scan, held only while a request is read --- */

/*
 * A connection holds a scan (request_scan.h, ~490 bytes) only from a
 * request's first byte until its head and body are all scanned: a listener
 * whose head is done and an idle kept-alive connection hold none (at 50,000
 * listeners, 23 MiB). A scan between messages carries nothing but its limits
 * and its count (request_scan_idle), so the next request starts on a fresh
 * one with the same limits, the count carried on in messages_before; a
 * refused scan is kept, for its answer. Let-go scans wait in the server's
 * spares (one worker's thread) for the next head, so a busy keep-alive
 * connection costs no malloc a request.
 */
static int acquire_scan(struct connection *connection)
{
	struct exchange_server *server = connection->server;
	struct request_scan *scan = server->spare_scan_count > 0
					    ? server->spare_scans[--server->spare_scan_count]
					    : malloc(sizeof(*scan));
	if (scan == NULL)
		return -1;
	request_scan_init(scan, &connection->scan_limits);
	connection->scan = scan;
	return 0;
}

static void release_scan(struct connection *connection)
{
	struct exchange_server *server = connection->server;
	struct request_scan *scan = connection->scan;
	if (scan == NULL)
		return;
	connection->messages_before += scan->messages;
	connection->scan = NULL;
	if (server->spare_scan_count < SPARE_SCANS_MAX)
		server->spare_scans[server->spare_scan_count++] = scan;
	else
		free(scan);
}

void connection_free_spare_scans(struct exchange_server *server)
{
	while (server->spare_scan_count > 0)
		free(server->spare_scans[--server->spare_scan_count]);
}

/* Requests begun on the connection, the one being read included. */
static unsigned messages_begun(const struct connection *connection)
{
	return connection->messages_before +
	       (connection->scan != NULL ? connection->scan->messages : 0);
}

static int refused(const struct connection *connection)
{
	return connection->scan != NULL && connection->scan->refusal != 0;
}

int connection_in_head(const struct connection *connection)
{
	return connection->scan != NULL && request_scan_in_head(connection->scan);
}

/* --- Every byte of the input, scanned (request_scan.h) --- */

/*
 * The scan refused a request: it is answered once every request before it
 * is, and evhttp never sees it. The check runs from the connection's timer
 * (event_active), never inside a bufferevent or evhttp callback, since the
 * answer frees the connection.
 */
static void answer_refusal_when_due(struct connection *connection)
{
	const struct request_scan *scan = connection->scan;
	if (connection->refusal_answered || connection->current != NULL ||
	    connection->handed + 1 < messages_begun(connection))
		return;
	connection->refusal_answered = 1;
	log_debug("request refused before parsing: %s; answering %d", scan->refusal_reason,
		  scan->refusal);
	answer_on_socket(connection, scan->refusal);
}

void connection_schedule_refusal(struct connection *connection)
{
	if (refused(connection) && !connection->refusal_answered)
		event_active(connection->timer, EV_TIMEOUT, 1);
}

/* Keeps the input's first keep bytes and drops the rest (what evhttp must never parse). */
static void truncate_input(struct connection *connection, struct evbuffer *input, size_t keep)
{
	size_t length = evbuffer_get_length(input);
	if (keep >= length)
		return;
	connection->editing_input = 1;
	if (keep == 0) {
		evbuffer_drain(input, length);
	} else {
		struct evbuffer *kept = evbuffer_new();
		if (kept == NULL || evbuffer_remove_buffer(input, kept, keep) != (int)keep) {
			/* Out of memory: nothing of this connection's input can be trusted now. */
			evbuffer_drain(input, evbuffer_get_length(input));
		} else {
			evbuffer_drain(input, evbuffer_get_length(input));
			evbuffer_add_buffer(input, kept);
		}
		if (kept != NULL)
			evbuffer_free(kept);
	}
	connection->editing_input = 0;
}

/* A scan event for the byte at absolute position at (in fed bytes). */
static void on_scan_event(struct connection *connection, enum scan_event event, uint64_t at)
{
	unsigned begun = messages_begun(connection);
	if (begun != connection->scan_began) {
		/* Its first byte: also when that byte was the one refused. */
		connection->scan_began = begun;
		connection->message_start = at;
		/* The first head's deadline runs from the connection's start; a later one's from
		   here, unless an answer is in flight (it starts when that one completes). */
		if (begun > 1 && connection->current == NULL)
			connection_head_begins(connection);
	}
	if (event == SCAN_HEAD_DONE)
		connection->head_in_progress = 0;
}

/*
 * The bytes [from, length) of the input are new: they go through the scan,
 * in place while nothing in them is rewritten. From a refusal on, the
 * refused request and all after it are dropped; inside a chunked body the
 * rest is taken out, rewritten by the scan (chunk extensions dropped) and put
 * back, so the input evhttp parses only ever holds what the scan handed on.
 */
static void scan_new_bytes(struct connection *connection, struct evbuffer *input, size_t from)
{
	struct request_scan *scan = connection->scan;
	size_t length = evbuffer_get_length(input);
	uint64_t input_start = connection->fed - from; /* where the input's first byte is in fed */
	size_t position = from;
	while (position < length && scan->refusal == 0 && !request_scan_rewrites(scan)) {
		struct evbuffer_ptr at;
		struct evbuffer_iovec piece;
		if (evbuffer_ptr_set(input, &at, position, EVBUFFER_PTR_SET) < 0 ||
		    evbuffer_peek(input, (ev_ssize_t)(length - position), &at, &piece, 1) < 1)
			break;
		size_t size = piece.iov_len < length - position ? piece.iov_len : length - position;
		struct scan_step step = request_scan_feed(scan, piece.iov_base, size, NULL);
		position += step.consumed;
		connection->fed += step.consumed;
		if (step.event != SCAN_NONE)
			on_scan_event(connection, step.event, connection->fed - 1);
	}
	if (position < length && scan->refusal == 0) {
		/* A chunked body: the rest of the bytes go out, rewritten, and back in. */
		size_t rest = length - position;
		char *bytes = malloc(rest), *out = malloc(rest);
		struct evbuffer *front = evbuffer_new();
		connection->editing_input = 1;
		if (bytes == NULL || out == NULL || front == NULL ||
		    evbuffer_remove_buffer(input, front, position) != (int)position ||
		    evbuffer_remove(input, bytes, rest) != (int)rest) {
			log_error("out of memory scanning a request body; refusing it");
			evbuffer_drain(input, evbuffer_get_length(input));
			scan->refusal = 500;
			scan->refusal_reason = "out of memory";
		} else {
			size_t done = 0, produced = 0;
			while (done < rest && scan->refusal == 0) {
				struct scan_step step = request_scan_feed(scan, bytes + done, rest - done,
									  out + produced);
				done += step.consumed;
				produced += step.produced;
				connection->fed += step.produced;
				/* A refused byte is not handed on: it would have been at fed. */
				if (step.event != SCAN_NONE)
					on_scan_event(connection, step.event,
						      step.event == SCAN_REFUSED ? connection->fed
										 : connection->fed - 1);
			}
			evbuffer_add_buffer(input, front);
			evbuffer_add(input, out, produced);
		}
		connection->editing_input = 0;
		if (front != NULL)
			evbuffer_free(front);
		free(bytes);
		free(out);
	}
	if (scan->refusal != 0) {
		uint64_t start = connection->message_start;
		truncate_input(connection, input, start > input_start ? (size_t)(start - input_start) : 0);
		connection->fed = input_start + evbuffer_get_length(input);
		/* Nothing after a refusal is read: the socket waits for the lingering close. */
		stop_reading(connection);
		connection_schedule_refusal(connection);
	}
}

static void resume_reading(struct connection *connection);

/* Every change of the input: new bytes are scanned before evhttp's read callback sees them. */
static void on_input_changed(struct evbuffer *input, const struct evbuffer_cb_info *info,
			     void *arg)
{
	struct connection *connection = arg;
	if (connection->editing_input)
		return;
	if (info->n_added == 0) {
		/* Drained (evhttp parsed, or the scan dropped): a paused reader reads on. */
		if (connection->reader_paused &&
		    evbuffer_get_length(input) < connection->input_limit / 2)
			resume_reading(connection);
		return;
	}
	size_t from = evbuffer_get_length(input) - info->n_added;
	if (connection->scan == NULL || refused(connection)) {
		/* Nothing after a refusal is read; and without a scan (on_readable takes one
		   before it reads, the only writer of the input) nothing can be trusted. */
		truncate_input(connection, input, from);
		stop_reading(connection);
		return;
	}
	scan_new_bytes(connection, input, from);
}


/* evhttp_connection_free calls this first, before it frees the requests and the bufferevent. */
static void on_connection_freed(struct evhttp_connection *evcon, void *arg)
{
	struct connection *connection = arg;
	if (connection->current != NULL)
		connection->server->end_request_side(connection->current, evcon);
	connection_free(connection);
}

/*
 * One loop pass after evhttp took the connection (evhttp_get_request_connection
 * then associated its first request), before any of its bytes is read.
 */
static void set_up_connection(struct connection *connection)
{
	struct exchange_server *server = connection->server;
	const struct exchange_settings *settings = server->settings;
	void *evcon = NULL;

	connection->set_up = 1;
	/* evhttp_connection_base_bufferevent_new makes the evcon its callbacks' argument. */
	bufferevent_getcb(connection->bev, NULL, NULL, NULL, &evcon);
	if (evcon == NULL) {
		/* evhttp already freed it (bufferevent_free clears the callbacks). */
		bufferevent_decref(connection->bev);
		event_free(connection->timer);
		free(connection);
		server->connections--;
		server->check_drained(server);
		return;
	}
	connection->evcon = evcon;
	connection->fd = bufferevent_getfd(connection->bev);
	evhttp_connection_set_closecb(evcon, on_connection_freed, connection);
	/* From here the close callback says when it goes; the reference taken at creation can go. */
	bufferevent_decref(connection->bev);

	if (remember_connection(server, connection) < 0) {
		log_error("out of memory for a connection; closing it");
		evhttp_connection_free(evcon);
		return;
	}

	connection->counted = 1;
	unsigned open = atomic_fetch_add(settings->open_connections, 1) + 1;
	metrics_count_connection(settings->metrics, open > settings->max_connections);
	if (open > settings->max_connections) {
		if (report_due(&server->refused)) {
			log_warn("%s%u connections open: closing new ones beyond %s %u (%u since the "
				 "last report)",
				 server_log_prefix(server), open - 1,
				 settings->cap_name ? settings->cap_name : "--max-connections",
				 settings->max_connections, server->refused.count);
			server->refused.count = 0;
		}
		evhttp_connection_free(evcon);
		return;
	}
	/*
	 * Every byte read from here on goes through the scan before evhttp's read
	 * callback sees it; and the input is bounded whoever answers, evhttp's
	 * own answers included (evhttp_write_buffer reads on with no read
	 * callback while it writes one): a head and a body at most.
	 */
	struct bufferevent *bev = connection->bev;
	const struct config *config = &settings_slot_current(settings->snapshots)->config;
	connection->scan_limits =
		(struct request_scan_limits){config->max_header_size, MAX_BODY_SIZE};
	connection->input_watch =
		evbuffer_add_cb(bufferevent_get_input(bev), on_input_changed, connection);
	if (connection->input_watch == NULL) {
		log_error("out of memory for a connection; closing it");
		evhttp_connection_free(evcon);
		return;
	}
	connection->input_limit = config->max_header_size + MAX_BODY_SIZE;
	if (take_over_reading(connection) < 0) {
		log_error("out of memory for a connection; closing it");
		evhttp_connection_free(evcon);
		return;
	}
	/* The first head's deadline runs from the connection's start. */
	connection_head_begins(connection);
	if (server->draining)
		connection_start_last_call(connection); /* taken from the backlog of a closing listener */
	/*
	 * A client sends its request as soon as it is connected, so it is most
	 * likely here already: read it now rather than after another epoll_wait.
	 * (Last: the read may answer it, or end the connection.)
	 */
	on_readable(connection->fd, EV_READ, connection);
}

/* --- Reading the socket (for evhttp, and into the scan) --- */

/*
 * musicd reads each connection's socket itself, with one persistent read
 * event registered for the connection's life, instead of the bufferevent's:
 * libevent 2.1.12's bufferevent_readcb asks ioctl(FIONREAD) before every
 * read (evbuffer_read), and evhttp disables and enables reading around every
 * request (evhttp_handle_request, evhttp_start_read_), an epoll_ctl each
 * time. The bytes go where the bufferevent would put them, its input, and
 * then, when evhttp is reading (the bufferevent's EV_READ enabled), to
 * evhttp's read callback as bufferevent_readcb would (bufferevent_trigger).
 * While evhttp is not reading (an answer in progress, a lookup awaited) the
 * socket is still read, into the input: pipelined requests wait there, an
 * RST ends the connection at once, and a FIN only ends the client's requests.
 * The input never holds more than input_limit (a head and a body): past it
 * the reader pauses until the input drains.
 *
 * The bufferevent's own read event is kept, made a timer on the same
 * descriptor with no interest in reading (event_assign without EV_READ):
 * bufferevent_getfd and its close-on-free still find the descriptor there
 * (be_socket_ctrl, be_socket_destruct), evhttp's enable and disable of
 * reading add and remove only its timeout (be_socket_enable), and the
 * timeout (evhttp's idle keep-alive timeout) comes to on_read_timeout, which
 * reports it as bufferevent_readcb does. bufferevent_setfd (the lingering
 * close) assigns libevent's own read event back, with the descriptor gone.
 */

/*
 * Whether evhttp is reading a request: its reading enabled, and no request
 * handed to musicd. From the handing over until the request is freed evhttp
 * is "writing" (EVCON_WRITING), and its read callback, still set while an
 * answer is awaited, aborts the process if called (evhttp_read_cb's illegal
 * state); its own answers (evhttp_write_buffer) enable reading with no read
 * callback, so nothing is triggered then either.
 */
static int evhttp_reads(const struct connection *connection)
{
	return connection->current == NULL &&
	       (bufferevent_get_enabled(connection->bev) & EV_READ) != 0;
}

/* The read timeout's new start: bufferevent_readcb's read event restarts it on every read. */
static void restart_read_timeout(const struct connection *connection)
{
	struct bufferevent *bev = connection->bev;
	if (evhttp_reads(connection) && evutil_timerisset(&bev->timeout_read))
		event_add(&bev->ev_read, &bev->timeout_read);
}

/* The read end of the socket failed (what): told to evhttp if it reads, else the connection ends. */
static void read_failed(struct connection *connection, short what)
{
	struct bufferevent *bev = connection->bev;
	if ((what & BEV_EVENT_EOF) && connection->current == NULL &&
	    unsent_holds(connection->unsent)) {
		/*
		 * The client asks no more, and may still be reading its last answer:
		 * that answer's place goes on with the socket, in a lingering close,
		 * not in evhttp's close (runs on_connection_freed).
		 */
		connection_linger_and_close(connection);
		return;
	}
	if (evhttp_reads(connection)) {
		/* As bufferevent_readcb's error path: reading off, then the event callback. */
		bufferevent_disable(bev, EV_READ);
		bufferevent_trigger_event(bev, BEV_EVENT_READING | what, 0);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		/* A FIN ends the client's requests, not its answers: they still go out in full. */
		connection->peer_closed = 1;
		stop_reading(connection);
		return;
	}
	log_debug("client left while its request was pending (%s); closing the connection",
		  strerror(errno));
	/* Runs on_connection_freed, which ends the request side. */
	evhttp_connection_free(connection->evcon);
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct connection *connection = arg;
	struct bufferevent *bev = connection->bev;
	struct evbuffer *input = bufferevent_get_input(bev);
	(void)what;
	size_t held = evbuffer_get_length(input);
	if (held >= connection->input_limit) {
		event_del(connection->reader);
		connection->reader_paused = 1;
		return;
	}
	size_t room = connection->input_limit - held;
	if (connection->scan == NULL && acquire_scan(connection) < 0) {
		log_error("out of memory reading a request; closing the connection");
		errno = ENOMEM;
		read_failed(connection, BEV_EVENT_ERROR);
		return;
	}
	char bytes[READ_MAX];
	ssize_t got = read(fd, bytes, room < READ_MAX ? room : READ_MAX);
	int error_number = errno;
	int added = 0;
	if (got > 0) {
		/* bufferevent_socket_new froze the input's end; its reads unfreeze it around each. */
		evbuffer_unfreeze(input, 0);
		added = evbuffer_add(input, bytes, (size_t)got); /* the scan runs here (on_input_changed) */
		evbuffer_freeze(input, 0);
		if (added < 0) {
			log_error("out of memory reading a request; closing the connection");
			evhttp_connection_free(connection->evcon);
			return;
		}
	}
	/* Between requests the scan goes back to the spares (acquire_scan says why); before
	   evhttp's callback, which may end the connection. */
	if (request_scan_idle(connection->scan))
		release_scan(connection);
	if (got > 0) {
		if (evhttp_reads(connection)) {
			restart_read_timeout(connection);
			bufferevent_trigger(bev, EV_READ, 0); /* evhttp_read_cb, as bufferevent_readcb */
		}
		return;
	}
	if (got < 0 && (error_number == EAGAIN || error_number == EWOULDBLOCK || error_number == EINTR))
		return;
	errno = error_number;
	read_failed(connection, got == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR);
}

static void resume_reading(struct connection *connection)
{
	connection->reader_paused = 0;
	if (connection->reader != NULL)
		event_add(connection->reader, NULL);
}

/* The bufferevent's read timeout passed with nothing read: bufferevent_readcb's EV_TIMEOUT path. */
static void on_read_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct bufferevent *bev = arg;
	(void)fd;
	(void)what;
	bufferevent_disable(bev, EV_READ);
	bufferevent_trigger_event(bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
}

/* Takes reading over from the bufferevent (see above); -1 if out of memory. */
static int take_over_reading(struct connection *connection)
{
	struct bufferevent *bev = connection->bev;
	struct event_base *base = connection->server->base;
	connection->reader = event_new(base, connection->fd, EV_READ | EV_PERSIST, on_readable,
				       connection);
	if (connection->reader == NULL || event_add(connection->reader, NULL) < 0)
		return -1;
	short enabled = bufferevent_get_enabled(bev);
	event_del(&bev->ev_read);
	event_assign(&bev->ev_read, base, connection->fd, EV_PERSIST | EV_FINALIZE, on_read_timeout,
		     bev);
	if (enabled & EV_READ)
		restart_read_timeout(connection);
	return 0;
}

static void on_head_deadline(struct connection *connection)
{
	if (!connection->head_in_progress)
		return; /* it completed; the next head re-arms the timer */
	struct timeval limit = connection->server->header_timeout;
	long limit_ms = (long)limit.tv_sec * 1000;
	long elapsed_ms = (long)(clock_seconds_since(&connection->head_started) * 1000);
	if (elapsed_ms >= limit_ms) {
		on_head_timeout(connection);
		return;
	}
	/* A later head is in progress: wait for its own deadline. */
	long rest_ms = limit_ms - elapsed_ms;
	struct timeval rest = {.tv_sec = rest_ms / 1000, .tv_usec = (rest_ms % 1000) * 1000};
	evtimer_add(connection->timer, &rest);
	connection->timer_armed = 1;
}

static void on_connection_timer(evutil_socket_t fd, short what, void *arg)
{
	struct connection *connection = arg;
	(void)fd;
	(void)what;
	if (!connection->set_up) {
		set_up_connection(connection);
	} else if (refused(connection)) {
		answer_refusal_when_due(connection);
	} else {
		connection->timer_armed = 0;
		on_head_deadline(connection);
	}
}

/*
 * evhttp_get_request_connection asks for each accepted connection's
 * bufferevent here, before it makes the evhttp_connection around it; the rest
 * of the set-up waits one loop pass for that.
 */
struct bufferevent *connection_new(struct event_base *base, void *arg)
{
	struct exchange_server *server = arg;
	struct connection *connection = calloc(1, sizeof(*connection));
	struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (connection == NULL || bev == NULL ||
	    (connection->timer = evtimer_new(base, on_connection_timer, connection)) == NULL) {
		log_error("out of memory for a new connection");
		if (bev != NULL)
			bufferevent_free(bev);
		free(connection);
		return NULL; /* evhttp makes a bufferevent itself; the connection serves one request */
	}
	connection->server = server;
	connection->bev = bev;
	connection->fd = -1;
	server->connections++;
	/* Keeps bev alive if evhttp frees the connection before the set-up runs. */
	bufferevent_incref(bev);
	event_active(connection->timer, EV_TIMEOUT, 1);
	return bev;
}

/* --- Draining: an idle connection's last call --- */

/* Nothing of the client's is waiting to be read: no request is on its way. */
static int connection_silent(struct connection *connection)
{
	char byte;
	if (evbuffer_get_length(bufferevent_get_input(connection->bev)) > 0)
		return 0;
	return recv(connection->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
}

static void on_last_call(evutil_socket_t fd, short what, void *arg)
{
	struct connection *connection = arg;
	(void)fd;
	(void)what;
	/* A request read or arriving ends with "Connection: close"; a half head, with its deadline. */
	if (connection->current != NULL || !connection_silent(connection))
		return;
	/* Frees connection and this timer (not pending now). */
	connection_linger_and_close(connection);
}

void connection_start_last_call(struct connection *connection)
{
	struct timeval wait = {.tv_sec = DRAIN_LAST_CALL_MS / 1000,
			       .tv_usec = (DRAIN_LAST_CALL_MS % 1000) * 1000};
	if (connection->last_call == NULL)
		connection->last_call =
			evtimer_new(connection->server->base, on_last_call, connection);
	/* Without it the connection is closed with the loop, at the end of the grace period. */
	if (connection->last_call != NULL)
		evtimer_add(connection->last_call, &wait);
}
