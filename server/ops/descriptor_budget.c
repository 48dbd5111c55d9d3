/*
 * descriptor_budget: sharing the descriptor limit between workers, lookup
 * threads, cached files and connections (see descriptor_budget.h). Pure.
 */
#include "ops/descriptor_budget.h"

#include <stdio.h>

static unsigned long long fixed_descriptors(const struct descriptor_budget_input *input)
{
	unsigned long long metrics = input->metrics_connections > 0
					     ? DESCRIPTORS_PER_WORKER + input->metrics_connections
					     : 0;
	return DESCRIPTORS_RESERVED + (unsigned long long)input->lookup_threads * 2 +
	       input->open_file_cache_entries + input->batched_closes + metrics;
}

static unsigned long long worker_descriptors(unsigned workers)
{
	return (unsigned long long)workers * DESCRIPTORS_PER_WORKER;
}

/* The default worker count, lowered until the workers hold at most half of what is left. */
static unsigned fitting_default(const struct descriptor_budget_input *input,
				unsigned long long left)
{
	unsigned workers = input->default_workers > 0 ? input->default_workers : 1;
	while (workers > 1 && worker_descriptors(workers) * 2 > left)
		workers--;
	return workers;
}

int descriptor_budget_plan(const struct descriptor_budget_input *input,
			   struct descriptor_budget *budget, char *error, size_t error_size)
{
	unsigned long long fixed = fixed_descriptors(input);
	unsigned long long left = input->limit > fixed ? input->limit - fixed : 0;

	budget->workers_lowered = 0;
	if (input->workers > 0) {
		budget->workers = input->workers;
	} else {
		budget->workers = fitting_default(input, left);
		budget->workers_lowered = budget->workers < input->default_workers;
	}
	unsigned long long workers = worker_descriptors(budget->workers);
	if (workers >= left) {
		snprintf(error, error_size,
			 "descriptor limit %llu is too low: %u worker%s (%llu descriptors), %u lookup "
			 "threads and %u cached files (%llu) leave no room for connections; raise the "
			 "limit (ulimit -n, LimitNOFILE=) or lower --workers or "
			 "--open-file-cache-entries",
			 input->limit, budget->workers, budget->workers == 1 ? "" : "s", workers,
			 input->lookup_threads, input->open_file_cache_entries, fixed);
		return -1;
	}
	unsigned long long room = left - workers;
	if (input->max_connections > 0)
		budget->max_connections = input->max_connections;
	else if (room > input->max_connections_ceiling)
		budget->max_connections = input->max_connections_ceiling;
	else
		budget->max_connections = (unsigned)room;
	return 0;
}
