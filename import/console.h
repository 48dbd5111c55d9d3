/*
 * console: everything musicd-import writes to stderr: a file it skips (once,
 * path escaped, counted), errors, and on a terminal the progress line, kept
 * apart so a message never lands inside it. Safe from any thread.
 */
#ifndef MUSICD_IMPORT_CONSOLE_H
#define MUSICD_IMPORT_CONSOLE_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "progress.h"

struct console {
	pthread_mutex_t lock;
	bool progress;	     /* stderr is a terminal, and --json was not given */
	bool progress_shown; /* a progress line is on screen now */
	double last_progress;
	double started;	      /* monotonic seconds at console_init */
	double stage_started; /* and at the start of the progress line's stage */
	struct progress state; /* what the line tells; its directory is directory[] */
	char directory[PATH_MAX];
	size_t skipped; /* files and directories skipped so far */
};

/* Progress is shown only when stderr is a terminal. */
void console_init(struct console *console);
void console_destroy(struct console *console);

/* No progress line (--json: nothing but the summary is written). */
void console_hide_progress(struct console *console);

/* Seconds since console_init (monotonic). */
double console_elapsed(const struct console *console);

/* "musicd-import: <escaped path>: <reason>", and one more skipped. */
void console_skip(struct console *console, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "musicd-import: <message>" (not counted). */
void console_error(struct console *console, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A line on stdout ("would add ..."), the progress line erased first (one terminal may show both). */
void console_print(struct console *console, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Reading the documents of the previous import begins (the line is drawn at
 * once: the first of them may be long to come). Then, the documents read so far.
 */
void console_loading(struct console *console);
void console_load_progress(struct console *console, size_t loaded);

/*
 * The walk begins: about expected files to find (how many the previous import
 * left under the DIRs; 0: unknown). Then, from the walk, files found so far and
 * the directory it is in (path[0..length)). The line is redrawn at most a few
 * times a second, at once at the start of a stage.
 */
void console_walking(struct console *console, size_t expected);
void console_walk_progress(struct console *console, size_t found, const char *path,
			   size_t length);

/*
 * The reading begins: of the found files, unchanged need no reading, to_read
 * do. Then, as each is done in order, read of them so far and the path of the
 * last one; force draws the line now (the last file).
 */
void console_reading(struct console *console, size_t found, size_t unchanged, size_t to_read);
void console_read_progress(struct console *console, size_t read, const char *path, bool force);

/* Removes the progress line, if shown. */
void console_progress_end(struct console *console);

size_t console_skipped(struct console *console);

#endif
