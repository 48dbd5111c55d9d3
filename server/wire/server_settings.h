/*
 * server_settings: what a worker gives its exchange server (exchange.h's
 * exchange_server_new), read by every part of wire/.
 */
#ifndef MUSICD_SERVER_SETTINGS_H
#define MUSICD_SERVER_SETTINGS_H

#include <stdatomic.h>

#include "base/address_counts.h"
#include "base/metrics.h"
#include "config/settings.h"

/* What a worker gives its exchange server; everything here outlives it. */
struct exchange_settings {
	struct settings_slot *snapshots;   /* this worker's: each request takes the newest */
	atomic_uint *open_connections;	   /* every worker's connections, for the cap */
	unsigned max_connections;
	struct metrics_worker *metrics;	   /* this worker's counters; NULL: none */
	int log_requests;		   /* each request gets an access-log line (when there is a log) */
	const char *log_prefix;		   /* before the server's own log lines ("metrics: "); NULL: none */
	const char *cap_name;		   /* max_connections in those lines; NULL: "--max-connections" */
	struct address_counts *client_places; /* every worker's, for exchange_hold_client_place; NULL: none */
};

#endif
