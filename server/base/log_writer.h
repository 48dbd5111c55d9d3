/*
 * log_writer: a log's lines written by a thread of its own, so that whoever
 * logs (an event loop ending a request, a lookup thread) never waits for the
 * log's storage. A line is copied into a bounded buffer and the caller goes
 * on; the writer thread writes what has gathered, whole lines at a time. A
 * log on a slow or full disk, on a mount that hangs, or a pipe nobody reads
 * (stdout, stderr under a supervisor that stopped reading) holds that thread
 * and nothing else. A line that does not fit in the buffer is dropped and
 * counted: a log never costs memory without bound, nor holds a request.
 *
 * On a pipe, a socket or a terminal each write(2) is whole lines of at most
 * PIPE_BUF bytes (a longer line alone), as one write per line was before: a
 * pipe keeps such writes whole even when other processes write to it too.
 */
#ifndef MUSICD_LOG_WRITER_H
#define MUSICD_LOG_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct log_writer;

/*
 * Called on the writer thread, with no lock held, once the lines put after a
 * drop have been written: dropped is how many lines were dropped since the
 * last call.
 */
typedef void (*log_writer_dropped_fn)(void *arg, uint64_t dropped);

/*
 * A writer of fd with a buffer of capacity bytes (two, swapped: one filling
 * while the other is written); owns_fd: fd is closed once the writer is
 * released and has written what it holds. NULL when out of memory or threads.
 */
struct log_writer *log_writer_new(int fd, bool owns_fd, size_t capacity,
				  log_writer_dropped_fn on_dropped, void *arg);

/* Queues line (length bytes, its newline included); false when it was dropped. From any thread. */
bool log_writer_put(struct log_writer *writer, const char *line, size_t length);

/*
 * Waits up to wait_ms for every line put before the call to be written (or
 * to have failed); 0, or -1 when the time ran out (a hung or unread log).
 */
int log_writer_flush(struct log_writer *writer, unsigned wait_ms);

/*
 * Lets the writer go without waiting: its thread writes what it holds, closes
 * fd if it owns it and frees it. Nothing may be put after this.
 */
void log_writer_release(struct log_writer *writer);

/* Waits up to wait_ms for every released writer to finish; 0, or -1 when one has not. */
int log_writer_wait_released(unsigned wait_ms);

#endif
