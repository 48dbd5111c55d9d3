/*
 * log_writer: a log's lines gathered in a bounded buffer by whoever logs, and
 * written by a thread of the log's own (log_writer.h).
 *
 * Two buffers: callers append to the filling one under the lock (a memcpy,
 * no system call); the thread swaps it with the other, empty one and writes
 * that with the lock let go. Counters of bytes accepted and bytes done let a
 * flush wait for exactly what was put before it.
 */
#include "base/log_writer.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"

struct log_writer {
	pthread_mutex_t lock;
	pthread_cond_t wake;	/* the thread: lines, or the release */
	pthread_cond_t written; /* flushes: done moved */
	char *filling;		/* guarded by lock */
	size_t filled;		/* guarded by lock */
	char *spare;		/* the thread's */
	size_t capacity;
	uint64_t accepted;	/* guarded by lock: bytes ever put */
	uint64_t done;		/* guarded by lock: bytes ever written or given up */
	uint64_t dropped;	/* guarded by lock: lines dropped since the last report */
	bool released;		/* guarded by lock */
	int fd;
	bool owns_fd;
	bool whole_lines;	/* a pipe, socket or terminal: writes of whole lines, <= PIPE_BUF */
	log_writer_dropped_fn on_dropped;
	void *arg;
};

/* Released writers whose threads have not finished yet. */
static pthread_mutex_t released_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t released_done;
static pthread_once_t released_once = PTHREAD_ONCE_INIT;
static unsigned released_running; /* guarded by released_lock */

static void released_init(void)
{
	pthread_condattr_t attributes;
	pthread_condattr_init(&attributes);
	clock_condattr_monotonic(&attributes);
	pthread_cond_init(&released_done, &attributes);
	pthread_condattr_destroy(&attributes);
}

/* Writes length bytes of data, waiting for a descriptor set non-blocking; false on an error. */
static bool write_all(int fd, const char *data, size_t length)
{
	while (length > 0) {
		ssize_t wrote = write(fd, data, length);
		if (wrote < 0 && errno == EINTR)
			continue;
		if (wrote < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd ready = {.fd = fd, .events = POLLOUT};
			if (poll(&ready, 1, -1) < 0 && errno != EINTR)
				return false;
			continue;
		}
		if (wrote <= 0)
			return false;
		data += wrote;
		length -= (size_t)wrote;
	}
	return true;
}

/* How many bytes from data make the next write: all, or whole lines up to PIPE_BUF. */
static size_t next_write(const struct log_writer *writer, const char *data, size_t length)
{
	if (!writer->whole_lines || length <= PIPE_BUF)
		return length;
	size_t end = 0;
	while (end < length) {
		const char *newline = memchr(data + end, '\n', length - end);
		size_t line_end = newline != NULL ? (size_t)(newline - data) + 1 : length;
		if (end > 0 && line_end > PIPE_BUF)
			break; /* the lines so far, then this one in its turn */
		end = line_end;
		if (end >= PIPE_BUF)
			break; /* a line longer than PIPE_BUF goes alone */
	}
	return end;
}

/* Writes a batch of whole lines; a failed write gives the rest of the batch up. */
static void write_batch(const struct log_writer *writer, const char *data, size_t length)
{
	while (length > 0) {
		size_t part = next_write(writer, data, length);
		if (!write_all(writer->fd, data, part))
			return; /* a log that cannot be written has nowhere to say so */
		data += part;
		length -= part;
	}
}

static void writer_free(struct log_writer *writer)
{
	if (writer->owns_fd)
		close(writer->fd);
	pthread_cond_destroy(&writer->written);
	pthread_cond_destroy(&writer->wake);
	pthread_mutex_destroy(&writer->lock);
	free(writer->filling);
	free(writer->spare);
	free(writer);
}

static void *writer_main(void *arg)
{
	struct log_writer *writer = arg;
	pthread_mutex_lock(&writer->lock);
	for (;;) {
		while (writer->filled == 0 && !writer->released)
			pthread_cond_wait(&writer->wake, &writer->lock);
		if (writer->filled == 0)
			break; /* released, and all is written */
		char *batch = writer->filling;
		size_t length = writer->filled;
		uint64_t dropped = writer->dropped;
		writer->filling = writer->spare;
		writer->filled = 0;
		writer->dropped = 0;
		writer->spare = batch;
		pthread_mutex_unlock(&writer->lock);

		write_batch(writer, batch, length);
		if (dropped > 0 && writer->on_dropped != NULL)
			writer->on_dropped(writer->arg, dropped);

		pthread_mutex_lock(&writer->lock);
		writer->done += length;
		pthread_cond_broadcast(&writer->written);
	}
	pthread_mutex_unlock(&writer->lock);
	writer_free(writer);
	pthread_mutex_lock(&released_lock);
	released_running--;
	pthread_cond_broadcast(&released_done);
	pthread_mutex_unlock(&released_lock);
	return NULL;
}

struct log_writer *log_writer_new(int fd, bool owns_fd, size_t capacity,
				  log_writer_dropped_fn on_dropped, void *arg)
{
	pthread_once(&released_once, released_init);
	struct log_writer *writer = calloc(1, sizeof(*writer));
	if (writer == NULL)
		return NULL;
	*writer = (struct log_writer){.capacity = capacity, .fd = fd, .owns_fd = owns_fd,
				      .on_dropped = on_dropped, .arg = arg};
	struct stat info;
	writer->whole_lines = fstat(fd, &info) == 0 && (S_ISFIFO(info.st_mode) ||
							 S_ISSOCK(info.st_mode) ||
							 S_ISCHR(info.st_mode));
	/* Only the pages a burst fills are touched: a quiet log costs next to nothing. */
	writer->filling = malloc(capacity);
	writer->spare = malloc(capacity);
	pthread_condattr_t attributes;
	pthread_condattr_init(&attributes);
	clock_condattr_monotonic(&attributes);
	pthread_mutex_init(&writer->lock, NULL);
	pthread_cond_init(&writer->wake, NULL);
	pthread_cond_init(&writer->written, &attributes);
	pthread_condattr_destroy(&attributes);
	pthread_t thread;
	pthread_attr_t thread_attributes;
	pthread_attr_init(&thread_attributes);
	pthread_attr_setdetachstate(&thread_attributes, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&thread_attributes, 64 * 1024);
	int failed = writer->filling == NULL || writer->spare == NULL ||
		     pthread_create(&thread, &thread_attributes, writer_main, writer) != 0;
	pthread_attr_destroy(&thread_attributes);
	if (!failed)
		pthread_setname_np(thread, "log writer"); /* what top -H and /proc show */
	if (failed) {
		writer->owns_fd = false; /* the caller keeps fd when there is no writer */
		writer_free(writer);
		return NULL;
	}
	return writer;
}

bool log_writer_put(struct log_writer *writer, const char *line, size_t length)
{
	pthread_mutex_lock(&writer->lock);
	bool fits = length <= writer->capacity - writer->filled;
	if (fits) {
		memcpy(writer->filling + writer->filled, line, length);
		writer->filled += length;
		writer->accepted += length;
		if (writer->filled == length)
			pthread_cond_signal(&writer->wake); /* the thread waits only for an empty buffer */
	} else {
		writer->dropped++;
	}
	pthread_mutex_unlock(&writer->lock);
	return fits;
}

int log_writer_flush(struct log_writer *writer, unsigned wait_ms)
{
	struct timespec deadline = clock_deadline_after(wait_ms);
	int status = 0;
	pthread_mutex_lock(&writer->lock);
	uint64_t target = writer->accepted;
	while (writer->done < target && status == 0) {
		if (pthread_cond_timedwait(&writer->written, &writer->lock, &deadline) == ETIMEDOUT)
			status = writer->done < target ? -1 : 0;
	}
	pthread_mutex_unlock(&writer->lock);
	return status;
}

void log_writer_release(struct log_writer *writer)
{
	if (writer == NULL)
		return;
	pthread_mutex_lock(&released_lock);
	released_running++;
	pthread_mutex_unlock(&released_lock);
	pthread_mutex_lock(&writer->lock);
	writer->released = true;
	pthread_cond_signal(&writer->wake);
	pthread_mutex_unlock(&writer->lock);
}

int log_writer_wait_released(unsigned wait_ms)
{
	pthread_once(&released_once, released_init);
	struct timespec deadline = clock_deadline_after(wait_ms);
	int status = 0;
	pthread_mutex_lock(&released_lock);
	while (released_running > 0 && status == 0) {
		if (pthread_cond_timedwait(&released_done, &released_lock, &deadline) == ETIMEDOUT)
			status = released_running > 0 ? -1 : 0;
	}
	pthread_mutex_unlock(&released_lock);
	return status;
}
