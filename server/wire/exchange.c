/*
 * exchange: musicd's side of evhttp's wire. evhttp (libevent 2.1.12) parses
 * requests and keeps each connection's state machine; this file adds what it
 * lacks for a server facing hostile clients, and is the only place that
 * relies on how evhttp works inside. Each such place names the libevent
 * 2.1.12 function whose behaviour it mirrors or works around.
 *
 * A connection's life: evhttp accepts it and asks us for its bufferevent
 * (on_new_connection); one loop pass later, before any byte is read, it is
 * set up (set_up_connection): counted against --max-connections, given its
 * close callback and its first head deadline. Each complete head becomes an
 * exchange (on_request); its response goes out through exchange_send, with
 * reading off until it is written; then (on_complete) the next head's
 * deadline starts at its first byte. evhttp frees the connection on an
 * error, a timeout or Connection: close, and tells us (on_connection_freed);
 * after a response that ends it, the socket gets a lingering close
 * (linger.c). Draining (exchange_server_drain) closes the listener, then lets
 * each connection go once it has nothing more on its way.
 *
 * A body that arrives later (GridFS chunks) is streamed: exchange_stream_start
 * sends the head with the write callback unset, each exchange_stream_append
 * adds a part, a callback on the output wakes a waiter once the socket took
 * enough (exchange_stream_when_drained: the sender's backpressure), and the
 * append that completes Content-Length puts evhttp's write callback back and
 * ends the request as exchange_send does.
 */
#include "wire/exchange.h"

#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "http/framing.h"
#include "http/http_date.h"
#include "http/request_scan.h"
#include "wire/linger.h"
#include "base/log.h"

/* nginx's status for a client that closed the connection before the response. */
#define STATUS_CLIENT_CLOSED 499
/* Bodies evhttp reads (a GET may carry one) are read and ignored up to this. */
#define MAX_BODY_SIZE (16 * 1024)
/* At EMFILE and other accept errors: stop accepting this long, then try again. */
#define ACCEPT_PAUSE_MS 100
/* Accept errors and refused connections are reported at most this often. */
#define REPORT_INTERVAL_SECONDS 10
/* Connection lines read as one list of options; past this many, close is assumed. */
#define CONNECTION_LINES_MAX 8
/* Head writes (head, then each part of a multipart body) before leaving it to the loop. */
#define FLUSH_WRITES_MAX 8
/* X-Forwarded-For lines read as one list for the access log. */
#define FORWARDED_LINES_MAX 32
/*
 * Draining: how long an idle keep-alive connection is still read for a
 * request its client may be sending right now (answered, with "Connection:
 * close") before it is closed.
 */
#define DRAIN_LAST_CALL_MS 1000
/* Draining: loop passes spent accepting what is queued on the listener before closing it. */
#define BACKLOG_PASSES_MAX 64

/* Something worth a log line, reported at most once per interval with a count. */
struct report {
	time_t last; /* monotonic seconds of the last report; 0: never */
	unsigned count;
};

struct connection {
	struct exchange_server *server;
	struct evhttp_connection *evcon; /* NULL until set up */
	struct bufferevent *bev;
	evutil_socket_t fd;
	struct event *timer;		       /* the set-up, then the head deadline */
	int set_up;
	int timer_armed;		       /* cheaper to keep than to ask event_pending */
	int head_in_progress;		       /* from a head's first byte to its end */
	struct timespec head_started;	       /* that first byte (CLOCK_MONOTONIC) */
	struct evbuffer_cb_entry *input_watch; /* scans every byte added to the input */
	struct request_scan scan;	       /* what those bytes are (request_scan.h) */
	uint64_t fed;			       /* bytes the scan handed on into the input */
	uint64_t message_start;		       /* where the scan's current request began (in fed) */
	unsigned scan_began;		       /* the scan's message count at that start */
	int editing_input;		       /* the watch is rewriting the input: ignore it */
	unsigned handed;		       /* requests evhttp handed over */
	int refusal_answered;		       /* the scan's refusal has gone out */
	struct exchange *current;	       /* the exchange being answered, or NULL */
	int peer_closed;		       /* the client's FIN arrived while a request waited */
	int counted;			       /* holds a place under --max-connections */
	struct event *last_call;	       /* draining: the wait for a request on its way */
};

struct exchange_server {
	struct event_base *base;
	struct evhttp *http;
	struct evhttp_bound_socket *bound; /* NULL once accepting stopped */
	struct evconnlistener *listener;   /* evhttp's, for its error callback */
	const struct exchange_settings *settings;
	exchange_request_cb on_request;
	void *arg;
	struct http_date_cache date;
	struct timeval keepalive_timeout, send_timeout, header_timeout;

	struct connection **by_fd; /* this server's connections by socket */
	size_t by_fd_size;
	unsigned connections;	   /* struct connections not yet freed */
	unsigned live;		   /* exchanges not yet ended */
	struct linger_set lingering; /* connections ended, closing (each counted as open) */
	int draining;
	int freeing;
	struct event *backlog_pass; /* draining: accepting what is queued, then closing */
	unsigned backlog_passes;
	void (*on_drained)(void *arg);
	void *on_drained_arg;

	struct event *accept_resume;
	struct report accept_errors, refused;
};

struct exchange {
	struct exchange_server *server;
	struct connection *connection; /* NULL once the request side ended */
	struct evhttp_request *req;    /* NULL once evhttp freed it */
	struct settings *snapshot;     /* one reference, from the start to the release */
	struct timespec started;
	time_t started_wall;
	int status;	      /* 0 until a response is under way */
	uint64_t body_length; /* body bytes the response promised */
	int refs;
	int close_after;
	int closes;	      /* the connection ends after the response (as evhttp_send_done decides) */
	char *origin_target; /* an absolute-form target's path and query; NULL: none */

	/* While waiting for work finishing elsewhere (exchange_wait). */
	struct event *client_watch; /* reads the socket: an RST, a hang-up, the FIN */
	struct event *deadline;
	struct event *delivery;	    /* activated by whoever does the work; made once, reused */
	exchange_wait_cb on_deadline;
	exchange_wait_cb on_done;
	void *wait_arg;
	int waiting;		    /* a wait is pending: its delivery holds a reference */

	/* A body streamed as it arrives (exchange_stream_start). */
	int streaming;		    /* from the head until the last byte is queued */
	uint64_t body_appended;	    /* body bytes queued so far */
	bufferevent_data_cb evhttp_write_cb; /* put back when the last byte is queued */
	struct evbuffer_cb_entry *drain_watch; /* on the output while streaming */
	struct event *drained;	    /* activated when the output fell to drain_low */
	size_t drain_low;
	exchange_wait_cb on_drained; /* pending exchange_stream_when_drained; holds a reference */
	void *drain_arg;
};

static void exchange_release(struct exchange *exchange);
static void check_drained(struct exchange_server *server);
static void start_last_call(struct connection *connection);
static void on_backlog_pass(evutil_socket_t fd, short what, void *arg);

/* --- Reports --- */

static const char *log_prefix(const struct exchange_server *server)
{
	return server->settings->log_prefix != NULL ? server->settings->log_prefix : "";
}

static time_t monotonic_seconds(void)
{
	return clock_now().tv_sec;
}

/* Counts one more; true when a report is due (then the caller logs report->count and it restarts). */
static int report_due(struct report *report)
{
	report->count++;
	time_t now = monotonic_seconds();
	if (report->last != 0 && now - report->last < REPORT_INTERVAL_SECONDS)
		return 0;
	report->last = now;
	return 1;
}

/* --- Accepting --- */

/*
 * evhttp_bind_listener gives the listener evhttp's accept callback and the
 * evhttp as its argument, which the error callback receives too; this table
 * finds the server a listener belongs to.
 */
static pthread_mutex_t listeners_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct evconnlistener *listener;
	struct exchange_server *server;
} listeners[EXCHANGE_SERVERS_MAX];

static int register_listener(struct evconnlistener *listener, struct exchange_server *server)
{
	int registered = -1;
	pthread_mutex_lock(&listeners_lock);
	for (size_t i = 0; i < EXCHANGE_SERVERS_MAX && registered < 0; i++) {
		if (listeners[i].listener == NULL) {
			listeners[i].listener = listener;
			listeners[i].server = server;
			registered = 0;
		}
	}
	pthread_mutex_unlock(&listeners_lock);
	return registered;
}

static void unregister_listener(struct evconnlistener *listener)
{
	pthread_mutex_lock(&listeners_lock);
	for (size_t i = 0; i < EXCHANGE_SERVERS_MAX; i++) {
		if (listeners[i].listener == listener)
			listeners[i].listener = NULL;
	}
	pthread_mutex_unlock(&listeners_lock);
}

static struct exchange_server *server_of_listener(struct evconnlistener *listener)
{
	struct exchange_server *server = NULL;
	pthread_mutex_lock(&listeners_lock);
	for (size_t i = 0; i < EXCHANGE_SERVERS_MAX && server == NULL; i++) {
		if (listeners[i].listener == listener)
			server = listeners[i].server;
	}
	pthread_mutex_unlock(&listeners_lock);
	return server;
}

/*
 * accept() failed (EMFILE, ENFILE, ENOBUFS ...). The listening socket is
 * level-triggered: left enabled, it would fire again at once on every loop
 * pass. Pause it instead, and say so once per interval.
 */
static void on_accept_error(struct evconnlistener *listener, void *unused)
{
	int error_number = errno;
	(void)unused;
	struct exchange_server *server = server_of_listener(listener);
	evconnlistener_disable(listener);
	if (server == NULL)
		return;
	if (report_due(&server->accept_errors)) {
		log_error("%scannot accept connections: %s (%u times since the last report); "
			  "pausing accepts for %d ms each time",
			  log_prefix(server), strerror(error_number), server->accept_errors.count,
			  ACCEPT_PAUSE_MS);
		server->accept_errors.count = 0;
	}
	struct timeval pause = {.tv_sec = 0, .tv_usec = ACCEPT_PAUSE_MS * 1000};
	evtimer_add(server->accept_resume, &pause);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	struct exchange_server *server = arg;
	(void)fd;
	(void)what;
	if (server->bound != NULL)
		evconnlistener_enable(server->listener);
}

/* --- Connections --- */

static struct connection *connection_of(struct exchange_server *server,
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

static void connection_free(struct connection *connection)
{
	struct exchange_server *server = connection->server;
	if (connection->input_watch != NULL)
		evbuffer_remove_cb_entry(bufferevent_get_input(connection->bev),
					 connection->input_watch);
	if (connection->fd >= 0 && (size_t)connection->fd < server->by_fd_size &&
	    server->by_fd[connection->fd] == connection)
		server->by_fd[connection->fd] = NULL;
	if (connection->counted)
		atomic_fetch_sub(server->settings->open_connections, 1);
	event_free(connection->timer);
	if (connection->last_call != NULL)
		event_free(connection->last_call);
	free(connection);
	server->connections--;
	check_drained(server);
}

/*
 * A head began: its deadline runs from now. The timer is not stopped when a
 * head completes (that would cost a timer removal and insertion per
 * request): when it fires it looks at the head in progress, if any, and
 * either answers 408 or waits for that head's own deadline.
 */
static void head_begins(struct connection *connection)
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
static void linger_after(struct exchange_server *server, struct bufferevent *bev)
{
	evutil_socket_t fd = bufferevent_getfd(bev);
	if (fd < 0 || bufferevent_setfd(bev, -1) < 0)
		return; /* evhttp's close stands */
	atomic_fetch_add(server->settings->open_connections, 1);
	linger_close(&server->lingering, fd);
}

static void on_lingered(void *arg)
{
	struct exchange_server *server = arg;
	atomic_fetch_sub(server->settings->open_connections, 1);
	check_drained(server);
}

/* Closes the connection with a lingering close: what the client sent or still sends is dropped. */
static void linger_and_close(struct connection *connection)
{
	linger_after(connection->server, evhttp_connection_get_bufferevent(connection->evcon));
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
	const struct request_scan *scan = &connection->scan;
	char body[64];
	int body_length = snprintf(body, sizeof(body), "%d %s\n", status, response_reason(status));
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
	snprintf(target, sizeof(target), "%s", scan->target_length > 0 ? scan->target : "-");
	metrics_count_request(server->settings->metrics, metrics_method_of(method), status, sent);
	if (settings->access_log != NULL && server->settings->log_requests) {
		struct access_entry entry = {
			.client = peer_address(connection),
			.time = time(NULL),
			.method = method,
			.target = target,
			.http_major = scan->http_major >= 0 ? scan->http_major : 1,
			.http_minor = scan->http_minor >= 0 ? scan->http_minor : 1,
			.status = status,
			.body_bytes = sent,
			.seconds = clock_seconds_since(&connection->head_started),
		};
		access_log_write(settings->access_log, &entry);
	}
	linger_and_close(connection);
}

static void on_head_timeout(struct connection *connection)
{
	log_debug("request head not complete within %ld s; answering 408",
		  (long)connection->server->header_timeout.tv_sec);
	answer_on_socket(connection, 408);
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
	const struct request_scan *scan = &connection->scan;
	if (connection->refusal_answered || connection->current != NULL ||
	    connection->handed + 1 < scan->messages)
		return;
	connection->refusal_answered = 1;
	log_debug("request refused before parsing: %s; answering %d", scan->refusal_reason,
		  scan->refusal);
	answer_on_socket(connection, scan->refusal);
}

static void schedule_refusal(struct connection *connection)
{
	if (connection->scan.refusal != 0 && !connection->refusal_answered)
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
	if (connection->scan.messages != connection->scan_began) {
		/* Its first byte: also when that byte was the one refused. */
		connection->scan_began = connection->scan.messages;
		connection->message_start = at;
		/* The first head's deadline runs from the connection's start; a later one's from
		   here, unless an answer is in flight (it starts when that one completes). */
		if (connection->scan.messages > 1 && connection->current == NULL)
			head_begins(connection);
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
	struct request_scan *scan = &connection->scan;
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
		schedule_refusal(connection);
	}
}

/* Every change of the input: new bytes are scanned before evhttp's read callback sees them. */
static void on_input_changed(struct evbuffer *input, const struct evbuffer_cb_info *info,
			     void *arg)
{
	struct connection *connection = arg;
	if (info->n_added == 0 || connection->editing_input)
		return;
	size_t from = evbuffer_get_length(input) - info->n_added;
	if (connection->scan.refusal != 0) {
		truncate_input(connection, input, from); /* nothing after a refusal is read */
		return;
	}
	scan_new_bytes(connection, input, from);
}

static void end_request_side(struct exchange *exchange, struct evhttp_connection *evcon);

/* evhttp_connection_free calls this first, before it frees the requests and the bufferevent. */
static void on_connection_freed(struct evhttp_connection *evcon, void *arg)
{
	struct connection *connection = arg;
	if (connection->current != NULL)
		end_request_side(connection->current, evcon);
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
		check_drained(server);
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
				 log_prefix(server), open - 1,
				 settings->cap_name ? settings->cap_name : "--max-connections",
				 settings->max_connections, server->refused.count);
			server->refused.count = 0;
		}
		evhttp_connection_free(evcon);
		return;
	}
	/*
	 * Every byte read from here on goes through the scan before evhttp's read
	 * callback sees it; and the input is bounded whoever reads it, evhttp's
	 * own answers included (evhttp_write_buffer reads on with no read
	 * callback while it writes one): a head and a body at most.
	 */
	struct bufferevent *bev = connection->bev;
	const struct config *config = &settings_slot_current(settings->snapshots)->config;
	struct request_scan_limits limits = {config->max_header_size, MAX_BODY_SIZE};
	request_scan_init(&connection->scan, &limits);
	connection->input_watch =
		evbuffer_add_cb(bufferevent_get_input(bev), on_input_changed, connection);
	if (connection->input_watch == NULL) {
		log_error("out of memory for a connection; closing it");
		evhttp_connection_free(evcon);
		return;
	}
	bufferevent_setwatermark(bev, EV_READ, 0, config->max_header_size + MAX_BODY_SIZE);
	/* The first head's deadline runs from the connection's start. */
	head_begins(connection);
	if (server->draining)
		start_last_call(connection); /* taken from the backlog of a closing listener */
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
	} else if (connection->scan.refusal != 0) {
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
static struct bufferevent *on_new_connection(struct event_base *base, void *arg)
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

/* --- The request --- */

const char *exchange_method(const struct exchange *exchange)
{
	if (exchange->req == NULL)
		return "-";
	switch (evhttp_request_get_command(exchange->req)) {
	case EVHTTP_REQ_GET:
		return "GET";
	case EVHTTP_REQ_HEAD:
		return "HEAD";
	case EVHTTP_REQ_POST:
		return "POST";
	case EVHTTP_REQ_PUT:
		return "PUT";
	case EVHTTP_REQ_DELETE:
		return "DELETE";
	case EVHTTP_REQ_OPTIONS:
		return "OPTIONS";
	case EVHTTP_REQ_TRACE:
		return "TRACE";
	case EVHTTP_REQ_CONNECT:
		return "CONNECT";
	case EVHTTP_REQ_PATCH:
		return "PATCH";
	}
	return "-";
}

int exchange_is_head(const struct exchange *exchange)
{
	return exchange->req != NULL && evhttp_request_get_command(exchange->req) == EVHTTP_REQ_HEAD;
}

const char *exchange_target(const struct exchange *exchange)
{
	if (exchange->origin_target != NULL)
		return exchange->origin_target;
	return exchange->req != NULL ? evhttp_request_get_uri(exchange->req) : "-";
}

const char *exchange_header(const struct exchange *exchange, const char *name)
{
	if (exchange->req == NULL)
		return NULL;
	return evhttp_find_header(evhttp_request_get_input_headers(exchange->req), name);
}

const struct settings *exchange_snapshot(const struct exchange *exchange)
{
	return exchange->snapshot;
}

const struct config *exchange_config(const struct exchange *exchange)
{
	return &exchange->snapshot->config;
}

int exchange_can_respond(const struct exchange *exchange)
{
	return exchange->req != NULL && exchange->connection != NULL && exchange->status == 0;
}

struct metrics_worker *exchange_metrics(const struct exchange *exchange)
{
	return exchange->server->settings->metrics;
}

/*
 * Any "close" among the Connection lines (framing_closes); past
 * CONNECTION_LINES_MAX lines, a client this odd is closed on too.
 */
static int connection_lines_close(struct evhttp_request *req)
{
	struct evkeyvalq *headers = evhttp_request_get_input_headers(req);
	const char *values[CONNECTION_LINES_MAX];
	size_t count = 0;
	for (struct evkeyval *header = headers->tqh_first; header != NULL;
	     header = header->next.tqe_next) {
		if (evutil_ascii_strcasecmp(header->key, "Connection") != 0)
			continue;
		if (count == CONNECTION_LINES_MAX)
			return 1;
		values[count++] = header->value;
	}
	return framing_closes(values, count);
}

/*
 * An absolute-form target ("http://host/musicdb/...", RFC 9112 section
 * 3.2.2) is served as its origin-form: the path and query, kept in target.
 * evhttp_parse_request_line marks it EVHTTP_PROXY_REQUEST (it names no
 * vhost of ours), which evhttp_is_request_connection_close would answer with
 * a close unless "Proxy-Connection: keep-alive": it is a request to us,
 * kept alive like any other. 0, or -1 if out of memory.
 */
static int take_origin_form(struct exchange *exchange)
{
	struct evhttp_request *req = exchange->req;
	const char *uri = evhttp_request_get_uri(req);
	if (uri[0] == '/' || uri[0] == '*' || evhttp_request_get_command(req) == EVHTTP_REQ_CONNECT)
		return 0;
	const struct evhttp_uri *parsed = evhttp_request_get_evhttp_uri(req);
	const char *path = evhttp_uri_get_path(parsed), *query = evhttp_uri_get_query(parsed);
	if (path == NULL || path[0] == '\0')
		path = "/";
	size_t size = strlen(path) + (query != NULL ? strlen(query) + 1 : 0) + 1;
	exchange->origin_target = malloc(size);
	if (exchange->origin_target == NULL)
		return -1;
	snprintf(exchange->origin_target, size, "%s%s%s", path, query != NULL ? "?" : "",
		 query != NULL ? query : "");
	req->flags &= ~EVHTTP_PROXY_REQUEST;
	return 0;
}

/*
 * The X-Forwarded-For lines, in order (RFC 9110 reads repeated lines as one
 * list); past FORWARDED_LINES_MAX the last ones, which name the nearest hops.
 */
static size_t forwarded_for_lines(struct evhttp_request *req, const char **lines)
{
	struct evkeyvalq *headers = evhttp_request_get_input_headers(req);
	size_t count = 0;
	for (struct evkeyval *header = headers->tqh_first; header != NULL;
	     header = header->next.tqe_next) {
		if (evutil_ascii_strcasecmp(header->key, "X-Forwarded-For") != 0)
			continue;
		if (count == FORWARDED_LINES_MAX) {
			memmove(lines, lines + 1, (FORWARDED_LINES_MAX - 1) * sizeof(*lines));
			count--;
		}
		lines[count++] = header->value;
	}
	return count;
}

/* The request ended (answered, or the client left first: 499); counted once, as it is logged. */
static void count_request(struct exchange *exchange, int status, uint64_t body_bytes)
{
	metrics_count_request(exchange->server->settings->metrics,
			      metrics_method_of(exchange_method(exchange)), status, body_bytes);
}

static void log_access(struct exchange *exchange, struct evhttp_connection *evcon, int status,
		       uint64_t body_bytes)
{
	const struct settings *settings = exchange->snapshot;
	struct evhttp_request *req = exchange->req;
	if (settings->access_log == NULL || req == NULL || !exchange->server->settings->log_requests)
		return;
	char *peer_address = NULL;
	ev_uint16_t peer_port = 0;
	char forwarded_client[PROXY_TRUST_ADDRESS_MAX];
	const char *forwarded[FORWARDED_LINES_MAX];
	evhttp_connection_get_peer(evcon, &peer_address, &peer_port);
	size_t forwarded_count = settings->trusted_proxy_count > 0 ? forwarded_for_lines(req, forwarded)
								   : 0;

	struct access_entry entry = {
		.client = proxy_trust_client_lines(settings->trusted_proxies,
						   settings->trusted_proxy_count, peer_address,
						   forwarded, forwarded_count, forwarded_client,
						   sizeof(forwarded_client)),
		.time = exchange->started_wall,
		.method = exchange_method(exchange),
		.target = evhttp_request_get_uri(req),
		.http_major = req->major,
		.http_minor = req->minor,
		.status = status,
		.body_bytes = body_bytes,
		.referer = exchange_header(exchange, "Referer"),
		.user_agent = exchange_header(exchange, "User-Agent"),
		.seconds = clock_seconds_since(&exchange->started),
	};
	access_log_write(settings->access_log, &entry);
}

/* Stops watching the client and the deadline (before responding, or when the work is done). */
static void stop_waiting(struct exchange *exchange)
{
	if (exchange->client_watch != NULL) {
		event_free(exchange->client_watch);
		exchange->client_watch = NULL;
	}
	if (exchange->deadline != NULL) {
		event_free(exchange->deadline);
		exchange->deadline = NULL;
	}
}

/* Every byte was written (evhttp_send_done): evhttp is about to reuse or free the connection. */
static void on_complete(struct evhttp_request *req, void *arg)
{
	struct exchange *exchange = arg;
	struct exchange_server *server = exchange->server;
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
	struct connection *connection = exchange->connection;

	count_request(exchange, exchange->status, exchange->body_length);
	log_access(exchange, evcon, exchange->status, exchange->body_length);
	bufferevent_set_timeouts(bev, &server->keepalive_timeout, &server->keepalive_timeout);
	int closes = exchange->closes || exchange->close_after;
	if (closes) {
		/*
		 * evhttp_is_request_connection_close ignores "Connection: close"
		 * after CONNECT; the request is done, so it is made to look like any
		 * other and evhttp_send_done frees the connection, as after the rest.
		 */
		req->type = EVHTTP_REQ_GET;
		/*
		 * And evhttp_is_connection_close then holds whatever the request
		 * said: the connection is freed, as the lingering close assumes.
		 */
		if (evhttp_add_header(evhttp_request_get_output_headers(req), "Connection",
				      "close") == 0) {
			stop_waiting(exchange); /* its watch on the socket goes first */
			linger_after(server, bev);
		}
	}
	stop_waiting(exchange);
	if (connection != NULL) {
		connection->current = NULL;
		schedule_refusal(connection);
		if (!closes) {
			/* A head that began while this answer was out gets its deadline from now. */
			if (request_scan_in_head(&connection->scan))
				head_begins(connection);
			/* Its head promised keep-alive: the client may send its next request now. */
			if (server->draining)
				start_last_call(connection);
		}
	}
	exchange->req = NULL;
	exchange->connection = NULL;
	exchange_release(exchange);
}

/* The connection goes before the response completed. */
static void end_request_side(struct exchange *exchange, struct evhttp_connection *evcon)
{
	int status = exchange->status ? exchange->status : STATUS_CLIENT_CLOSED;
	uint64_t sent = 0;
	struct evbuffer *output = bufferevent_get_output(evhttp_connection_get_bufferevent(evcon));
	if (exchange->status != 0) {
		size_t unsent = evbuffer_get_length(output);
		sent = exchange->body_appended > unsent ? exchange->body_appended - unsent : 0;
	}
	count_request(exchange, status, sent);
	log_access(exchange, evcon, status, sent);
	stop_waiting(exchange);
	if (exchange->streaming) {
		exchange->streaming = 0;
		evbuffer_remove_cb_entry(output, exchange->drain_watch);
		exchange->drain_watch = NULL;
	}
	/* A stream waiting for the client to read hears now that it never will. */
	exchange_wait_cb on_drained = exchange->on_drained;
	exchange->on_drained = NULL;

	/*
	 * evhttp_connection_incoming_fail detaches a request it has not seen
	 * answered (req->evcon = NULL) and leaves it to whoever holds it.
	 */
	if (exchange->req != NULL && evhttp_request_get_connection(exchange->req) == NULL)
		evhttp_request_free(exchange->req);
	exchange->req = NULL;
	exchange->connection->current = NULL;
	exchange->connection = NULL;
	if (on_drained != NULL) {
		on_drained(exchange, exchange->drain_arg);
		exchange_release(exchange); /* the wait's reference */
	}
	exchange_release(exchange);
}

/* evhttp's request callback: a head is complete. */
static void on_evhttp_request(struct evhttp_request *req, void *arg)
{
	struct exchange_server *server = arg;
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct connection *connection = connection_of(server, evcon);
	struct exchange *exchange = calloc(1, sizeof(*exchange));
	if (exchange == NULL) {
		log_error("out of memory for a request; closing its connection");
		evhttp_connection_free(evcon);
		return;
	}
	exchange->server = server;
	exchange->connection = connection;
	exchange->req = req;
	exchange->snapshot = settings_ref(settings_slot_current(server->settings->snapshots));
	exchange->started = clock_now();
	exchange->started_wall = time(NULL);
	/* One for the request side (ended by on_complete or the connection going), one for us. */
	exchange->refs = 2;
	server->live++;
	evhttp_request_set_on_complete_cb(req, on_complete, exchange);

	if (connection != NULL) {
		connection->current = exchange;
	} else {
		/* Not set up (out of memory at its start): it serves this one request. */
		exchange_close_after_response(exchange);
	}
	if (connection != NULL)
		connection->handed++;
	if (take_origin_form(exchange) < 0) {
		log_error("out of memory for a request; closing its connection");
		exchange_release(exchange); /* ours; the request side ends with the connection */
		evhttp_connection_free(evcon);
		return;
	}
	if (connection_lines_close(req))
		exchange_close_after_response(exchange);
	if (server->draining || evhttp_request_get_command(req) == EVHTTP_REQ_CONNECT)
		exchange_close_after_response(exchange);

	server->on_request(exchange, server->arg);
	exchange_release(exchange);
}

void exchange_close_after_response(struct exchange *exchange)
{
	if (exchange->close_after || exchange->req == NULL)
		return;
	exchange->close_after = 1;
	/* evhttp_send_done frees the connection after a response with this header. */
	evhttp_add_header(evhttp_request_get_output_headers(exchange->req), "Connection", "close");
}

static void exchange_release(struct exchange *exchange)
{
	if (--exchange->refs > 0)
		return;
	stop_waiting(exchange);
	if (exchange->delivery != NULL)
		event_free(exchange->delivery);
	if (exchange->drained != NULL)
		event_free(exchange->drained);
	settings_unref(exchange->snapshot);
	free(exchange->origin_target);
	struct exchange_server *server = exchange->server;
	free(exchange);
	server->live--;
	check_drained(server);
}

/* --- Waiting --- */

/*
 * While a request waits, evhttp reads nothing (evhttp_handle_request disabled
 * reading), so this watch reads for it, into the connection's own input
 * (bounded by --max-header-size: pipelined requests are kept for later). A
 * read error is the client gone (an RST; EPOLLERR, which epoll reports
 * level-triggered and libevent as read and write, so it must be consumed
 * here); a FIN is only the end of its requests: the answer still goes out.
 */
static void on_client_activity(evutil_socket_t fd, short what, void *arg)
{
	struct exchange *exchange = arg;
	struct connection *connection = exchange->connection;
	(void)what;
	if (connection == NULL) {
		stop_waiting(exchange);
		return;
	}
	struct evbuffer *input = bufferevent_get_input(connection->bev);
	size_t held = evbuffer_get_length(input);
	size_t limit = exchange_config(exchange)->max_header_size;
	if (held >= limit) {
		/* Enough kept; a client leaving now is noticed when the answer is written. */
		event_del(exchange->client_watch);
		return;
	}
	/* bufferevent_readcb unfreezes its input's end around its own reads, as here. */
	evbuffer_unfreeze(input, 0);
	int got = evbuffer_read(input, fd, (int)(limit - held));
	int error_number = errno;
	evbuffer_freeze(input, 0);
	if (got > 0)
		return;
	if (got == 0) {
		connection->peer_closed = 1;
		event_del(exchange->client_watch);
		return;
	}
	if (error_number == EAGAIN || error_number == EWOULDBLOCK || error_number == EINTR)
		return;
	log_debug("client left while its request was pending (%s); closing the connection",
		  strerror(error_number));
	/* Runs on_connection_freed, which ends the request side. */
	evhttp_connection_free(connection->evcon);
}

static void on_wait_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct exchange *exchange = arg;
	(void)fd;
	(void)what;
	stop_waiting(exchange);
	if (exchange_can_respond(exchange) && exchange->on_deadline != NULL)
		exchange->on_deadline(exchange, exchange->wait_arg);
}

static int start_waiting(struct exchange *exchange, unsigned timeout_ms,
			 exchange_wait_cb on_deadline)
{
	struct event_base *base = exchange->server->base;
	struct connection *connection = exchange->connection;
	struct timeval timeout = {.tv_sec = timeout_ms / 1000,
				  .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000};

	exchange->on_deadline = on_deadline;
	exchange->deadline = evtimer_new(base, on_wait_deadline, exchange);
	if (exchange->deadline == NULL || evtimer_add(exchange->deadline, &timeout) < 0)
		goto fail;
	if (connection != NULL && !connection->peer_closed) {
		exchange->client_watch = event_new(base, connection->fd, EV_READ | EV_PERSIST,
						   on_client_activity, exchange);
		if (exchange->client_watch == NULL || event_add(exchange->client_watch, NULL) < 0)
			goto fail;
	}
	return 0;
fail:
	stop_waiting(exchange);
	return -1;
}

/* On the worker's loop: whoever did the work activated the delivery. */
static void on_work_delivered(evutil_socket_t fd, short what, void *arg)
{
	struct exchange *exchange = arg;
	(void)fd;
	(void)what;
	stop_waiting(exchange);
	exchange->waiting = 0;
	exchange->on_done(exchange, exchange->wait_arg);
	exchange_release(exchange); /* the wait's reference */
}

struct event *exchange_wait(struct exchange *exchange, unsigned timeout_ms,
			    exchange_wait_cb on_done, exchange_wait_cb on_deadline, void *arg)
{
	if (exchange->waiting)
		return NULL;
	if (exchange->delivery == NULL) {
		exchange->delivery =
			event_new(exchange->server->base, -1, 0, on_work_delivered, exchange);
		if (exchange->delivery == NULL)
			return NULL;
	}
	if (exchange_can_respond(exchange) && start_waiting(exchange, timeout_ms, on_deadline) < 0)
		return NULL;
	exchange->on_done = on_done;
	exchange->wait_arg = arg;
	exchange->waiting = 1;
	exchange->refs++; /* for the work, until its delivery runs */
	return exchange->delivery;
}

void exchange_wait_cancel(struct exchange *exchange)
{
	if (!exchange->waiting)
		return;
	stop_waiting(exchange);
	exchange->waiting = 0;
	exchange_release(exchange); /* the wait's reference */
}

/* --- The response on the wire --- */

/*
 * Writes what is queued straight to the socket instead of waiting for the
 * loop to report it writable: the head by writev, file parts by sendfile, as
 * far as the socket takes them. If everything went out, the bufferevent's
 * write callback runs now, so evhttp completes the request (and reads the
 * next) in this same loop pass: one wake-up per request, as nginx. What the
 * socket did not take is left to the bufferevent, writing only. The
 * exchange's request may be complete (and freed) when this returns.
 */
static void flush_to_socket(struct bufferevent *bev)
{
	struct evbuffer *output = bufferevent_get_output(bev);
	evutil_socket_t fd = bufferevent_getfd(bev);

	/* bufferevent_socket_new froze its output's start; it alone drains it, except here. */
	evbuffer_unfreeze(output, 1);
	for (int attempt = 0; attempt < FLUSH_WRITES_MAX && evbuffer_get_length(output) > 0;
	     attempt++) {
		if (evbuffer_write(output, fd) <= 0)
			break; /* the socket is full, or failed: the bufferevent takes over */
	}
	evbuffer_freeze(output, 1);
	if (evbuffer_get_length(output) == 0)
		bufferevent_trigger(bev, EV_WRITE, 0);
	else
		bufferevent_enable(bev, EV_WRITE);
}

/*
 * What the Connection header must say, decided as evhttp_send_done decides
 * whether to keep the connection after this response, so the two agree.
 */
static enum response_connection connection_header(const struct exchange *exchange)
{
	struct evhttp_request *req = exchange->req;
	struct evkeyvalq *input = evhttp_request_get_input_headers(req);
	const char *connection = evhttp_find_header(input, "Connection");
	int asked_close, asked_keep_alive = connection && evutil_ascii_strcasecmp(connection,
									       "keep-alive") == 0;
	if (req->flags & EVHTTP_PROXY_REQUEST) {
		const char *proxy = evhttp_find_header(input, "Proxy-Connection");
		asked_close = proxy == NULL || evutil_ascii_strcasecmp(proxy, "keep-alive") != 0;
	} else {
		asked_close = connection && evutil_ascii_strcasecmp(connection, "close") == 0;
	}
	if (exchange->close_after || (asked_close && req->type != EVHTTP_REQ_CONNECT))
		return RESPONSE_CONNECTION_CLOSE;
	if (req->major == 1 && req->minor == 0)
		return asked_keep_alive ? RESPONSE_CONNECTION_KEEP_ALIVE : RESPONSE_CONNECTION_NONE;
	return RESPONSE_CONNECTION_NONE;
}

/*
 * Formats the head and queues it on the output; the bufferevent, or NULL
 * when the head cannot be sent (logged, and the connection closed).
 */
static struct bufferevent *queue_head(struct exchange *exchange, struct response_head *head)
{
	struct exchange_server *server = exchange->server;
	struct evhttp_request *req = exchange->req;
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
	char text[RESPONSE_HEAD_MAX];

	stop_waiting(exchange);
	head->http_minor = req->minor;
	head->date = http_date_now(&server->date);
	head->connection = connection_header(exchange);
	/* evhttp_send_done's rule: before HTTP/1.1 only "Connection: keep-alive" keeps it. */
	exchange->closes = head->connection == RESPONSE_CONNECTION_CLOSE ||
			   ((req->major < 1 || (req->major == 1 && req->minor < 1)) &&
			    head->connection != RESPONSE_CONNECTION_KEEP_ALIVE);
	size_t length = response_head_format(text, sizeof(text), head);
	if (length == 0 || evbuffer_add(bufferevent_get_output(bev), text, length) < 0) {
		log_error("cannot format or queue a %d response head; closing the connection",
			  head->status);
		evhttp_connection_free(evcon);
		return NULL;
	}
	exchange->status = head->status;
	/* Before the flush, which may end the request (and count it): a scrape sees this first. */
	metrics_observe_first_byte(server->settings->metrics, clock_seconds_since(&exchange->started));
	return bev;
}

/*
 * As evhttp_write_buffer does for its own replies (no read callback, its
 * write and error callbacks), but with reading off: a client's FIN or bytes
 * it sends meanwhile wait until the answer is written, so neither cuts the
 * answer short nor grows the input. A client that left is seen by a failed
 * write, or by the send timeout. write_done is evhttp's write callback, or
 * NULL while a body is still streaming.
 */
static void write_only(struct exchange *exchange, struct bufferevent *bev,
		       bufferevent_data_cb write_done)
{
	bufferevent_event_cb on_event;
	void *callback_arg;
	bufferevent_getcb(bev, NULL, NULL, &on_event, &callback_arg);
	bufferevent_setcb(bev, NULL, write_done, on_event, callback_arg);
	bufferevent_disable(bev, EV_READ);
	/*
	 * req->chunked says how the request's body was framed until
	 * evhttp_send_reply_start sets it for the response, which is not called
	 * here; left set (a chunked request body, or Debian's libevent setting it
	 * for any Transfer-Encoding ending in chunked), evhttp_send_reply_end
	 * would append a last-chunk "0\r\n\r\n" to our length-framed answer.
	 */
	exchange->req->chunked = 0;
}

void exchange_send(struct exchange *exchange, struct response_head *head, uint64_t body_length,
		   exchange_fill_cb fill, const void *context)
{
	if (!exchange_can_respond(exchange))
		return;
	struct bufferevent *bev = queue_head(exchange, head);
	if (bev == NULL)
		return;
	int with_body = fill != NULL && body_length > 0 && !exchange_is_head(exchange);
	exchange->body_length = exchange->body_appended = with_body ? body_length : 0;
	if (with_body) {
		/* Only the no-progress send timeout while a body goes out (libevent #715). */
		bufferevent_set_timeouts(bev, NULL, &exchange->server->send_timeout);
		fill(bufferevent_get_output(bev), context);
	}
	bufferevent_data_cb write_done;
	bufferevent_getcb(bev, NULL, &write_done, NULL, NULL);
	write_only(exchange, bev, write_done);
	/* With output queued, evhttp_send_reply_end leaves evhttp_send_done to the write callback. */
	evhttp_send_reply_end(exchange->req);
	flush_to_socket(bev);
}

/* --- A body streamed as it arrives --- */

static void on_drained_event(evutil_socket_t fd, short what, void *arg)
{
	struct exchange *exchange = arg;
	(void)fd;
	(void)what;
	exchange_wait_cb on_drained = exchange->on_drained;
	if (on_drained == NULL)
		return; /* answered already, by the connection going */
	exchange->on_drained = NULL;
	on_drained(exchange, exchange->drain_arg);
	exchange_release(exchange); /* the wait's reference */
}

/* On every change of the output while streaming: wakes a waiter once it fell low enough. */
static void on_output_changed(struct evbuffer *output, const struct evbuffer_cb_info *info,
			      void *arg)
{
	struct exchange *exchange = arg;
	if (info->n_deleted > 0 && exchange->on_drained != NULL &&
	    evbuffer_get_length(output) <= exchange->drain_low)
		event_active(exchange->drained, EV_TIMEOUT, 1);
}

int exchange_stream_start(struct exchange *exchange, struct response_head *head, uint64_t body_length)
{
	if (!exchange_can_respond(exchange))
		return -1;
	if (body_length == 0 || exchange_is_head(exchange)) {
		exchange_send(exchange, head, body_length, NULL, NULL);
		return 1;
	}
	struct evhttp_connection *evcon = evhttp_request_get_connection(exchange->req);
	if (exchange->drained == NULL)
		exchange->drained = event_new(exchange->server->base, -1, 0, on_drained_event,
					      exchange);
	if (exchange->drained == NULL) {
		log_error("out of memory for a streamed response; closing the connection");
		evhttp_connection_free(evcon);
		return -1;
	}
	struct bufferevent *bev = queue_head(exchange, head);
	if (bev == NULL)
		return -1;
	exchange->drain_watch =
		evbuffer_add_cb(bufferevent_get_output(bev), on_output_changed, exchange);
	if (exchange->drain_watch == NULL) {
		log_error("out of memory for a streamed response; closing the connection");
		evhttp_connection_free(evcon);
		return -1;
	}
	exchange->body_length = body_length;
	exchange->body_appended = 0;
	exchange->streaming = 1;
	bufferevent_set_timeouts(bev, NULL, &exchange->server->send_timeout);
	/*
	 * No write callback until the last byte is queued: evhttp_write_cb calls
	 * evcon->cb whenever the output empties, and on a kept-alive connection
	 * that is still evhttp_send_done from the previous response, which would
	 * end this one between two parts.
	 */
	bufferevent_getcb(bev, NULL, &exchange->evhttp_write_cb, NULL, NULL);
	write_only(exchange, bev, NULL);
	flush_to_socket(bev);
	return 0;
}

int exchange_stream_alive(const struct exchange *exchange)
{
	return exchange->streaming;
}

size_t exchange_stream_queued(const struct exchange *exchange)
{
	if (!exchange->streaming)
		return 0;
	struct evhttp_connection *evcon = evhttp_request_get_connection(exchange->req);
	return evbuffer_get_length(bufferevent_get_output(evhttp_connection_get_bufferevent(evcon)));
}

int exchange_stream_append(struct exchange *exchange, struct evbuffer *part)
{
	if (!exchange->streaming)
		return -1;
	struct bufferevent *bev =
		evhttp_connection_get_bufferevent(evhttp_request_get_connection(exchange->req));
	size_t length = evbuffer_get_length(part);
	if (length > exchange->body_length - exchange->body_appended ||
	    evbuffer_add_buffer(bufferevent_get_output(bev), part) < 0) {
		log_error("a streamed body part does not fit its Content-Length or memory; "
			  "closing the connection");
		exchange_stream_abort(exchange);
		return -1;
	}
	exchange->body_appended += length;
	if (exchange->body_appended < exchange->body_length) {
		flush_to_socket(bev);
		return 0;
	}
	/* The last byte is queued: from here on it completes as exchange_send's answers do. */
	exchange->streaming = 0;
	evbuffer_remove_cb_entry(bufferevent_get_output(bev), exchange->drain_watch);
	exchange->drain_watch = NULL;
	write_only(exchange, bev, exchange->evhttp_write_cb);
	evhttp_send_reply_end(exchange->req);
	flush_to_socket(bev);
	return 0;
}

int exchange_stream_when_drained(struct exchange *exchange, size_t low, exchange_wait_cb on_drained,
				 void *arg)
{
	if (!exchange->streaming || exchange->on_drained != NULL)
		return -1;
	exchange->drain_low = low;
	exchange->on_drained = on_drained;
	exchange->drain_arg = arg;
	exchange->refs++; /* for the wait */
	if (exchange_stream_queued(exchange) <= low)
		event_active(exchange->drained, EV_TIMEOUT, 1);
	return 0;
}

void exchange_stream_abort(struct exchange *exchange)
{
	if (!exchange->streaming)
		return;
	/* Runs on_connection_freed, which ends the request side and any wait. */
	evhttp_connection_free(evhttp_request_get_connection(exchange->req));
}

/* --- The server --- */

struct exchange_server *exchange_server_new(struct event_base *base, int listen_fd,
					    const struct exchange_settings *settings,
					    exchange_request_cb on_request, void *arg, char *error,
					    size_t error_size)
{
	/* Only settings a restart changes: before the worker's loop runs, its creator's to read. */
	const struct config *config = &settings_slot_current(settings->snapshots)->config;
	struct exchange_server *server = calloc(1, sizeof(*server));
	if (server == NULL || (server->http = evhttp_new(base)) == NULL ||
	    (server->accept_resume = evtimer_new(base, on_accept_resume, server)) == NULL ||
	    (server->backlog_pass = evtimer_new(base, on_backlog_pass, server)) == NULL) {
		snprintf(error, error_size, "out of memory for an HTTP server");
		goto fail;
	}
	server->base = base;
	server->settings = settings;
	linger_set_init(&server->lingering, base, on_lingered, server);
	server->on_request = on_request;
	server->arg = arg;
	server->keepalive_timeout = (struct timeval){.tv_sec = config->keepalive_timeout};
	server->send_timeout = (struct timeval){.tv_sec = config->send_timeout};
	server->header_timeout = (struct timeval){.tv_sec = config->header_timeout};

	evhttp_set_gencb(server->http, on_evhttp_request, server);
	evhttp_set_bevcb(server->http, on_new_connection, server);
	/*
	 * Every method is handed to us, so that refused ones get a 405 with Allow
	 * (evhttp_set_allowed_methods answers the others 501 itself).
	 */
	evhttp_set_allowed_methods(server->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
							 EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
							 EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
							 EVHTTP_REQ_TRACE | EVHTTP_REQ_PATCH |
							 EVHTTP_REQ_CONNECT);
	evhttp_set_default_content_type(server->http, NULL);
	evhttp_set_timeout_tv(server->http, &server->keepalive_timeout);
	evhttp_set_max_headers_size(server->http, config->max_header_size);
	evhttp_set_max_body_size(server->http, MAX_BODY_SIZE);

	server->bound = evhttp_accept_socket_with_handle(server->http, listen_fd);
	if (server->bound == NULL) {
		snprintf(error, error_size, "cannot accept on the listening socket");
		close(listen_fd);
		listen_fd = -1;
		goto fail;
	}
	server->listener = evhttp_bound_socket_get_listener(server->bound);
	if (register_listener(server->listener, server) < 0) {
		snprintf(error, error_size, "more HTTP servers than %d", EXCHANGE_SERVERS_MAX);
		goto fail;
	}
	/* evhttp_bind_listener sets only the accept callback. */
	evconnlistener_set_error_cb(server->listener, on_accept_error);
	return server;

fail:
	if (listen_fd >= 0 && (server == NULL || server->bound == NULL))
		close(listen_fd);
	if (server != NULL) {
		if (server->accept_resume != NULL)
			event_free(server->accept_resume);
		if (server->backlog_pass != NULL)
			event_free(server->backlog_pass);
		if (server->http != NULL)
			evhttp_free(server->http); /* closes a bound socket */
		free(server);
	}
	return NULL;
}

/* --- Draining --- */

/*
 * The drain's order: the listener closes first, so no new connection comes
 * (the kernel sends them to the other SO_REUSEPORT listeners, the new
 * process's), then connections go one by one as each finishes what it is
 * doing. Nothing is closed under a client: a request already read or being
 * read is answered with "Connection: close"; an idle connection gets a last
 * call (a request on its way is still answered) and then a lingering close.
 */

static void check_drained(struct exchange_server *server)
{
	if (!server->draining || server->freeing || server->on_drained == NULL)
		return;
	if (server->bound != NULL || server->live > 0 || server->connections > 0 ||
	    server->lingering.count > 0)
		return;
	void (*on_drained)(void *arg) = server->on_drained;
	server->on_drained = NULL;
	on_drained(server->on_drained_arg);
}

static void close_listener(struct exchange_server *server)
{
	if (server->bound == NULL)
		return;
	unregister_listener(server->listener);
	evhttp_del_accept_socket(server->http, server->bound); /* closes the socket */
	server->bound = NULL;
	server->listener = NULL;
}

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
	linger_and_close(connection);
}

static void start_last_call(struct connection *connection)
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

/*
 * Closing a listener resets the connections queued on it, unless
 * net.ipv4.tcp_migrate_req hands them to the port's other listeners. So it
 * is closed only once nothing is queued: while poll says a connection is
 * waiting, another loop pass lets evconnlistener's read callback (which
 * accepts until EAGAIN) take it; the timer's zero timeout runs after the
 * pass's I/O callbacks.
 */
static void on_backlog_pass(evutil_socket_t fd, short what, void *arg)
{
	struct exchange_server *server = arg;
	(void)fd;
	(void)what;
	if (server->bound == NULL)
		return;
	struct pollfd queued = {.fd = evconnlistener_get_fd(server->listener), .events = POLLIN};
	if (++server->backlog_passes < BACKLOG_PASSES_MAX && poll(&queued, 1, 0) > 0) {
		struct timeval now = {0, 0};
		evtimer_add(server->backlog_pass, &now);
		return;
	}
	close_listener(server);
	check_drained(server);
}

void exchange_server_drain(struct exchange_server *server, void (*on_drained)(void *arg),
			   void *arg)
{
	server->draining = 1;
	server->on_drained = on_drained;
	server->on_drained_arg = arg;
	evtimer_del(server->accept_resume);
	if (server->bound != NULL) {
		evconnlistener_enable(server->listener); /* if an accept error paused it */
		on_backlog_pass(-1, EV_TIMEOUT, server);
	}
	for (size_t fd = 0; fd < server->by_fd_size; fd++) {
		struct connection *connection = server->by_fd[fd];
		if (connection == NULL)
			continue;
		if (connection->current == NULL)
			start_last_call(connection);
		else if (connection->current->status == 0)
			exchange_close_after_response(connection->current); /* not answered yet */
	}
	check_drained(server);
}

unsigned exchange_server_live(const struct exchange_server *server)
{
	return server->live;
}

unsigned exchange_server_open(const struct exchange_server *server)
{
	return server->connections + server->lingering.count;
}

void exchange_server_free(struct exchange_server *server)
{
	if (server == NULL)
		return;
	server->freeing = 1;
	if (server->listener != NULL)
		unregister_listener(server->listener);
	/* Frees every connection: each one's close callback ends its request side. */
	evhttp_free(server->http);
	atomic_fetch_sub(server->settings->open_connections, server->lingering.count);
	linger_set_clear(&server->lingering);
	event_free(server->accept_resume);
	event_free(server->backlog_pass);
	free(server->by_fd);
	free(server);
}
