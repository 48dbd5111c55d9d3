/*
 * descriptor_budget: how the descriptor limit is shared between the workers,
 * the lookup threads, the open-file cache and client connections. Pure.
 *
 * Each worker holds DESCRIPTORS_PER_WORKER descriptors for as long as it runs
 * (counted on a running musicd, and checked by tests/integration): its
 * listening socket, its event base's epoll descriptor, the eventfd other
 * threads wake it with, and the pipe pair libevent makes for signals in every
 * base. When the limit cannot hold them, libevent's own set-up fails in the
 * middle of start-up (evsig_init_ exits the process with status 1), so the
 * budget is decided before any worker starts: a worker count that was given
 * and does not fit is refused with one message; the default (one per CPU) is
 * lowered until the workers take at most half of what is left for them and
 * the connections. The metrics listener's worker and its own connection cap
 * are set aside first, like the reserve: a flood of scrapers can take only
 * those, never a track connection's descriptor.
 */
#ifndef MUSICD_DESCRIPTOR_BUDGET_H
#define MUSICD_DESCRIPTOR_BUDGET_H

#include <stddef.h>

#define DESCRIPTORS_PER_WORKER 5
/* stdio, the logs, the lease thread's and the lookup pool's own descriptors */
#define DESCRIPTORS_RESERVED 64

struct descriptor_budget_input {
	unsigned long long limit;	   /* RLIMIT_NOFILE's soft limit, once raised */
	unsigned workers;		   /* 0: the default, default_workers */
	unsigned default_workers;	   /* one per CPU, at most CONFIG_MAX_WORKERS */
	unsigned lookup_threads;	   /* each may hold two database connections */
	unsigned open_file_cache_entries;  /* each holds one open file */
	unsigned batched_closes;	   /* files let go, waiting for their lane's batch */
	unsigned metrics_connections;	   /* the metrics listener's cap; 0: no metrics listener */
	unsigned max_connections;	   /* 0: what the limit leaves room for */
	unsigned max_connections_ceiling;  /* CONFIG_MAX_CONNECTIONS */
};

struct descriptor_budget {
	unsigned workers;
	unsigned max_connections;
	int workers_lowered; /* the default was lowered to fit the limit */
};

/* 0 and the budget, or -1 with the message when the limit cannot hold what was asked for. */
int descriptor_budget_plan(const struct descriptor_budget_input *input,
			   struct descriptor_budget *budget, char *error, size_t error_size);

#endif
