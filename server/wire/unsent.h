/*
 * unsent: a client's place under --max-streams-per-client, kept after its
 * answer is written until the client has the bytes. An answer is written
 * when its last byte enters the kernel's send buffer, and that buffer grows
 * to several MiB (on loopback a whole 2 MiB track goes in within a
 * millisecond, while the client may take minutes to read it): counted then,
 * a client reading slowly could open stream after stream. The client has
 * the bytes when its TCP acknowledged them all: the socket's SIOCOUTQ (bytes
 * not yet sent, or sent and not yet acknowledged) is 0.
 *
 * Nothing is polled while no place waits, and no connection is polled all
 * the time: the queue is asked when the answer completes, then on a timer
 * that backs off (UNSENT_FIRST_MS, doubling up to UNSENT_LONGEST_MS; sooner
 * when the queue's last shrinking says it will be empty sooner), when the
 * client's FIN arrives (unsent_look), and when the connection's next answer
 * wants a place (unsent_take). The place
 * is given back when the queue is empty, when it has not shrunk for the
 * stall time given (the send timeout: a client that stopped reading pulls
 * no stream), when the connection is reset, or when its holder lets the
 * socket go (unsent_free).
 *
 * One wait per socket, owned by whoever owns the socket: the connection,
 * then its lingering close. From the owning loop's thread.
 */
#ifndef MUSICD_UNSENT_H
#define MUSICD_UNSENT_H

#include <event2/event.h>
#include <stdint.h>

#include "base/address_counts.h"

/* The first look at the queue after the answer completed, and the longest gap between looks. */
#define UNSENT_FIRST_MS 10
#define UNSENT_LONGEST_MS 1000

struct unsent;

/*
 * Keeps place (taken over) until fd's send queue is empty; NULL when it is
 * empty now, or the wait cannot be kept (out of memory): the place is then
 * given back at once.
 */
struct unsent *unsent_keep(struct event_base *base, evutil_socket_t fd,
			   struct address_count *place, struct timeval stall);

/* Asks the queue now (the client's FIN came: it has likely read it all); true while held. */
int unsent_look(struct unsent *unsent);

/* True while the place is still held. */
int unsent_holds(const struct unsent *unsent);

/*
 * done(arg) runs once, after the place is given back (never from this call:
 * ask unsent_holds first); NULL: nothing runs.
 */
void unsent_when_done(struct unsent *unsent, void (*done)(void *arg), void *arg);

/*
 * The socket's next answer wants a place for key: the queue is asked now; a
 * place still held for key is handed over (the wait is freed and *unsent
 * set to NULL: one connection's answers go out in order, one stream at a
 * time); else NULL, and the wait, if any, goes on.
 */
struct address_count *unsent_take(struct unsent **unsent, const uint8_t key[ADDRESS_KEY_SIZE]);

/* The socket is let go: a place still held is given back, the wait freed. NULL is nothing. */
void unsent_free(struct unsent *unsent);

#endif
