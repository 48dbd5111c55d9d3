/*
 * db_reach: whether the database answers, found out the way a lookup would
 * find out: one server selection with the URI's read preference and its
 * serverSelectionTimeoutMS (--lookup-timeout unless the URI sets it). At start
 * it runs as a job on a pool thread, so neither the start nor any loop waits
 * for it, and says in one line what it found: a warning when no server could
 * be selected (track requests get 503 until one can), an info line naming the
 * server otherwise. For -t --check-database it runs on the calling thread.
 */
#ifndef MUSICD_DB_REACH_H
#define MUSICD_DB_REACH_H

#include <stddef.h>

#include "config/config.h"
#include "db/db_pool.h"

/* Queues the start-up selection on pool; -1 if it could not be queued (nothing is logged). */
int db_reach_at_start(struct db_pool *pool);

/*
 * One selection from a client of its own (single-threaded: one try, bounded by
 * the connect timeout), for -t: 0 with the server's "host:port (type)" in
 * server, or -1 with "database: <reason>" in error. mongoc_init first.
 */
int db_reach_check(const struct config *config, char *server, size_t server_size, char *error,
		   size_t error_size);

#endif
