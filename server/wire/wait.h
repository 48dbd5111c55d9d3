/*
 * wait: work that finishes on another thread (a database job, a disk read),
 * waited for on the worker's loop while the client is watched. It uses the
 * exchange (exchange.h); the handlers that wait include this header.
 */
#ifndef MUSICD_WAIT_H
#define MUSICD_WAIT_H

#include <event2/event.h>

#include "wire/exchange.h"

/*
 * Waits for work that finishes on another thread (a db_pool job): returns
 * the event whoever does the work activates, exactly once, when it is done
 * (a handing back that allocates nothing). Then on_done(exchange, arg) runs
 * on the worker's loop, always: the client may have left or the deadline
 * answered meanwhile, and what was learned is still worth keeping
 * (exchange_can_respond says whether to answer). While no response has
 * started, the client is watched (an RST or hang-up ends the request side; a
 * FIN only ends its reading) for up to timeout_ms, after which on_deadline
 * (arg) runs if it is not NULL and a response can still be sent. One wait at
 * a time per exchange; NULL when one is pending or out of memory.
 */
struct event *exchange_wait(struct exchange *exchange, unsigned timeout_ms,
			    exchange_wait_cb on_done, exchange_wait_cb on_deadline, void *arg);

/*
 * The work could not be handed over after all (a full queue): the wait ends,
 * no callback runs. The exchange stays: the caller answers through it.
 */
void exchange_wait_cancel(struct exchange *exchange);

#endif
