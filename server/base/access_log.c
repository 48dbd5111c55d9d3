/*
 * access_log: combined log format lines. Request fields come from the client,
 * so they are escaped (\" \\ \xHH) before they reach a log parser.
 * Lines are handed to the log's writer thread (base/log_writer.h): the loop
 * that ends a request never waits for the log's storage, or for a reader of
 * stdout. Reopening swaps the file under the descriptor that thread writes to
 * (dup3, as log.c does for the error log), so nothing changes for it.
 */
#include "base/access_log.h"

#include "base/log.h"
#include "base/log_file.h"
#include "base/log_writer.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct access_log {
	int fd;	    /* never changes once open: reopening swaps the file beneath it */
	char *path; /* NULL for stdout; owned */
	struct log_writer *writer; /* NULL: out of threads at the open, lines written at once */
};

static _Atomic uint64_t dropped_lines;

/* On the writer thread, once it has caught up after dropping lines. */
static void on_dropped(void *arg, uint64_t dropped)
{
	(void)arg; /* the access_log may be gone: released writers outlive it */
	log_warn("access log: %llu line%s dropped: it was not written as fast as requests ended (a "
		 "slow or hung disk, or stdout not read)",
		 (unsigned long long)dropped, dropped == 1 ? "" : "s");
}

/* The writer thread, which owns the file's descriptor (not stdout's) from now on. */
static void start_writer(struct access_log *log)
{
	log->writer = log_writer_new(log->fd, log->path != NULL, ACCESS_LOG_WRITER_BYTES, on_dropped,
				     NULL);
}

static const char *const month_names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
					  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

struct access_log *access_log_open(const char *target, char *error, size_t error_size)
{
	struct access_log *log = calloc(1, sizeof(*log));
	if (log == NULL) {
		snprintf(error, error_size, "access log: out of memory");
		return NULL;
	}
	if (strcmp(target, "-") == 0) {
		log->fd = STDOUT_FILENO;
		start_writer(log);
		return log;
	}
	char reason[ACCESS_LOG_LINE_MAX];
	if ((log->path = strdup(target)) == NULL) {
		snprintf(error, error_size, "access log %s: out of memory", target);
		free(log);
		return NULL;
	}
	if (log_file_open(target, &log->fd, reason, sizeof(reason)) < 0) {
		snprintf(error, error_size, "access log %s", reason);
		free(log->path);
		free(log);
		return NULL;
	}
	start_writer(log);
	return log;
}

int access_log_reopen(struct access_log *log, char *error, size_t error_size)
{
	if (log == NULL || log->path == NULL)
		return 0;
	char reason[ACCESS_LOG_LINE_MAX];
	if (log_file_reopen(log->path, log->fd, reason, sizeof(reason)) < 0) {
		snprintf(error, error_size, "access log %s", reason);
		return -1;
	}
	return 0;
}

void access_log_close(struct access_log *log)
{
	if (log == NULL)
		return;
	if (log->writer != NULL)
		log_writer_release(log->writer); /* writes what it holds, then closes the file */
	else if (log->path != NULL)
		close(log->fd);
	free(log->path);
	free(log);
}

int access_log_flush(struct access_log *log, unsigned wait_ms)
{
	return log != NULL && log->writer != NULL ? log_writer_flush(log->writer, wait_ms) : 0;
}

uint64_t access_log_dropped_lines(void)
{
	return atomic_load_explicit(&dropped_lines, memory_order_relaxed);
}

/* Appends text escaped; stops at the end of out. Returns the new used length. */
static size_t append_escaped(char *out, size_t size, size_t used, const char *text)
{
	static const char hex[] = "0123456789ABCDEF";
	if (text == NULL)
		text = "-";
	for (const unsigned char *c = (const unsigned char *)text; *c && used + 4 < size; c++) {
		if (*c == '"' || *c == '\\' || *c < 0x20 || *c >= 0x7f) {
			out[used++] = '\\';
			out[used++] = 'x';
			out[used++] = hex[*c >> 4];
			out[used++] = hex[*c & 0xf];
		} else {
			out[used++] = (char)*c;
		}
	}
	return used;
}

static size_t append(char *out, size_t size, size_t used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static size_t append(char *out, size_t size, size_t used, const char *fmt, ...)
{
	if (used >= size)
		return used;
	va_list args;
	va_start(args, fmt);
	int written = vsnprintf(out + used, size - used, fmt, args);
	va_end(args);
	if (written < 0)
		return used;
	return used + (size_t)written < size ? used + (size_t)written : size - 1;
}

size_t access_log_format(char *out, size_t out_size, const struct access_entry *entry)
{
	if (out_size < 2) {
		if (out_size == 1)
			out[0] = '\0';
		return 0;
	}
	struct tm utc;
	time_t when = entry->time;
	gmtime_r(&when, &utc);
	/* Leave room for the trailing newline. */
	size_t size = out_size - 1;
	size_t used = 0;

	used = append(out, size, used, "%s - - [%02d/%s/%04d:%02d:%02d:%02d +0000] \"",
		      entry->client ? entry->client : "-", utc.tm_mday, month_names[utc.tm_mon],
		      utc.tm_year + 1900, utc.tm_hour, utc.tm_min, utc.tm_sec);
	if (entry->method != NULL) {
		used = append_escaped(out, size, used, entry->method);
		used = append(out, size, used, " ");
		used = append_escaped(out, size, used, entry->target);
		if (entry->http_major >= 0) /* else the line ended before its version */
			used = append(out, size, used, " HTTP/%d.%d", entry->http_major,
				      entry->http_minor);
	} else {
		used = append(out, size, used, "-"); /* no request line to show */
	}
	used = append(out, size, used, "\" %d %llu \"", entry->status,
		      (unsigned long long)entry->body_bytes);
	used = append_escaped(out, size, used, entry->referer);
	used = append(out, size, used, "\" \"");
	used = append_escaped(out, size, used, entry->user_agent);
	used = append(out, size, used, "\" %.3f", entry->seconds);
	out[used++] = '\n';
	out[used] = '\0';
	return used;
}

void access_log_write(struct access_log *log, const struct access_entry *entry)
{
	if (log == NULL)
		return;
	char line[ACCESS_LOG_LINE_MAX];
	size_t length = access_log_format(line, sizeof(line), entry);
	if (log->writer != NULL) {
		if (!log_writer_put(log->writer, line, length))
			atomic_fetch_add_explicit(&dropped_lines, 1, memory_order_relaxed);
		return;
	}
	/* An access log that cannot be written must not take the server down. */
	ssize_t ignored = write(log->fd, line, length);
	(void)ignored;
}
