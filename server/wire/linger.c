/*
 * linger: the lingering close (see linger.h), as nginx's
 * ngx_http_set_lingering_close does it: FIN first, then discard what
 * arrives, bounded in time, so that the last close never turns into an RST.
 * With a client's place riding on the socket, the reading goes on past
 * LINGER_MS (or stops at the client's FIN) until the place is given back.
 */
#include "wire/linger.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"

/* What one wake-up reads and drops before leaving the rest to the next. */
#define LINGER_READ_MAX (64 * 1024)

struct lingering {
	struct linger_set *set;
	struct lingering *prev, *next;
	evutil_socket_t fd;
	struct event *event;
	struct timespec started;
	struct unsent *unsent; /* the client's place (unsent.h); NULL: none */
	int outlived;	       /* LINGER_MS passed, the place held: read on until it goes */
};

void linger_set_init(struct linger_set *set, struct event_base *base, void (*on_closed)(void *arg),
		     void *arg)
{
	*set = (struct linger_set){.base = base, .on_closed = on_closed, .arg = arg};
}

static void linger_end(struct lingering *linger, int notify)
{
	struct linger_set *set = linger->set;
	if (linger->prev != NULL)
		linger->prev->next = linger->next;
	else
		set->first = linger->next;
	if (linger->next != NULL)
		linger->next->prev = linger->prev;
	set->count--;
	event_free(linger->event);
	unsent_free(linger->unsent);
	close(linger->fd);
	free(linger);
	if (notify && set->on_closed != NULL)
		set->on_closed(set->arg);
}

static void on_place_given_back(void *arg)
{
	linger_end(arg, 1);
}

/*
 * Reading is over (eof: the client's FIN, else LINGER_MS): the socket is
 * closed now, or when the client's place is given back; after a FIN it is
 * no longer read (it would be readable for ever), after LINGER_MS it is read
 * on, so that what the client still sends never turns the close into an RST.
 */
static void reading_over(struct lingering *linger, int eof)
{
	if (eof ? !unsent_look(linger->unsent) : !unsent_holds(linger->unsent)) {
		linger_end(linger, 1);
		return;
	}
	unsent_when_done(linger->unsent, on_place_given_back, linger);
	if (eof)
		event_del(linger->event);
	else if (!linger->outlived)
		event_add(linger->event, NULL);
	linger->outlived = 1;
}

static void on_linger_readable(evutil_socket_t fd, short what, void *arg)
{
	struct lingering *linger = arg;
	char scratch[4096];
	if (!linger->outlived &&
	    ((what & EV_TIMEOUT) || clock_seconds_since(&linger->started) * 1000 >= LINGER_MS)) {
		reading_over(linger, 0);
		return;
	}
	for (size_t dropped = 0; dropped < LINGER_READ_MAX; dropped += sizeof(scratch)) {
		ssize_t got = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
		if (got > 0)
			continue;
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
		if (got == 0)
			reading_over(linger, 1); /* the client's FIN */
		else
			linger_end(linger, 1); /* the connection failed: the client is gone */
		return;
	}
}

void linger_close(struct linger_set *set, evutil_socket_t fd, struct unsent *unsent)
{
	struct lingering *linger = calloc(1, sizeof(*linger));
	struct timeval timeout = {.tv_sec = LINGER_MS / 1000, .tv_usec = (LINGER_MS % 1000) * 1000};
	if (linger == NULL || shutdown(fd, SHUT_WR) < 0)
		goto fail;
	linger->event = event_new(set->base, fd, EV_READ | EV_PERSIST, on_linger_readable, linger);
	if (linger->event == NULL || event_add(linger->event, &timeout) < 0)
		goto fail;
	linger->set = set;
	linger->fd = fd;
	linger->unsent = unsent;
	linger->started = clock_now();
	linger->next = set->first;
	if (set->first != NULL)
		set->first->prev = linger;
	set->first = linger;
	set->count++;
	return;
fail:
	if (linger != NULL && linger->event != NULL)
		event_free(linger->event);
	free(linger);
	unsent_free(unsent);
	close(fd);
}

void linger_set_clear(struct linger_set *set)
{
	while (set->first != NULL)
		linger_end(set->first, 0);
}
