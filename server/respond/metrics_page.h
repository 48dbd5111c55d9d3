/*
 * metrics_page: GET /metrics, the Prometheus text of a fresh snapshot of
 * every counter, cache and process figure (metrics_text.h), and of the
 * limits as the scrape's own settings snapshot holds them: the newest
 * reload's. Served on the metrics listener (--metrics-listen) through the
 * same wire as tracks, by a worker of its own: a scrape reads every worker's
 * counters without stopping one, and is never counted among the track
 * listener's requests.
 */
#ifndef MUSICD_METRICS_PAGE_H
#define MUSICD_METRICS_PAGE_H

#include <stdatomic.h>

#include "base/address_counts.h"
#include "base/metrics.h"
#include "db/lookup_cache.h"
#include "media/file_cache.h"
#include "respond/request.h"
#include "wire/exchange.h"

/* What a scrape reads; everything here outlives the page. */
struct metrics_sources {
	struct metrics *metrics;
	struct lookup_cache *lookup_cache;
	struct file_cache *file_cache;
	atomic_uint *open_connections; /* the track listener's, as --max-connections counts them */
	const char *version;
	struct address_counts *client_places; /* the streams under --max-streams-per-client */
	struct disk_io *disk;		      /* the disk pool */
};

/* One listener's scrapes: buffers reused by each, touched by its worker's thread only. */
struct metrics_page;

/* NULL if out of memory. */
struct metrics_page *metrics_page_new(const struct metrics_sources *sources);
void metrics_page_free(struct metrics_page *page);

/* Answers the exchange's GET with the text of a fresh snapshot (500 if out of memory). */
void metrics_page_answer(struct exchange *exchange, const struct request *request,
			 struct metrics_page *page);

#endif
