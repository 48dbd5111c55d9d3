/*
 * wait: work finishing elsewhere (a db_pool job) waited for on the worker's
 * loop. The work is handed the exchange's delivery event, made once and
 * reused, which it activates when done; meanwhile, until an answer starts,
 * the deadline is kept. The client is watched by the connection's reader,
 * which reads on while evhttp does not (connection.c): an RST ends the
 * request at once, a FIN only ends the client's requests.
 */
#include "wire/wait.h"
#include "wire/wire_state.h"

/* --- Waiting --- */

static void on_wait_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct exchange *exchange = arg;
	(void)fd;
	(void)what;
	exchange_stop_waiting(exchange);
	if (exchange_can_respond(exchange) && exchange->on_deadline != NULL)
		exchange->on_deadline(exchange, exchange->wait_arg);
}

static int start_waiting(struct exchange *exchange, unsigned timeout_ms,
			 exchange_wait_cb on_deadline)
{
	struct timeval timeout = {.tv_sec = timeout_ms / 1000,
				  .tv_usec = (suseconds_t)(timeout_ms % 1000) * 1000};
	exchange->on_deadline = on_deadline;
	exchange->deadline = evtimer_new(exchange->server->base, on_wait_deadline, exchange);
	if (exchange->deadline == NULL || evtimer_add(exchange->deadline, &timeout) < 0) {
		exchange_stop_waiting(exchange);
		return -1;
	}
	return 0;
}

/* On the worker's loop: whoever did the work activated the delivery. */
static void on_work_delivered(evutil_socket_t fd, short what, void *arg)
{
	struct exchange *exchange = arg;
	(void)fd;
	(void)what;
	exchange_stop_waiting(exchange);
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
	exchange_stop_waiting(exchange);
	exchange->waiting = 0;
	/*
	 * The wait's reference, never the last: whoever cancels runs under one
	 * of its own (the request side's, or a delivery's that called it), and
	 * answers through the exchange next. So cancelling never frees it.
	 */
	exchange->refs--;
}

