/*
 * disk_io: every touch of a track's storage, off the event loops. Opening a
 * file (path resolution included), checking a cached one against the disk
 * (fstat, stat of its path), bringing a window of it into the page cache
 * (read-ahead) and closing it run on a bounded pool of threads
 * (base/task_pool.h) in one lane per media root, plus a lane for the GridFS
 * spool and one for paths that name no root as written: a root on a mount
 * that hangs holds its own lane's threads and nothing else.
 *
 * What stays on the loop is one residency check per window
 * (disk_residency: which bytes are in the page cache, without waiting), and
 * sendfile of bytes that are there: zero-copy, never a read of the device.
 *
 * The owner of a piece of work (a disk_work) keeps it alive from submit until
 * its delivery event has run on the owner's loop; the pool activates that
 * event once (exchange_wait in wire/ gives one). A close has no owner: it is
 * allocated here and frees itself.
 */
#ifndef MUSICD_DISK_IO_H
#define MUSICD_DISK_IO_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "base/metrics_text.h"
#include "base/task_pool.h"
#include "media/media.h"

/* Lanes beyond the media roots'. */
#define DISK_LANE_SPOOL(roots) (roots)	   /* the GridFS spool's copies */
#define DISK_LANE_OTHER(roots) ((roots) + 1) /* paths under no root as written */
#define DISK_LANES(roots) ((roots) + 2)

struct disk_io_limits {
	unsigned threads;      /* --disk-threads */
	unsigned root_threads; /* --disk-threads-per-root: one lane's most */
	unsigned queue;	       /* --disk-queue: starts queued per lane */
};

struct disk_io;

/* The pool, with lanes for root_count media roots; NULL with a message. */
struct disk_io *disk_io_new(const struct disk_io_limits *limits, size_t root_count, char *error,
			    size_t error_size);

/*
 * Stops taking work, hands back what is queued as skipped, waits up to wait_ms
 * for work under way; returns how much was abandoned (a hung read).
 */
unsigned disk_io_quiesce(struct disk_io *io, unsigned wait_ms);

/* Quiesces if not done, then frees what no abandoned thread still needs. */
void disk_io_free(struct disk_io *io);

/* The lane of a path as the database gives it: its root's, as written, or DISK_LANE_OTHER. */
unsigned disk_io_lane_of_path(const struct media_roots *roots, const char *path);

/* --- Which bytes are in memory (on the loop: one system call, never waiting) --- */

enum disk_residency {
	DISK_CACHED,	 /* every page of the range is in the page cache, read in whole */
	DISK_NOT_CACHED, /* some page is not, or is still being read */
	DISK_MAY_BLOCK,	 /* the kernel cannot tell (no mapping, no cachestat, no RWF_NOWAIT) */
};

/*
 * A file as the disk work knows it: its descriptor and size, its lane, and a
 * read-only mapping of it for the residency checks, made at the first check
 * that needs one (it maps nothing in: the pages are never touched, only asked
 * about). Made with its segment (disk_io_segment_new), which owns it: valid
 * while a reference to the segment is held, and let go (unmapped, closed on
 * the pool) with the segment's last one.
 */
struct disk_file;

/*
 * Whether [offset, offset + length) of file may be sent without waiting:
 * within one page, a one-byte preadv2(RWF_NOWAIT) (it fails with EAGAIN
 * unless the page is in memory and read in whole); else mincore(2) on the
 * file's mapping; where neither answers, cachestat(2).
 */
enum disk_residency disk_residency(struct disk_file *file, uint64_t offset, uint64_t length);

/* The file's descriptor. */
int disk_file_fd(const struct disk_file *file);

/* --- Work handed to the pool --- */

struct disk_work;
typedef void (*disk_work_fn)(struct disk_work *work);

/* The common part of every piece of work; the owner fills delivery, kind and lane. */
struct disk_work {
	struct task task;
	struct event *delivery; /* activated once, when done or skipped */
	bool skipped;		/* the pool stopped before running it */
	disk_work_fn run;
	struct disk_io *io;
};

/*
 * Queues work (run on a pool thread, then delivery activated); 0, or -1 when
 * the pool is stopping. kind TASK_START for a request's first storage work
 * (a full queue makes it wait: disk_io_cancel at the owner's deadline),
 * TASK_CONTINUE for a stream's next window.
 */
int disk_io_submit(struct disk_io *io, struct disk_work *work, disk_work_fn run, unsigned lane,
		   enum task_kind kind);

/* Takes back a start still waiting for room: 1 (nothing will be delivered), or 0. */
int disk_io_cancel(struct disk_io *io, struct disk_work *work);

/* Opening a track: media_open off the loop, then a hint that it will be read in order. */
struct disk_open {
	struct disk_work work; /* first */
	const struct media_roots *roots;
	char path[PATH_MAX];
	struct opened_file file; /* out: with MEDIA_OK, file.fd is the owner's to close */
	enum media_status status;
	int error_number;
};
void disk_open_run(struct disk_work *work);

/*
 * The same open on the caller's thread, when it waits for nothing
 * (media_open_cached: a local root, the path in the lookup cache): true with
 * open->status decided; false when it must go to the pool (disk_open_run).
 */
bool disk_open_now(struct disk_open *open);

/* Checking an open file (fstat) and, if path is set, its path (stat) against the disk. */
struct disk_check {
	struct disk_work work; /* first */
	int fd;		       /* -1: no fstat */
	const char *path;      /* NULL: no stat; the owner keeps it alive */
	bool fd_ok, path_ok;   /* out: each call succeeded */
	struct stat fd_info, path_info;
};
void disk_check_run(struct disk_work *work);

/* Bringing [offset, offset + length) of fd into the page cache. */
struct disk_read {
	struct disk_work work; /* first */
	int fd;
	struct disk_file *file; /* fd's: which pages are in; NULL: each page is waited for in turn */
	uint64_t offset, length;
	char *into;	  /* non-NULL: the bytes are copied into it (length of them), not read
			     ahead: a window whose pages went again and again before its send */
	bool first;	  /* a stream's first read: the file is told it will be read in order */
	uint64_t read;	  /* out: bytes brought in */
	int error_number; /* out: 0, or why the read failed */
};
void disk_read_run(struct disk_work *work);

/* --- Counted by the owners of the windows, on their loops --- */

void disk_io_count_evicted(struct disk_io *io);
void disk_io_count_copied(struct disk_io *io);
void disk_io_count_refused(struct disk_io *io);

/* --- Closing --- */

/*
 * Closes fd on the pool (a close on FUSE waits for the daemon's FLUSH, on NFS
 * for the server), with the other closes of its lane; from any thread. With io
 * stopping, fd is left to the ending process; with io NULL it is closed here
 * (unit tests).
 */
void disk_io_close(struct disk_io *io, int fd, unsigned lane);

/*
 * A lane's closes wait for a batch: DISK_CLOSE_BATCH of them, or the oldest
 * DISK_CLOSE_WAIT_MS old when the next comes, or disk_io_flush_closes (about
 * once a second: the file cache's sweep). At most DISK_CLOSE_BATCH
 * descriptors a lane wait so (ops/descriptor_budget.h counts them).
 */
#define DISK_CLOSE_BATCH 16
#define DISK_CLOSE_WAIT_MS 100
void disk_io_flush_closes(struct disk_io *io);

/*
 * A file segment of fd's first size bytes, sent by sendfile, and its
 * disk_file in *file; the descriptor (and the mapping, if one was made) is let
 * go on the pool when the segment's last reference goes. NULL (fd closed the
 * same way) if out of memory.
 */
struct evbuffer_file_segment *disk_io_segment_new(struct disk_io *io, int fd, uint64_t size,
						  unsigned lane, struct disk_file **file);

/* Fills a scrape's disk figures (from any thread). */
void disk_io_collect(struct disk_io *io, struct metrics_disk_snapshot *out);

#endif
