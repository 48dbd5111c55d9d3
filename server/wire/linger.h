/*
 * linger: a lingering close. Closing a socket whose receive queue holds
 * bytes makes the kernel send an RST, which also throws away what the client
 * had not yet read of the last response. So a connection musicd ends is shut
 * down for writing (its FIN follows the response), then read and discarded
 * until the client's own FIN, an error or LINGER_MS, and only then closed.
 */
#ifndef MUSICD_LINGER_H
#define MUSICD_LINGER_H

#include <event2/event.h>

#include "wire/unsent.h"

/* The longest a closing connection is read before it is closed anyway. */
#define LINGER_MS 2000

struct lingering;

/* The sockets one event loop is closing; owned by whoever made it, on that loop's thread. */
struct linger_set {
	struct event_base *base;
	struct lingering *first;
	unsigned count;
	void (*on_closed)(void *arg); /* after each socket's close */
	void *arg;
};

/* An empty set on base; on_closed(arg) runs after each of its sockets is closed. */
void linger_set_init(struct linger_set *set, struct event_base *base, void (*on_closed)(void *arg),
		     void *arg);

/*
 * Takes fd and unsent, its wait for the client to have the bytes (NULL:
 * none), always (fd is closed and unsent freed at once when the lingering
 * cannot be set up): shuts fd down for writing, reads it until the end and
 * until unsent holds no place, then closes it.
 */
void linger_close(struct linger_set *set, evutil_socket_t fd, struct unsent *unsent);

/* Closes every socket still lingering, without waiting (the loop is stopping). */
void linger_set_clear(struct linger_set *set);

#endif
