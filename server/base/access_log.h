/*
 * access_log: one line per request in the combined log format, followed by
 * the response time in seconds (nginx's $request_time), handed to the log's
 * writer thread (base/log_writer.h) so that no worker waits for the log's
 * storage, and reopened in place on SIGUSR1 (log rotation) without a lock.
 */
#ifndef MUSICD_ACCESS_LOG_H
#define MUSICD_ACCESS_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define ACCESS_LOG_LINE_MAX 4096
/* An access log's buffer for its writer thread: lines beyond it are dropped (and counted). */
#define ACCESS_LOG_WRITER_BYTES ((size_t)1024 * 1024)

struct access_entry {
	const char *client;	/* peer address */
	time_t time;		/* when the request arrived */
	const char *method;	/* NULL: no request line was read (logged as "-") */
	const char *target;
	int http_major, http_minor; /* http_major < 0: no version read (none logged) */
	int status;
	uint64_t body_bytes;	/* body bytes actually sent */
	const char *referer;	/* NULL when absent */
	const char *user_agent; /* NULL when absent */
	double seconds;		/* from request to the last byte or the abort */
};

struct access_log;

/* target: a file path (appended to), "-" for stdout. NULL result with a message on failure. */
struct access_log *access_log_open(const char *target, char *error, size_t error_size);
/* Lets the log go without waiting: its writer thread writes what it holds, then closes the file. */
void access_log_close(struct access_log *log);
/* Waits up to wait_ms for the lines so far to be written: 0, or -1 (time ran out). */
int access_log_flush(struct access_log *log, unsigned wait_ms);
/* Lines dropped by every access log, all along, because its writer had not caught up. */
uint64_t access_log_dropped_lines(void);
/*
 * Opens the file's path again (after a rotation renamed it) and swaps it in
 * under the descriptor workers write to; safe while they write, and a no-op
 * for stdout or a NULL log. On failure the old file stays in use: -1 with a message.
 */
int access_log_reopen(struct access_log *log, char *error, size_t error_size);

/* Formats the line, escaping quotes, backslashes and control bytes as nginx does; returns its length. */
size_t access_log_format(char *out, size_t out_size, const struct access_entry *entry);

/* Appends the entry's line; a NULL log is off. */
void access_log_write(struct access_log *log, const struct access_entry *entry);

#endif
