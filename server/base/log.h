/*
 * log: leveled diagnostics on stderr or in an error log file (--error-log),
 * reopened in place on SIGUSR1; lines from worker, lookup and libmongoc
 * threads never interleave, and once the writer thread runs
 * (log_start_writer) none of them waits for the log to be written. Messages carry
 * values from requests and from the database (paths, ids, driver errors):
 * every message is escaped as a whole before it is written, so no value can
 * end a line early or forge another one.
 */
#ifndef MUSICD_LOG_H
#define MUSICD_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };

/* Sets the lowest level that is written; the default is info. */
void log_set_level(enum log_level level);
/* True when a message at this level would be written. */
int log_enabled(enum log_level level);
/* Parses "debug", "info", "warn" or "error" in any case; returns 0, or -1 for anything else. */
int log_level_parse(const char *name, enum log_level *out);
/*
 * Copies text into out (always NUL-terminated), writing a backslash, control
 * bytes and DEL as \\, \n, \r, \t or \xHH; other bytes as they are. Stops
 * before an escape that would not fit. Returns the length written.
 */
size_t log_escape(char *out, size_t out_size, const char *text);
/*
 * Writes "<UTC time> <level>: <escaped message>\n" to the error log (stderr
 * until log_open names a file) when the level is enabled.
 */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level level, const char *fmt, va_list args);

/* The --error-log value that means stderr (the default). */
#define LOG_TARGET_STDERR "stderr"

/*
 * Sends the lines to target from now on: a file (opened by log_file_open:
 * appended to, created 0640 if missing, refused if not safe to write as root)
 * or LOG_TARGET_STDERR. Call before threads start. 0, or -1
 * with "error log <path>: <reason>" in error (the log is unchanged).
 */
int log_open(const char *target, char *error, size_t error_size);
/*
 * Opens the error log's path again (after a rotation renamed it) and swaps
 * it in under the same descriptor, safe while other threads write; a no-op
 * for stderr. On failure the old file stays in use: -1 with a message.
 */
int log_reopen(char *error, size_t error_size);
/* The error log's path, or NULL while it is stderr. */
const char *log_file_path(void);
/* Back to stderr, closing the file; for the end of main (a no-op once the writer runs). */
void log_close(void);

/* The error log's buffer for its writer thread: lines beyond it are dropped (and counted). */
#define LOG_WRITER_BYTES ((size_t)256 * 1024)

/*
 * From now on lines are handed to a writer thread of the log's own instead of
 * written by the caller: 0, or -1 (out of memory or threads; lines are then
 * written as before). Call once the log's target is set, before the threads
 * that serve start.
 */
int log_start_writer(void);
/* Waits up to wait_ms for the lines logged so far to be written: 0, or -1 (time ran out). */
#define ABORT_LOG_WAIT_MS 1000 /* before abort(): the line that says why */
int log_flush(unsigned wait_ms);
/* Lines dropped, all along, because the writer had not caught up (a slow or hung log). */
uint64_t log_dropped_lines(void);

#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif
