/*
 * server: one exchange server (an evhttp on one listening socket, on one
 * worker's loop): its start and end, accept errors (EMFILE ...) that pause
 * accepting briefly and are logged once per interval instead of spinning the
 * level-triggered listener, and the drain that stops serving without
 * dropping a connection.
 */
#include "wire/exchange.h"
#include "wire/wire_state.h"

#include <errno.h>
#include <event2/listener.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"

/* At EMFILE and other accept errors: stop accepting this long, then try again. */
#define ACCEPT_PAUSE_MS 100
/* Draining: loop passes spent accepting what is queued on the listener before closing it. */
#define BACKLOG_PASSES_MAX 64

static void on_backlog_pass(evutil_socket_t fd, short what, void *arg);
static void finish_drain_when_empty(struct exchange_server *server);


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
			  server_log_prefix(server), strerror(error_number), server->accept_errors.count,
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
	/* What the parts below tell this one, as callbacks: wire/ calls run one way, down. */
	server->check_drained = finish_drain_when_empty;
	server->end_request_side = exchange_end_request_side;
	linger_set_init(&server->lingering, base, connection_on_lingered, server);
	server->on_request = on_request;
	server->arg = arg;
	server->keepalive_timeout = (struct timeval){.tv_sec = config->keepalive_timeout};
	server->send_timeout = (struct timeval){.tv_sec = config->send_timeout};
	server->header_timeout = (struct timeval){.tv_sec = config->header_timeout};

	evhttp_set_gencb(server->http, exchange_on_request, server);
	evhttp_set_bevcb(server->http, connection_new, server);
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

/* Draining: calls on_drained once nothing is left (the server's check_drained). */
static void finish_drain_when_empty(struct exchange_server *server)
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
	finish_drain_when_empty(server);
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
			connection_start_last_call(connection);
		else if (connection->current->status == 0)
			exchange_close_after_response(connection->current); /* not answered yet */
	}
	finish_drain_when_empty(server);
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
	connection_free_spare_scans(server);
	free(server->by_fd);
	free(server);
}

