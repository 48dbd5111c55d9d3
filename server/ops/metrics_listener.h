/*
 * metrics_listener: GET /metrics on a listener of its own (--metrics-listen),
 * apart from the main one, so the frontends (Varnish, nginx) that expose the
 * main listener never expose it. It runs its own small event loop on its own
 * thread: a scrape reads every worker's counters without stopping one, and
 * is never counted among the main listener's requests. The socket is
 * SO_REUSEPORT, as the workers' are, so a replacement process can open it
 * while this one drains.
 */
#ifndef MUSICD_METRICS_LISTENER_H
#define MUSICD_METRICS_LISTENER_H

#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

#include "media/file_cache.h"
#include "db/lookup_cache.h"
#include "base/metrics.h"

/* What a scrape reads; everything here outlives the listener. */
struct metrics_sources {
	struct metrics *metrics;
	struct lookup_cache *lookup_cache;
	struct file_cache *file_cache;
	atomic_uint *open_connections; /* the main listener's, as --max-connections counts them */
	const char *version;
};

struct metrics_listener;

/*
 * Binds host:port (refused, as the main listener, if anyone listens there
 * already) and serves it on a new thread. NULL with a message.
 */
struct metrics_listener *metrics_listener_start(const char *host, uint16_t port,
						const struct metrics_sources *sources, char *error,
						size_t error_size);

/* Closes the socket and its connections, joins the thread and frees it (NULL: nothing). */
void metrics_listener_stop(struct metrics_listener *listener);

#endif
