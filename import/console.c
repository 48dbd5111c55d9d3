/*
 * console: one mutex orders skip reports, errors, stdout's lines and the
 * progress line. The progress line is drawn after "\r\033[K" (back to the
 * line's start, erase to its end), never wider than the terminal (so it never
 * wraps onto a second line "\r" cannot reach), and erased the same way before
 * any other line, so the terminal shows whole lines only.
 */
#include "console.h"

#include "escape.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define PROGRESS_INTERVAL 0.25 /* seconds between redraws */
#define PROGRAM "musicd-import"

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void console_init(struct console *console)
{
	memset(console, 0, sizeof(*console));
	pthread_mutex_init(&console->lock, NULL);
	console->progress = isatty(STDERR_FILENO) == 1;
	console->started = now_seconds();
}

void console_destroy(struct console *console)
{
	pthread_mutex_destroy(&console->lock);
}

void console_hide_progress(struct console *console)
{
	console->progress = false;
}

double console_elapsed(const struct console *console)
{
	return now_seconds() - console->started;
}

/* With the lock held. */
static void erase_progress(struct console *console)
{
	if (console->progress_shown) {
		fputs("\r\033[K", stderr);
		console->progress_shown = false;
	}
}

static void vreport(struct console *console, const char *path, bool count, const char *fmt,
		    va_list args)
{
	char message[1024];
	vsnprintf(message, sizeof(message), fmt, args);
	char *shown = path ? escape_for_terminal(path, strlen(path)) : NULL;
	pthread_mutex_lock(&console->lock);
	erase_progress(console);
	if (path != NULL)
		fprintf(stderr, PROGRAM ": %s: %s\n", shown ? shown : "(out of memory)", message);
	else
		fprintf(stderr, PROGRAM ": %s\n", message);
	fflush(stderr);
	if (count)
		console->skipped++;
	pthread_mutex_unlock(&console->lock);
	free(shown);
}

void console_skip(struct console *console, const char *path, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	vreport(console, path, true, fmt, args);
	va_end(args);
}

void console_error(struct console *console, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	vreport(console, NULL, false, fmt, args);
	va_end(args);
}

void console_print(struct console *console, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	pthread_mutex_lock(&console->lock);
	erase_progress(console);
	vprintf(fmt, args);
	if (console->progress)
		fflush(stdout); /* out before the line is drawn again, on what may be one terminal */
	pthread_mutex_unlock(&console->lock);
	va_end(args);
}

/* The terminal's width now (it may be resized during a run); 0 when it does not say. */
static unsigned terminal_columns(void)
{
	struct winsize size;
	return ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
}

/* With the lock held: draws the line if force or if the last one is old enough. */
static void draw_progress(struct console *console, bool force)
{
	double now = now_seconds();
	if (!force && now - console->last_progress < PROGRESS_INTERVAL)
		return;
	char line[PROGRESS_LINE_MAX];
	console->state.seconds = now - console->stage_started;
	if (progress_format(&console->state, terminal_columns(), line, sizeof(line)) == 0) {
		fprintf(stderr, "\r\033[K%s", line);
		fflush(stderr);
		console->progress_shown = true;
	}
	console->last_progress = now;
}

/* With the lock held: the directory of the line, path[0..length) ("/" for the root's ""). */
static void keep_directory(struct console *console, const char *path, size_t length)
{
	if (length == 0) {
		path = "/";
		length = 1;
	}
	if (length >= sizeof(console->directory))
		length = sizeof(console->directory) - 1;
	memcpy(console->directory, path, length);
	console->directory[length] = '\0';
	console->state.directory = console->directory;
}

static void begin_stage(struct console *console, enum progress_stage stage)
{
	console->stage_started = now_seconds();
	console->state.stage = stage;
	console->state.directory = NULL;
	console->last_progress = 0; /* the first call of a stage draws */
}

void console_loading(struct console *console)
{
	if (!console->progress)
		return;
	pthread_mutex_lock(&console->lock);
	begin_stage(console, PROGRESS_LOADING);
	console->state.loaded = 0;
	draw_progress(console, true);
	pthread_mutex_unlock(&console->lock);
}

void console_load_progress(struct console *console, size_t loaded)
{
	if (!console->progress)
		return;
	pthread_mutex_lock(&console->lock);
	console->state.loaded = loaded;
	draw_progress(console, false);
	pthread_mutex_unlock(&console->lock);
}

void console_walking(struct console *console, size_t expected)
{
	if (!console->progress)
		return;
	pthread_mutex_lock(&console->lock);
	begin_stage(console, PROGRESS_WALKING);
	console->state.expected = expected;
	console->state.found = 0;
	pthread_mutex_unlock(&console->lock);
}

void console_walk_progress(struct console *console, size_t found, const char *path,
			   size_t length)
{
	if (!console->progress)
		return;
	pthread_mutex_lock(&console->lock);
	console->state.found = found;
	/* The directory is copied only for a line drawn: the walk calls for every name it sees. */
	if (now_seconds() - console->last_progress >= PROGRESS_INTERVAL) {
		keep_directory(console, path, length);
		draw_progress(console, true);
	}
	pthread_mutex_unlock(&console->lock);
}

void console_reading(struct console *console, size_t found, size_t unchanged, size_t to_read)
{
	if (!console->progress)
		return;
	pthread_mutex_lock(&console->lock);
	begin_stage(console, PROGRESS_READING);
	console->state.found = found;
	console->state.done = unchanged;
	console->state.to_read = to_read;
	console->state.read = 0;
	pthread_mutex_unlock(&console->lock);
}

void console_read_progress(struct console *console, size_t read, const char *path, bool force)
{
	if (!console->progress)
		return;
	pthread_mutex_lock(&console->lock);
	console->state.done += read - console->state.read;
	console->state.read = read;
	if (path != NULL) {
		const char *slash = strrchr(path, '/');
		keep_directory(console, path, slash != NULL ? (size_t)(slash - path) : 0);
	}
	draw_progress(console, force);
	pthread_mutex_unlock(&console->lock);
}

void console_progress_end(struct console *console)
{
	pthread_mutex_lock(&console->lock);
	erase_progress(console);
	fflush(stderr);
	pthread_mutex_unlock(&console->lock);
}

size_t console_skipped(struct console *console)
{
	pthread_mutex_lock(&console->lock);
	size_t skipped = console->skipped;
	pthread_mutex_unlock(&console->lock);
	return skipped;
}
