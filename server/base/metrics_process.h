/*
 * metrics_process: the standard process_* figures of the running process,
 * read from /proc/self and getrusage/getrlimit as Prometheus' own client
 * libraries read them.
 */
#ifndef MUSICD_METRICS_PROCESS_H
#define MUSICD_METRICS_PROCESS_H

#include "base/metrics_text.h"

/* When this process started, in seconds since the Unix epoch (from /proc); 0 if unknown. */
double metrics_process_start_time(void);

/* CPU time, resident memory and descriptors now (start_time_seconds untouched); -1 if unreadable. */
int metrics_process_read(struct metrics_process *process);

#endif
