/*
 * console: one mutex orders skip reports, errors and the progress line. The
 * progress line is drawn with "\r" and erased with "\r\033[K" before any
 * other line, so the terminal shows whole lines only.
 */
#include "console.h"

#include "escape.h"
#include "summary.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void console_progress(struct console *console, size_t done, size_t found, bool force)
{
	if (!console->progress)
		return;
	pthread_mutex_lock(&console->lock);
	double now = now_seconds();
	if (force || now - console->last_progress >= PROGRESS_INTERVAL) {
		char line[128];
		if (summary_format_progress(done, found, now - console->started, line,
					    sizeof(line)) == 0) {
			fprintf(stderr, "\r\033[K%s", line);
			fflush(stderr);
			console->progress_shown = true;
		}
		console->last_progress = now;
	}
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
