/*
 * pid_file: --pid-file FILE, the process id in a file, for what must find one
 * musicd among several without systemd (logrotate's postrotate). Written once
 * musicd serves (its listeners bound, --user taken), by the user it serves as,
 * and removed at exit by the same user; a newer musicd started on the same
 * file (a restart without dropping a connection) takes it over, and the older
 * one, exiting later, leaves it alone.
 */
#ifndef MUSICD_PID_FILE_H
#define MUSICD_PID_FILE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Writes "PID\n" to path, whole or not at all: to a new file beside it, then
 * renamed over it (so a reader never sees it half written, and a symbolic
 * link at path is replaced, never followed). 0, or -1 with
 * "pid-file <path>: <reason>".
 */
int pid_file_write(const char *path, pid_t pid, char *error, size_t error_size);
/*
 * Removes path if it still names pid; a file another process has taken over
 * stays. A failure to remove it is logged.
 */
void pid_file_remove(const char *path, pid_t pid);
/*
 * -t: whether pid_file_write could write path as the current (real) user: its
 * directory exists and the user may create files in it. 0, or -1 as above.
 */
int pid_file_check(const char *path, char *error, size_t error_size);

#endif
