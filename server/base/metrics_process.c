/*
 * metrics_process: the process' CPU time from getrusage (every thread's),
 * its resident set from /proc/self/statm, its descriptors by counting
 * /proc/self/fd (less the one the count itself holds open) and their limit
 * from RLIMIT_NOFILE; its start time from /proc/self/stat's starttime (clock
 * ticks after boot), as an age: CLOCK_BOOTTIME now less starttime, taken from
 * the wall clock now. /proc/stat's btime would be simpler, but it is the
 * host's boot and ignores a time namespace's offsets (seen here: a week off).
 */
#include "base/metrics_process.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* /proc/self/stat's fields after "pid (comm) ": starttime is field 22, the 20th of those. */
#define STAT_STARTTIME_AFTER_COMM 20

static double seconds_of(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static double clock_seconds(clockid_t clock)
{
	struct timespec now;
	if (clock_gettime(clock, &now) < 0)
		return 0;
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

double metrics_process_start_time(void)
{
	FILE *file = fopen("/proc/self/stat", "re");
	char text[1024];
	size_t length = file ? fread(text, 1, sizeof(text) - 1, file) : 0;
	if (file != NULL)
		fclose(file);
	text[length] = '\0';
	/* The command name may hold spaces and parentheses: the fields start after the last ')'. */
	char *field = strrchr(text, ')');
	long ticks_per_second = sysconf(_SC_CLK_TCK);
	double since_boot = clock_seconds(CLOCK_BOOTTIME), wall = clock_seconds(CLOCK_REALTIME);
	if (field == NULL || ticks_per_second <= 0 || since_boot == 0 || wall == 0)
		return 0;
	field += 2; /* ") " */
	for (int i = 0; i < STAT_STARTTIME_AFTER_COMM && field != NULL; i++) {
		field = strchr(field, ' ');
		if (field != NULL)
			field++;
	}
	unsigned long long start_ticks;
	if (field == NULL || sscanf(field, "%llu", &start_ticks) != 1)
		return 0;
	double age = since_boot - (double)start_ticks / (double)ticks_per_second;
	return wall - (age > 0 ? age : 0);
}

static int count_open_fds(uint64_t *count)
{
	DIR *directory = opendir("/proc/self/fd");
	if (directory == NULL)
		return -1;
	uint64_t entries = 0;
	struct dirent *entry;
	while ((entry = readdir(directory)) != NULL) {
		if (entry->d_name[0] != '.')
			entries++;
	}
	closedir(directory);
	*count = entries > 0 ? entries - 1 : 0; /* the directory's own descriptor */
	return 0;
}

int metrics_process_read(struct metrics_process *process)
{
	struct rusage usage;
	struct rlimit limit;
	unsigned long long size_pages, resident_pages;
	long page_size = sysconf(_SC_PAGESIZE);

	if (getrusage(RUSAGE_SELF, &usage) < 0 || getrlimit(RLIMIT_NOFILE, &limit) < 0 ||
	    page_size <= 0)
		return -1;
	FILE *statm = fopen("/proc/self/statm", "re");
	if (statm == NULL)
		return -1;
	int fields = fscanf(statm, "%llu %llu", &size_pages, &resident_pages);
	fclose(statm);
	if (fields != 2 || count_open_fds(&process->open_fds) < 0)
		return -1;
	process->cpu_seconds = seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime);
	process->resident_bytes = (uint64_t)resident_pages * (uint64_t)page_size;
	process->max_fds = limit.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)limit.rlim_cur;
	return 0;
}
