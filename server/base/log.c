/*
 * log: leveled diagnostics on stderr or in the error log file. Each line is
 * formatted into one buffer. Until log_start_writer it is written at once
 * with a single write(2) (start-up, -t); from then on it is handed to the
 * log's writer thread (base/log_writer.h), so that no thread that serves
 * requests waits for the log's storage or for a reader of stderr.
 *
 * Reopening (SIGUSR1, after logrotate renamed the file) never changes which
 * descriptor number the writers use: the new file is opened, then dup3(2)
 * puts it in place of the old one in a single step. A write(2) already
 * running holds the old file and finishes its line there; every later one
 * goes to the new file. No lock, no line split or lost across the rename.
 */
#include "base/log.h"

#include "base/log_file.h"
#include "base/log_writer.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 2048

/* Set by main (at start and on SIGHUP) while every thread reads it. */
static _Atomic enum log_level minimum_level = LOG_LEVEL_INFO;
/* Where lines go: stderr, or a descriptor of the error log's own (set before any thread starts). */
static int log_fd = STDERR_FILENO;
static char *log_path; /* NULL while the log is stderr */
/* The writer thread's, once started; kept to the end of the process (a late line may come). */
static _Atomic(struct log_writer *) writer;
static _Atomic uint64_t dropped_lines;

static const char *const level_names[] = {
	[LOG_LEVEL_DEBUG] = "debug",
	[LOG_LEVEL_INFO] = "info",
	[LOG_LEVEL_WARN] = "warn",
	[LOG_LEVEL_ERROR] = "error",
};

void log_set_level(enum log_level level)
{
	atomic_store_explicit(&minimum_level, level, memory_order_relaxed);
}

int log_enabled(enum log_level level)
{
	return level >= atomic_load_explicit(&minimum_level, memory_order_relaxed);
}

int log_level_parse(const char *name, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (strcasecmp(name, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

size_t log_escape(char *out, size_t out_size, const char *text)
{
	static const char hex[] = "0123456789abcdef";
	size_t used = 0;
	if (out_size == 0)
		return 0;
	for (const unsigned char *c = (const unsigned char *)text; *c != '\0'; c++) {
		char escaped[4];
		size_t length = 2;
		escaped[0] = '\\';
		if (*c == '\\')
			escaped[1] = '\\';
		else if (*c == '\n')
			escaped[1] = 'n';
		else if (*c == '\r')
			escaped[1] = 'r';
		else if (*c == '\t')
			escaped[1] = 't';
		else if (*c < 0x20 || *c == 0x7f) {
			escaped[1] = 'x';
			escaped[2] = hex[*c >> 4];
			escaped[3] = hex[*c & 0xf];
			length = 4;
		} else {
			escaped[0] = (char)*c;
			length = 1;
		}
		if (used + length >= out_size)
			break;
		memcpy(out + used, escaped, length);
		used += length;
	}
	out[used] = '\0';
	return used;
}

void log_vmsg(enum log_level level, const char *fmt, va_list args)
{
	if (!log_enabled(level))
		return;

	char message[LOG_LINE_MAX];
	char line[LOG_LINE_MAX];
	struct timespec now;
	struct tm utc;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &utc);

	int used = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s: ",
			    utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
			    utc.tm_sec, now.tv_nsec / 1000000, level_names[level]);
	if (vsnprintf(message, sizeof(message), fmt, args) < 0)
		message[0] = '\0';
	size_t length = (size_t)used + log_escape(line + used, sizeof(line) - (size_t)used - 1, message);
	line[length++] = '\n';

	struct log_writer *lines = atomic_load_explicit(&writer, memory_order_acquire);
	if (lines != NULL) {
		if (!log_writer_put(lines, line, length))
			atomic_fetch_add_explicit(&dropped_lines, 1, memory_order_relaxed);
		return;
	}
	/* A failed diagnostic write has nowhere better to go. */
	ssize_t ignored = write(log_fd, line, length);
	(void)ignored;
}

/* On the writer thread, once it has caught up after dropping lines. */
static void on_dropped(void *arg, uint64_t dropped)
{
	(void)arg;
	log_warn("error log: %llu line%s dropped: it was not written as fast as they came (a slow "
		 "or hung disk, or stderr not read)",
		 (unsigned long long)dropped, dropped == 1 ? "" : "s");
}

int log_start_writer(void)
{
	if (atomic_load(&writer) != NULL)
		return 0;
	struct log_writer *made = log_writer_new(log_fd, false, LOG_WRITER_BYTES, on_dropped, NULL);
	if (made == NULL)
		return -1;
	atomic_store_explicit(&writer, made, memory_order_release);
	return 0;
}

int log_flush(unsigned wait_ms)
{
	struct log_writer *lines = atomic_load_explicit(&writer, memory_order_acquire);
	return lines != NULL ? log_writer_flush(lines, wait_ms) : 0;
}

uint64_t log_dropped_lines(void)
{
	return atomic_load_explicit(&dropped_lines, memory_order_relaxed);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	log_vmsg(level, fmt, args);
	va_end(args);
}

int log_open(const char *target, char *error, size_t error_size)
{
	if (target == NULL || strcmp(target, LOG_TARGET_STDERR) == 0)
		return 0;
	char *copy = strdup(target);
	int fd;
	if (copy == NULL) {
		snprintf(error, error_size, "error log %s: out of memory", target);
		return -1;
	}
	char reason[LOG_LINE_MAX];
	if (log_file_open(target, &fd, reason, sizeof(reason)) < 0) {
		snprintf(error, error_size, "error log %s", reason);
		free(copy);
		return -1;
	}
	log_close();
	log_fd = fd;
	log_path = copy;
	return 0;
}

int log_reopen(char *error, size_t error_size)
{
	if (log_path == NULL)
		return 0;
	char reason[LOG_LINE_MAX];
	if (log_file_reopen(log_path, log_fd, reason, sizeof(reason)) < 0) {
		snprintf(error, error_size, "error log %s", reason);
		return -1;
	}
	return 0;
}

const char *log_file_path(void)
{
	return log_path;
}

void log_close(void)
{
	if (log_path == NULL)
		return;
	if (atomic_load(&writer) != NULL)
		return; /* its thread may still write to the descriptor: left to the exit */
	close(log_fd);
	log_fd = STDERR_FILENO;
	free(log_path);
	log_path = NULL;
}
