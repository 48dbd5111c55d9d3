/*
 * Unit tests for server/base/log_writer.h, as a specification of the writer a
 * log's lines go through: lines come out whole and in order; whoever puts a
 * line never waits, even when nothing reads the log (a pipe nobody reads):
 * the buffer fills, later lines are dropped and counted, a flush gives up at
 * its time; once the log is read again what was kept comes out, and the drop
 * is reported; a released writer writes what it holds and closes its file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log_writer.h"

#define WAIT_MS 5000 /* every wait here is bounded */

static _Atomic uint64_t reported_drops;

static void count_drops(void *arg, uint64_t dropped)
{
	(void)arg;
	atomic_fetch_add(&reported_drops, dropped);
}

static double now_seconds(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* Reads fd (a pipe) until length bytes came or it ends. */
static size_t read_exactly(int fd, char *out, size_t length)
{
	size_t got = 0;
	while (got < length) {
		ssize_t part = read(fd, out + got, length - got);
		if (part <= 0)
			break;
		got += (size_t)part;
	}
	return got;
}

static void test_lines_come_out_whole_and_in_order(void **state)
{
	(void)state;
	char path[] = "/tmp/musicd-test-log-writer.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	struct log_writer *writer = log_writer_new(fd, true, 4096, NULL, NULL);
	assert_non_null(writer);
	char expected[64 * 32] = "";
	for (int i = 0; i < 64; i++) {
		char line[32];
		int length = snprintf(line, sizeof(line), "line %d\n", i);
		assert_true(log_writer_put(writer, line, (size_t)length));
		strcat(expected, line);
	}
	assert_int_equal(log_writer_flush(writer, WAIT_MS), 0);
	char contents[sizeof(expected)];
	ssize_t read_length = pread(fd, contents, sizeof(contents) - 1, 0);
	assert_true(read_length >= 0);
	contents[read_length] = '\0';
	assert_string_equal(contents, expected);
	log_writer_release(writer);
	assert_int_equal(log_writer_wait_released(WAIT_MS), 0);
	/* The released writer closed the file it owned. */
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	unlink(path);
}

static void test_a_log_nobody_reads_never_holds_the_caller(void **state)
{
	(void)state;
	int pipe_fds[2];
	assert_int_equal(pipe(pipe_fds), 0);
	/* The smallest pipe the kernel makes: it is full after a page. */
	fcntl(pipe_fds[1], F_SETPIPE_SZ, 4096);
	atomic_store(&reported_drops, 0);
	const size_t capacity = 16 * 1024;
	struct log_writer *writer = log_writer_new(pipe_fds[1], true, capacity, count_drops, NULL);
	assert_non_null(writer);
	char line[100];
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';

	/* Far more than the pipe and both buffers hold: every put returns at once. */
	double start = now_seconds();
	unsigned kept = 0, dropped = 0;
	for (unsigned i = 0; i < 2000; i++) {
		if (log_writer_put(writer, line, sizeof(line)))
			kept++;
		else
			dropped++;
	}
	assert_true(now_seconds() - start < 2.0);
	assert_true(dropped > 0);
	/* At most what the pipe, the buffer being written and the filling one hold. */
	assert_true(kept * sizeof(line) <= 4096 + 2 * capacity);
	/* Nothing reads: a flush gives up at its time. */
	start = now_seconds();
	assert_int_equal(log_writer_flush(writer, 200), -1);
	assert_true(now_seconds() - start < 2.0);
	assert_int_equal(atomic_load(&reported_drops), 0); /* not caught up yet */

	/* Read: every kept line comes out, whole, and the drop is reported once caught up. */
	char *all = malloc(kept * sizeof(line));
	assert_non_null(all);
	assert_int_equal(read_exactly(pipe_fds[0], all, kept * sizeof(line)), kept * sizeof(line));
	for (unsigned i = 0; i < kept; i++)
		assert_memory_equal(all + i * sizeof(line), line, sizeof(line));
	assert_int_equal(log_writer_flush(writer, WAIT_MS), 0);
	assert_int_equal(atomic_load(&reported_drops), dropped);
	/* And lines put now come through again. */
	assert_true(log_writer_put(writer, "after\n", 6));
	char after[6];
	assert_int_equal(read_exactly(pipe_fds[0], after, sizeof(after)), sizeof(after));
	assert_memory_equal(after, "after\n", 6);
	free(all);

	log_writer_release(writer);
	assert_int_equal(log_writer_wait_released(WAIT_MS), 0);
	/* The write end is closed: the reader sees the end. */
	char none;
	assert_int_equal(read(pipe_fds[0], &none, 1), 0);
	close(pipe_fds[0]);
}

static void test_a_released_writer_writes_what_it_holds_first(void **state)
{
	(void)state;
	int pipe_fds[2];
	assert_int_equal(pipe(pipe_fds), 0);
	struct log_writer *writer = log_writer_new(pipe_fds[1], false, 4096, NULL, NULL);
	assert_non_null(writer);
	assert_true(log_writer_put(writer, "one\n", 4));
	assert_true(log_writer_put(writer, "two\n", 4));
	log_writer_release(writer);
	assert_int_equal(log_writer_wait_released(WAIT_MS), 0);
	char both[9] = "";
	assert_int_equal(read_exactly(pipe_fds[0], both, 8), 8);
	assert_string_equal(both, "one\ntwo\n");
	/* Not its descriptor: left open. */
	assert_int_not_equal(fcntl(pipe_fds[1], F_GETFD), -1);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
}

static void test_a_line_larger_than_the_buffer_is_dropped(void **state)
{
	(void)state;
	int fd = open("/dev/null", O_WRONLY);
	assert_true(fd >= 0);
	struct log_writer *writer = log_writer_new(fd, true, 16, NULL, NULL);
	assert_non_null(writer);
	assert_false(log_writer_put(writer, "seventeen bytes.\n", 17));
	assert_true(log_writer_put(writer, "sixteen bytes..\n", 16));
	assert_int_equal(log_writer_flush(writer, WAIT_MS), 0);
	log_writer_release(writer);
	assert_int_equal(log_writer_wait_released(WAIT_MS), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines_come_out_whole_and_in_order),
		cmocka_unit_test(test_a_log_nobody_reads_never_holds_the_caller),
		cmocka_unit_test(test_a_released_writer_writes_what_it_holds_first),
		cmocka_unit_test(test_a_line_larger_than_the_buffer_is_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
