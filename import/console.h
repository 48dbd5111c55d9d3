/*
 * console: everything musicd-import writes to stderr: a file it skips (once,
 * path escaped, counted), errors, and on a terminal the progress line, kept
 * apart so a message never lands inside it. Safe from any thread.
 */
#ifndef MUSICD_IMPORT_CONSOLE_H
#define MUSICD_IMPORT_CONSOLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct console {
	pthread_mutex_t lock;
	bool progress;	     /* stderr is a terminal */
	bool progress_shown; /* a progress line is on screen now */
	double last_progress;
	double started;	     /* monotonic seconds at console_init */
	size_t skipped;	     /* files and directories skipped so far */
};

/* Progress is shown only when stderr is a terminal. */
void console_init(struct console *console);
void console_destroy(struct console *console);

/* Seconds since console_init (monotonic). */
double console_elapsed(const struct console *console);

/* "musicd-import: <escaped path>: <reason>", and one more skipped. */
void console_skip(struct console *console, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "musicd-import: <message>" (not counted). */
void console_error(struct console *console, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Redraws the progress line, at most a few times a second; force draws it now. */
void console_progress(struct console *console, size_t done, size_t found, bool force);

/* Removes the progress line, if shown. */
void console_progress_end(struct console *console);

size_t console_skipped(struct console *console);

#endif
