/*
 * unsent: the wait for a socket's send queue to empty (see unsent.h). A
 * look is one ioctl(SIOCOUTQ) and one getsockopt(TCP_INFO) (a reset
 * connection is CLOSE, and its queue is left as it was: the count alone
 * would wait out the stall time).
 */
#include "wire/unsent.h"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "base/clock.h"

struct unsent {
	evutil_socket_t fd;	     /* the owner's; never closed here */
	struct address_count *place; /* NULL once given back */
	struct event *timer;
	unsigned next_ms;	     /* the gap before the next look */
	int queued;		     /* the queue at the last look */
	unsigned long long looked_ms;	/* when the last look was (clock_now_ms) */
	unsigned long long progress_ms; /* when the queue last shrank */
	long stall_ms;
	void (*done)(void *arg);
	void *done_arg;
};

/* Bytes the client has not acknowledged yet; 0 when gone or when it cannot be told. */
static int unsent_bytes(evutil_socket_t fd)
{
	struct tcp_info info;
	socklen_t size = sizeof(info);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) == 0 &&
	    info.tcpi_state == TCP_CLOSE)
		return 0;
	int queued = 0;
	if (ioctl(fd, SIOCOUTQ, &queued) < 0 || queued < 0)
		return 0;
	return queued;
}

static void give_back(struct unsent *unsent)
{
	if (unsent->place == NULL)
		return;
	address_counts_give(unsent->place);
	unsent->place = NULL;
	event_del(unsent->timer);
}

/*
 * Asks the queue; 1 while the place is still held, with *empty_in_ms (if
 * asked for) the milliseconds until the queue, shrinking as it did since the
 * last look, is empty (0: not known, or not within UNSENT_LONGEST_MS).
 */
static int look(struct unsent *unsent, unsigned *empty_in_ms)
{
	if (empty_in_ms != NULL)
		*empty_in_ms = 0;
	if (unsent->place == NULL)
		return 0;
	int queued = unsent_bytes(unsent->fd);
	unsigned long long now_ms = clock_now_ms();
	if (queued < unsent->queued) {
		unsigned long long left_ms = (unsigned long long)queued *
					     (now_ms - unsent->looked_ms) /
					     (unsigned long long)(unsent->queued - queued);
		if (empty_in_ms != NULL && left_ms < UNSENT_LONGEST_MS)
			*empty_in_ms = (unsigned)left_ms + 1;
		unsent->progress_ms = now_ms;
	}
	unsent->queued = queued;
	unsent->looked_ms = now_ms;
	if (queued == 0 || now_ms - unsent->progress_ms >= (unsigned long long)unsent->stall_ms) {
		give_back(unsent);
		return 0;
	}
	return 1;
}

/*
 * The next look: after a gap twice the last one's (at most
 * UNSENT_LONGEST_MS), or when the queue should be empty if that is sooner
 * (never sooner than UNSENT_FIRST_MS): a client that has it all gets its
 * place back about when it read the last byte, and one that stopped is
 * asked less and less often.
 */
static void look_later(struct unsent *unsent, unsigned empty_in_ms)
{
	unsigned gap_ms = unsent->next_ms;
	if (empty_in_ms != 0 && empty_in_ms < gap_ms)
		gap_ms = empty_in_ms > UNSENT_FIRST_MS ? empty_in_ms : UNSENT_FIRST_MS;
	struct timeval gap = {.tv_sec = gap_ms / 1000, .tv_usec = (gap_ms % 1000) * 1000};
	evtimer_add(unsent->timer, &gap);
	unsent->next_ms =
		unsent->next_ms * 2 < UNSENT_LONGEST_MS ? unsent->next_ms * 2 : UNSENT_LONGEST_MS;
}

static void on_look(evutil_socket_t fd, short what, void *arg)
{
	struct unsent *unsent = arg;
	(void)fd;
	(void)what;
	unsigned empty_in_ms;
	if (look(unsent, &empty_in_ms)) {
		look_later(unsent, empty_in_ms);
		return;
	}
	if (unsent->done != NULL)
		unsent->done(unsent->done_arg);
}

struct unsent *unsent_keep(struct event_base *base, evutil_socket_t fd,
			   struct address_count *place, struct timeval stall)
{
	int queued = unsent_bytes(fd);
	struct unsent *unsent = queued > 0 ? calloc(1, sizeof(*unsent)) : NULL;
	if (unsent == NULL || (unsent->timer = evtimer_new(base, on_look, unsent)) == NULL) {
		free(unsent);
		address_counts_give(place);
		return NULL;
	}
	unsent->fd = fd;
	unsent->place = place;
	unsent->queued = queued;
	unsent->progress_ms = clock_now_ms();
	unsent->looked_ms = unsent->progress_ms;
	unsent->stall_ms = (long)stall.tv_sec * 1000 + stall.tv_usec / 1000;
	unsent->next_ms = UNSENT_FIRST_MS;
	look_later(unsent, 0);
	return unsent;
}

int unsent_look(struct unsent *unsent)
{
	return unsent != NULL && look(unsent, NULL);
}

int unsent_holds(const struct unsent *unsent)
{
	return unsent != NULL && unsent->place != NULL;
}

void unsent_when_done(struct unsent *unsent, void (*done)(void *arg), void *arg)
{
	unsent->done = done;
	unsent->done_arg = arg;
}

struct address_count *unsent_take(struct unsent **unsent, const uint8_t key[ADDRESS_KEY_SIZE])
{
	struct unsent *wait = *unsent;
	if (wait == NULL || !look(wait, NULL) ||
	    memcmp(address_count_key(wait->place), key, ADDRESS_KEY_SIZE) != 0)
		return NULL;
	struct address_count *place = wait->place;
	wait->place = NULL;
	unsent_free(wait);
	*unsent = NULL;
	return place;
}

void unsent_free(struct unsent *unsent)
{
	if (unsent == NULL)
		return;
	give_back(unsent);
	event_free(unsent->timer);
	free(unsent);
}
