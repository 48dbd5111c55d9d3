/*
 * exchange: a request and its answer on the wire, and the one place that
 * relies on how evhttp (libevent 2.1.12) works inside; each such place
 * names the function whose behaviour it mirrors or works around. Each
 * complete head becomes an exchange (exchange_on_request); its answer goes
 * out through exchange_send, with reading off until it is written; then
 * (on_complete) the access-log line is written and the connection waits for
 * the next head.
 *
 * A body that arrives later (GridFS chunks) is streamed: exchange_stream_start
 * sends the head with the write callback unset, each exchange_stream_append
 * adds a part, a callback on the output wakes a waiter once the socket took
 * enough (exchange_stream_when_drained: the sender's backpressure), and the
 * append that completes Content-Length puts evhttp's write callback back and
 * ends the request as exchange_send does. A paced answer (exchange_pace), or
 * one whose file goes out a window at a time once the disk has it
 * (exchange_feed_windows), is sent as such a stream whatever its body:
 * feed.c records the body and moves it to the output a part at a time,
 * telling what it moved through its sink (stream_added).
 */
#include "wire/exchange.h"
#include "wire/wire_state.h"

#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/clock.h"
#include "base/log.h"
#include "http/framing.h"
#include "http/url_redact.h"

/* nginx's status for a client that closed the connection before the response. */
#define STATUS_CLIENT_CLOSED 499
/* Connection lines read as one list of options; past this many, close is assumed. */
#define CONNECTION_LINES_MAX 8

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

/* The names exchange_headers is asked for at once; more are looked up one by one. */
#define HEADERS_AT_ONCE_MAX 8

void exchange_headers(const struct exchange *exchange, const char *const *names,
		      const char **values, size_t count)
{
	size_t lengths[HEADERS_AT_ONCE_MAX], missing = count;
	for (size_t i = 0; i < count; i++) {
		values[i] = NULL;
		if (i >= HEADERS_AT_ONCE_MAX)
			values[i] = exchange_header(exchange, names[i]);
		else
			lengths[i] = strlen(names[i]);
	}
	if (exchange->req == NULL || count == 0)
		return;
	if (missing > HEADERS_AT_ONCE_MAX)
		missing = HEADERS_AT_ONCE_MAX;
	/* Lengths first: most fields are none of the names, and that settles it without a compare. */
	struct evkeyvalq *headers = evhttp_request_get_input_headers(exchange->req);
	for (struct evkeyval *header = headers->tqh_first; header != NULL && missing > 0;
	     header = header->next.tqe_next) {
		size_t length = strlen(header->key);
		for (size_t i = 0; i < count && i < HEADERS_AT_ONCE_MAX; i++) {
			if (values[i] == NULL && lengths[i] == length &&
			    evutil_ascii_strcasecmp(header->key, names[i]) == 0) {
				values[i] = header->value;
				missing--;
			}
		}
	}
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

void exchange_stop_waiting(struct exchange *exchange)
{
	if (exchange->deadline != NULL) {
		event_free(exchange->deadline);
		exchange->deadline = NULL;
	}
}

/* --- The client's limits --- */

void exchange_pace(struct exchange *exchange, uint64_t rate, uint64_t after)
{
	exchange->pace_rate = rate;
	exchange->pace_after = after;
}

/* The client's place is taken here, and given back (end_client_limits) or kept with the
 * connection (keep_client_place) below: one file owns it. */
enum address_take exchange_hold_client_place(struct exchange *exchange,
					     const uint8_t key[ADDRESS_KEY_SIZE], unsigned cap)
{
	struct address_counts *places = exchange->server->settings->client_places;
	if (places == NULL || exchange->client_place != NULL)
		return ADDRESS_TAKEN;
	/* The connection's last answer still on its way to this client: its place goes on here. */
	struct connection *connection = exchange->connection;
	if (connection != NULL &&
	    (exchange->client_place = unsent_take(&connection->unsent, key)) != NULL)
		return ADDRESS_TAKEN;
	return address_counts_take(places, key, cap, &exchange->client_place);
}

/* A gate that no feed took (no body after all) is given back. */
static void drop_gate(struct exchange *exchange)
{
	if (exchange->gate.ready != NULL)
		exchange->gate.release(exchange->gate.arg);
	exchange->gate.ready = NULL;
}

/* The request side ended: the client's place goes back, and a fed body's rest with it. */
static void end_client_limits(struct exchange *exchange)
{
	feed_free(exchange->feed);
	exchange->feed = NULL;
	drop_gate(exchange);
	if (exchange->client_place != NULL)
		address_counts_give(exchange->client_place);
	exchange->client_place = NULL;
}

/*
 * The answer is written: its last byte is in the kernel's send buffer, not
 * yet at the client. Its client place stays with the connection until the
 * client has the bytes (unsent.h). A place the connection still held for an
 * earlier answer goes back now: only a proxy's connection carries several
 * clients' answers, and a proxy sends the next request once it read the
 * last answer, so that one has all but arrived.
 */
static void keep_client_place(struct exchange *exchange, struct connection *connection)
{
	struct address_count *place = exchange->client_place;
	exchange->client_place = NULL;
	end_client_limits(exchange);
	if (place == NULL)
		return;
	if (connection == NULL) {
		address_counts_give(place);
		return;
	}
	unsent_free(connection->unsent);
	connection->unsent = unsent_keep(exchange->server->base, connection->fd, place,
					 exchange->server->send_timeout);
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
	/* No signed-URL token reaches the log, in the target or in a Referer (url_redact.h). */
	char target[ACCESS_LOG_LINE_MAX], referer[ACCESS_LOG_LINE_MAX];
	const char *parameter = settings->config.url_signing_parameter;
	const char *sent_referer = exchange_header(exchange, "Referer");
	url_redact(evhttp_request_get_uri(req), parameter, target, sizeof(target));
	if (sent_referer != NULL)
		url_redact(sent_referer, parameter, referer, sizeof(referer));
	struct access_entry entry = {
		.client = client_of_connection(exchange, evcon),
		.time = exchange->started_wall,
		.method = exchange_method(exchange),
		.target = target,
		.http_major = req->major,
		.http_minor = req->minor,
		.status = status,
		.body_bytes = body_bytes,
		.referer = sent_referer != NULL ? referer : NULL,
		.user_agent = exchange_header(exchange, "User-Agent"),
		.seconds = clock_seconds_since(&exchange->started),
	};
	access_log_write(settings->access_log, &entry);
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
	keep_client_place(exchange, connection);
	if (exchange->send_timeouts)
		bufferevent_set_timeouts(bev, &server->keepalive_timeout, &server->keepalive_timeout);
	/*
	 * A client that sent its FIN (connection.c's reader saw it while evhttp did
	 * not read) has no request left once its input is empty: this answer ends it.
	 */
	int done_sending = connection != NULL && connection->peer_closed &&
			   evbuffer_get_length(bufferevent_get_input(bev)) == 0;
	int closes = exchange->closes || exchange->close_after || done_sending;
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
			exchange_stop_waiting(exchange); /* its watch on the socket goes first */
			connection_linger_after(server, bev);
		}
	}
	exchange_stop_waiting(exchange);
	if (connection != NULL) {
		connection->current = NULL;
		connection_schedule_refusal(connection);
		if (!closes) {
			/* A head that began while this answer was out gets its deadline from now. */
			if (connection_in_head(connection))
				connection_head_begins(connection);
			/* Its head promised keep-alive: the client may send its next request now. */
			if (server->draining)
				connection_start_last_call(connection);
		}
	}
	exchange->req = NULL;
	exchange->connection = NULL;
	exchange_release(exchange);
}

/* The connection goes before the response completed. */
void exchange_end_request_side(struct exchange *exchange, struct evhttp_connection *evcon)
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
	end_client_limits(exchange);
	exchange_stop_waiting(exchange);
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
void exchange_on_request(struct evhttp_request *req, void *arg)
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

void exchange_release(struct exchange *exchange)
{
	if (--exchange->refs > 0)
		return;
	exchange_stop_waiting(exchange);
	if (exchange->delivery != NULL)
		event_free(exchange->delivery);
	if (exchange->drained != NULL)
		event_free(exchange->drained);
	end_client_limits(exchange); /* a request side that never began (out of memory) */
	settings_unref(exchange->snapshot);
	free(exchange->origin_target);
	struct exchange_server *server = exchange->server;
	free(exchange);
	server->live--;
	server->check_drained(server);
}

/* --- The response on the wire --- */

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
 * Formats the head into text (RESPONSE_HEAD_MAX bytes), its length in
 * *length, and queues it on the output unless keep is set (then the caller
 * sends or queues it); the bufferevent, or NULL when the head cannot be sent
 * (logged, and the connection closed).
 */
static struct bufferevent *make_head(struct exchange *exchange, struct response_head *head,
				     char *text, size_t *length, int keep)
{
	struct exchange_server *server = exchange->server;
	struct evhttp_request *req = exchange->req;
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);

	exchange_stop_waiting(exchange);
	head->http_minor = req->minor;
	head->connection = connection_header(exchange);
	/* evhttp_send_done's rule: before HTTP/1.1 only "Connection: keep-alive" keeps it. */
	exchange->closes = head->connection == RESPONSE_CONNECTION_CLOSE ||
			   ((req->major < 1 || (req->major == 1 && req->minor < 1)) &&
			    head->connection != RESPONSE_CONNECTION_KEEP_ALIVE);
	head->date = http_date_now(&server->date); /* the moment the head is formatted */
	*length = response_head_format(text, RESPONSE_HEAD_MAX, head);
	if (*length == 0 ||
	    (!keep && evbuffer_add(bufferevent_get_output(bev), text, *length) < 0)) {
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

/* While a body goes out: no read timeout, the send timeout on writes (on_complete undoes it). */
static void send_timeouts(struct exchange *exchange, struct bufferevent *bev)
{
	bufferevent_set_timeouts(bev, NULL, &exchange->server->send_timeout);
	exchange->send_timeouts = 1;
}

/* Formats the head and queues it on the output (make_head). */
static struct bufferevent *queue_head(struct exchange *exchange, struct response_head *head)
{
	char text[RESPONSE_HEAD_MAX];
	size_t length;
	return make_head(exchange, head, text, &length, 0);
}

/*
 * As evhttp_write_buffer does for its own replies (no read callback, its
 * write and error callbacks), but with evhttp's reading off: the
 * connection's reader (connection.c) reads on meanwhile, into the bounded
 * input, so a client's FIN only marks its requests ended and its bytes wait
 * there, neither cutting the answer short nor growing the input past a head
 * and a body; an RST ends the connection at once. A client that left quietly
 * is seen by a failed write, or by the send timeout. write_done is evhttp's
 * write callback, or NULL while a body is still streaming.
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

static void send_fed(struct exchange *exchange, struct response_head *head, uint64_t body_length,
		     exchange_fill_cb fill, const void *context);

void exchange_send(struct exchange *exchange, struct response_head *head, uint64_t body_length,
		   exchange_fill_cb fill, const void *context)
{
	if (!exchange_can_respond(exchange))
		return;
	int with_body = fill != NULL && body_length > 0 && !exchange_is_head(exchange);
	if (with_body && (exchange->pace_rate > 0 || exchange->gate.ready != NULL)) {
		send_fed(exchange, head, body_length, fill, context);
		return;
	}
	drop_gate(exchange); /* no body to feed */
	char text[RESPONSE_HEAD_MAX];
	size_t length;
	struct evhttp_connection *evcon = evhttp_request_get_connection(exchange->req);
	struct evbuffer *output = bufferevent_get_output(evhttp_connection_get_bufferevent(evcon));
	/* With a body and nothing queued, the head waits for it: both may go out directly. */
	int keep = with_body && evbuffer_get_length(output) == 0;
	struct bufferevent *bev = make_head(exchange, head, text, &length, keep);
	if (bev == NULL)
		return;
	exchange->body_length = exchange->body_appended = with_body ? body_length : 0;
	size_t text_before_file = 0;
	if (with_body) {
		size_t head_length = keep ? length : evbuffer_get_length(output);
		struct exchange_body body = {.output = output, .head = keep ? text : NULL,
					     .head_length = length};
		fill(&body, context);
		int direct = body.kept_segment != NULL && body.head != NULL;
		if ((direct ? send_direct(&body, bufferevent_getfd(bev))
			    : exchange_body_queue_kept(&body)) < 0) {
			log_error("cannot queue a %d response; closing the connection", head->status);
			evhttp_connection_free(evcon);
			return;
		}
		/*
		 * A small file part takes the head and the text before it along
		 * (flush_to_socket); after send_direct, what is left goes as usual.
		 */
		if (!direct && body.file_bytes > 0 && body.file_bytes <= HOLD_FOR_FILE_MAX)
			text_before_file = head_length + body.text_before_file;
		/*
		 * Only the no-progress send timeout while a body goes out (libevent
		 * #715); a body sent directly, all of it, keeps the keep-alive ones
		 * (four event_del calls a request fewer).
		 */
		if (evbuffer_get_length(output) > 0)
			send_timeouts(exchange, bev);
	}
	bufferevent_data_cb write_done;
	bufferevent_getcb(bev, NULL, &write_done, NULL, NULL);
	write_only(exchange, bev, write_done);
	if (evbuffer_get_length(output) == 0) {
		/*
		 * Sent directly, all of it: evhttp_send_reply_end, finding the output
		 * empty, calls evhttp_send_done itself (the request is complete and
		 * freed on return). Not flush_to_socket: its write callback would run
		 * evcon->cb again, which evhttp_send_done does not reset.
		 */
		evhttp_send_reply_end(exchange->req);
		return;
	}
	/* With output queued, evhttp_send_reply_end leaves evhttp_send_done to the write callback. */
	evhttp_send_reply_end(exchange->req);
	flush_to_socket(bev, text_before_file);
}

/* --- A body streamed as it arrives --- */

static void on_drained_event(evutil_socket_t fd, short what, void *arg)
{
	struct exchange *exchange = arg;
	(void)fd;
	(void)what;
	if (exchange->feed_wants_run) {
		/* The output has room for a fed body's next part (on_output_changed). */
		exchange->feed_wants_run = 0;
		if (exchange->feed != NULL && exchange->streaming)
			feed_run(exchange->feed);
		return; /* a fed body has no on_drained waiter of its own */
	}
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
	if (info->n_deleted == 0)
		return;
	if (exchange->feed != NULL && feed_output_changed(exchange->feed, evbuffer_get_length(output))) {
		exchange->feed_wants_run = 1;
		event_active(exchange->drained, EV_TIMEOUT, 1); /* the loop's next turn, not this write */
	}
	if (exchange->on_drained != NULL && exchange_stream_queued(exchange) <= exchange->drain_low)
		event_active(exchange->drained, EV_TIMEOUT, 1);
}

static void stream_added(struct exchange *exchange, size_t length);

/* The feed's sink: what it moved to the output. */
static void on_feed_added(void *context, size_t length)
{
	stream_added(context, length);
}

static void on_feed_failed(void *context)
{
	log_error("out of memory feeding a response; closing the connection");
	exchange_stream_abort(context);
}

static const struct feed_sink_ops feed_to_exchange = {on_feed_added, on_feed_failed};

/*
 * exchange->feed for the pacing and the gate set, before the body is recorded
 * (the gate is the feed's from here); 0, or -1 (logged, the connection closed)
 * if out of memory.
 */
static int start_feed(struct exchange *exchange, struct bufferevent *bev)
{
	struct feed_sink sink = {
		.base = exchange->server->base,
		.output = bufferevent_get_output(bev),
		.ops = &feed_to_exchange,
		.context = exchange,
	};
	struct feed_gate gate = exchange->gate;
	exchange->gate.ready = NULL;
	exchange->feed =
		feed_new(&sink, exchange->pace_rate, exchange->pace_after,
			 gate.ready != NULL ? &gate : NULL);
	if (exchange->feed == NULL) {
		log_error("out of memory for a fed response; closing the connection");
		exchange->streaming = 0;
		evbuffer_remove_cb_entry(bufferevent_get_output(bev), exchange->drain_watch);
		exchange->drain_watch = NULL;
		evhttp_connection_free(evhttp_request_get_connection(exchange->req));
		return -1;
	}
	if (exchange->pace_rate > 0)
		metrics_count_paced(exchange->server->settings->metrics);
	return 0;
}

void exchange_feed_windows(struct exchange *exchange, feed_gate_fn ready, void (*release)(void *arg),
			   void *arg, uint64_t window)
{
	drop_gate(exchange);
	exchange->gate = (struct feed_gate){ready, release, arg, window};
}

void exchange_window_arrived(struct exchange *exchange)
{
	if (exchange->feed != NULL && exchange->streaming)
		feed_run(exchange->feed);
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
	if ((exchange->pace_rate > 0 || exchange->gate.ready != NULL) && start_feed(exchange, bev) < 0)
		return -1; /* the connection is closing */
	send_timeouts(exchange, bev);
	/*
	 * No write callback until the last byte is queued: evhttp_write_cb calls
	 * evcon->cb whenever the output empties, and on a kept-alive connection
	 * that is still evhttp_send_done from the previous response, which would
	 * end this one between two parts.
	 */
	bufferevent_getcb(bev, NULL, &exchange->evhttp_write_cb, NULL, NULL);
	write_only(exchange, bev, NULL);
	flush_to_socket(bev, 0);
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
	return evbuffer_get_length(bufferevent_get_output(evhttp_connection_get_bufferevent(evcon))) +
	       (size_t)feed_held(exchange->feed);
}

static void stream_added(struct exchange *exchange, size_t length)
{
	struct bufferevent *bev =
		evhttp_connection_get_bufferevent(evhttp_request_get_connection(exchange->req));
	exchange->body_appended += length;
	if (exchange->body_appended < exchange->body_length) {
		flush_to_socket(bev, 0);
		return;
	}
	/* The last byte is queued: from here on it completes as exchange_send's answers do. */
	exchange->streaming = 0;
	evbuffer_remove_cb_entry(bufferevent_get_output(bev), exchange->drain_watch);
	exchange->drain_watch = NULL;
	write_only(exchange, bev, exchange->evhttp_write_cb);
	evhttp_send_reply_end(exchange->req);
	flush_to_socket(bev, 0);
}

int exchange_stream_append(struct exchange *exchange, struct evbuffer *part)
{
	if (!exchange->streaming)
		return -1;
	struct bufferevent *bev =
		evhttp_connection_get_bufferevent(evhttp_request_get_connection(exchange->req));
	size_t length = evbuffer_get_length(part);
	/* What a fed body still holds is promised too. */
	uint64_t room = exchange->body_length - exchange->body_appended - feed_held(exchange->feed);
	if (length > room ||
	    (exchange->feed != NULL ? feed_add_part(exchange->feed, part)
				    : evbuffer_add_buffer(bufferevent_get_output(bev), part)) < 0) {
		log_error("a streamed body part does not fit its Content-Length or memory; "
			  "closing the connection");
		exchange_stream_abort(exchange);
		return -1;
	}
	if (exchange->feed != NULL)
		feed_run(exchange->feed);
	else
		stream_added(exchange, length);
	return 0;
}

/*
 * A fed answer (paced, or through the disk's windows) whose body is all known
 * now (exchange_send): the head goes first, the body is recorded, and the
 * feed moves it to the output as a stream's parts are.
 */
static void send_fed(struct exchange *exchange, struct response_head *head, uint64_t body_length,
		     exchange_fill_cb fill, const void *context)
{
	if (exchange_stream_start(exchange, head, body_length) != 0)
		return; /* the connection is closing */
	struct evhttp_connection *evcon = evhttp_request_get_connection(exchange->req);
	struct exchange_body body = {
		.output = bufferevent_get_output(evhttp_connection_get_bufferevent(evcon)),
		.feed = exchange->feed,
	};
	fill(&body, context);
	feed_run(exchange->feed);
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

