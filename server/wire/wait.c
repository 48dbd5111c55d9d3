/*
 * wait: work finishing elsewhere (a db_pool job) waited for on the worker's
 * loop. The work is handed the exchange's delivery event, made once and
 * reused, which it activates when done; meanwhile, until an answer starts,
 * the client is watched and the deadline kept.
 */
#include "wire/exchange.h"
#include "wire/wire_state.h"

#include <errno.h>
#include <string.h>

#include "base/log.h"

/* Stops watching the client and the deadline (before responding, or when the work is done). */
void wait_stop(struct exchange *exchange)
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
		wait_stop(exchange);
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
	wait_stop(exchange);
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
	wait_stop(exchange);
	return -1;
}

/* On the worker's loop: whoever did the work activated the delivery. */
static void on_work_delivered(evutil_socket_t fd, short what, void *arg)
{
	struct exchange *exchange = arg;
	(void)fd;
	(void)what;
	wait_stop(exchange);
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
	wait_stop(exchange);
	exchange->waiting = 0;
	exchange_release(exchange); /* the wait's reference */
}

