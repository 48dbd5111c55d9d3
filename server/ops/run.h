/*
 * run: a configured musicd from its listening sockets to its exit: the
 * sockets, the drop to --user, the database pool and the GridFS spool, the
 * workers (one per --workers on the track listener, one on the metrics
 * listener), READY=1 once every loop runs, the signal loop, and a drain that
 * drops no connection. Each step it takes is undone in reverse order, on the
 * way out of a failed start as after a stop.
 */
#ifndef MUSICD_RUN_H
#define MUSICD_RUN_H

#include <signal.h>

#include "config/config.h"
#include "ops/privileges.h"
#include "ops/reload.h"
#include "respond/resources.h"

/* The exit status of a start that failed: bad configuration, a port taken, no memory ... */
#define EXIT_CONFIG 2

/* The connections the metrics listener takes at most: a few scrapers, never the track port's. */
#define METRICS_MAX_CONNECTIONS 32

/* Says message as a failed start does (stderr, and the error log when it is a file); EXIT_CONFIG. */
int run_failed(const char *message);

/*
 * Runs until SIGINT or SIGTERM (0 after the drain), or fails to start
 * (EXIT_CONFIG, said). user is NULL without --user; resources->db and
 * ->gridfs_spool are made here and gone again on return.
 */
int run_serving(const struct config *config, struct resources *resources, const sigset_t *handled,
	const struct privileges *user, unsigned long long descriptor_limit, struct reload *reload);

#endif
