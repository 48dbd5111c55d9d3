/*
 * disk_io: the lanes of the task pool for storage, the work that runs there,
 * and the residency check the loops make before a send.
 *
 * Residency: mincore(2) on a read-only mapping of the file tells, page by
 * page, which pages are in the page cache and read in whole (it reports a
 * page only once it is up to date): one call, nothing read, nothing waited
 * for, and for any user who can read the file. cachestat(2) (Linux 6.5)
 * counts cached pages too, but it counts a page whose read is still under
 * way (a send would wait for it: a read that never returns on a hung mount,
 * whoever started it), and it is refused (EPERM) for a file the caller could
 * not write; it stands in only where a file cannot be mapped. Without either,
 * a one-byte preadv2(RWF_NOWAIT) at the range's last byte tells of that page
 * (EAGAIN when it is not up to date); a filesystem without RWF_NOWAIT (FUSE,
 * many network ones) answers EOPNOTSUPP, which is "may block": such windows
 * are always read ahead.
 *
 * Read-ahead: POSIX_FADV_WILLNEED first, which has the kernel ask for the
 * whole window at once (on FUSE, as many read requests in flight as the
 * mount allows) instead of one readahead step after another, then sendfile to
 * /dev/null, which waits until every page is in the page cache without
 * copying a byte to user space.
 */
#include "media/disk_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/log.h"
#include "media/containment.h"

/* cachestat(2), newer than bookworm's headers; the number is the same on every architecture. */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
struct cachestat_range {
	uint64_t off, len;
};
struct cachestat_counts {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/* The most bytes one sendfile to /dev/null is asked for (the kernel's own cap is ~2 GiB). */
#define READ_STEP ((size_t)1 << 30)
/*
 * POSIX_FADV_WILLNEED is given a window in steps of this: on FUSE one call
 * asks for at most 128 KiB, so a window asked for in steps is read by as many
 * requests in flight at once, not one after another.
 */
#define WILLNEED_STEP ((uint64_t)128 * 1024)
/* Pages mincore is asked about at once (its answer is a byte each, on the stack). */
#define MINCORE_BATCH 512

/* What a segment's cleanup needs to let its file go in its lane (libevent gives neither). */
struct closer {
	struct disk_io *io; /* NULL: no pool, closed at once (unit tests) */
	unsigned lane;
	int fd;
	void *map;
	uint64_t size;
};

struct disk_io {
	struct task_pool *pool;
	int null_fd; /* /dev/null, where read-aheads send what they bring in */
	_Atomic uint64_t read_ahead_bytes, evicted_sends, refused, read_errors;
	unsigned lanes;
};

struct disk_io *disk_io_new(const struct disk_io_limits *limits, size_t root_count, char *error,
			    size_t error_size)
{
	if (DISK_LANES(root_count) > TASK_POOL_LANES_MAX) {
		snprintf(error, error_size, "disk pool: %zu media roots: too many lanes", root_count);
		return NULL;
	}
	struct disk_io *io = calloc(1, sizeof(*io));
	if (io == NULL) {
		snprintf(error, error_size, "disk pool: out of memory");
		return NULL;
	}
	io->lanes = DISK_LANES((unsigned)root_count);
	io->null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (io->null_fd < 0) {
		snprintf(error, error_size, "disk pool: /dev/null: %s", strerror(errno));
		free(io);
		return NULL;
	}
	struct task_pool_limits pool = {
		.threads = limits->threads,
		.lane_threads = limits->root_threads < limits->threads ? limits->root_threads
								       : limits->threads,
		.queue_max = limits->queue,
		.lanes = io->lanes,
	};
	io->pool = task_pool_new(&pool, error, error_size);
	if (io->pool == NULL) {
		close(io->null_fd);
		free(io);
		return NULL;
	}
	return io;
}

unsigned disk_io_quiesce(struct disk_io *io, unsigned wait_ms)
{
	return io != NULL ? task_pool_quiesce(io->pool, wait_ms) : 0;
}

void disk_io_free(struct disk_io *io)
{
	if (io == NULL)
		return;
	unsigned abandoned = task_pool_quiesce(io->pool, 0);
	task_pool_free(io->pool);
	if (abandoned > 0)
		return; /* a thread may still return into a task that reaches io: left to the exit */
	close(io->null_fd);
	free(io);
}

unsigned disk_io_lane_of_path(const struct media_roots *roots, const char *path)
{
	int root = containment_find_root((const char *const *)roots->paths, roots->count, path);
	return root >= 0 ? (unsigned)root : DISK_LANE_OTHER((unsigned)roots->count);
}

/* --- Residency --- */

/* The pages [offset, offset + length) spans. */
static uint64_t pages_spanned(uint64_t offset, uint64_t length, uint64_t page)
{
	return (offset + length - 1) / page - offset / page + 1;
}

/* By cachestat; -1 when the kernel has none (or a filter refuses it). */
static int cachestat_residency(int fd, uint64_t offset, uint64_t length, enum disk_residency *out)
{
	static _Atomic bool unavailable;
	if (unavailable)
		return -1;
	struct cachestat_range range = {offset, length};
	struct cachestat_counts counts;
	if (syscall(__NR_cachestat, fd, &range, &counts, 0) < 0) {
		if (errno == ENOSYS || errno == EPERM) {
			unavailable = true;
			return -1;
		}
		*out = DISK_MAY_BLOCK; /* EBADF, EOPNOTSUPP (hugetlbfs): nothing to rely on */
		return 0;
	}
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	*out = counts.nr_cache >= pages_spanned(offset, length, page) ? DISK_CACHED
								       : DISK_NOT_CACHED;
	return 0;
}

/* By mincore on the mapping; -1 when it cannot answer. */
static int mincore_residency(const void *map, uint64_t offset, uint64_t length,
			     enum disk_residency *out)
{
	static _Atomic bool refused; /* a seccomp filter without mincore (EPERM): never again */
	if (refused)
		return -1;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t pages = pages_spanned(offset, length, page);
	const char *first = (const char *)map + offset / page * page;
	unsigned char vector[MINCORE_BATCH];
	for (uint64_t done = 0; done < pages; done += MINCORE_BATCH) {
		uint64_t batch = pages - done < MINCORE_BATCH ? pages - done : MINCORE_BATCH;
		if (mincore((void *)(first + done * page), (size_t)(batch * page), vector) < 0) {
			if (errno == EPERM || errno == ENOSYS)
				refused = true;
			return -1;
		}
		for (uint64_t i = 0; i < batch; i++) {
			if (!(vector[i] & 1)) {
				*out = DISK_NOT_CACHED;
				return 0;
			}
		}
	}
	*out = DISK_CACHED;
	return 0;
}

enum disk_residency disk_residency(const void *map, int fd, uint64_t offset, uint64_t length)
{
	enum disk_residency residency;
	if (length == 0)
		return DISK_CACHED;
	if (map != NULL && mincore_residency(map, offset, length, &residency) == 0)
		return residency;
	if (cachestat_residency(fd, offset, length, &residency) == 0)
		return residency;
	char byte;
	struct iovec one = {.iov_base = &byte, .iov_len = 1};
	if (preadv2(fd, &one, 1, (off_t)(offset + length - 1), RWF_NOWAIT) >= 0)
		return DISK_CACHED;
	return errno == EAGAIN ? DISK_NOT_CACHED : DISK_MAY_BLOCK;
}

void *disk_io_map(int fd, uint64_t size)
{
	if (size == 0 || size > SIZE_MAX)
		return NULL;
	void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
	return map != MAP_FAILED ? map : NULL;
}

/* --- Work --- */

static void on_task_run(struct task *task)
{
	struct disk_work *work = (struct disk_work *)task;
	work->run(work);
}

static void on_task_done(struct task *task)
{
	struct disk_work *work = (struct disk_work *)task;
	work->skipped = task_pool_skipped(task);
	event_active(work->delivery, EV_TIMEOUT, 1);
}

int disk_io_submit(struct disk_io *io, struct disk_work *work, disk_work_fn run, unsigned lane,
		   enum task_kind kind)
{
	work->io = io;
	work->run = run;
	work->skipped = false;
	work->task = (struct task){
		.run = on_task_run,
		.done = on_task_done,
		.lane = lane < io->lanes ? lane : DISK_LANE_OTHER(io->lanes - 2),
		.kind = kind,
	};
	return task_pool_submit(io->pool, &work->task);
}

int disk_io_cancel(struct disk_io *io, struct disk_work *work)
{
	return task_pool_cancel(io->pool, &work->task);
}

void disk_open_run(struct disk_work *work)
{
	struct disk_open *open = (struct disk_open *)work;
	open->status = media_open(open->roots, open->path, &open->file, &open->error_number);
	if (open->status != MEDIA_OK)
		return;
	/* Read in order from start to end: the kernel reads further ahead for such files. */
	posix_fadvise(open->file.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	open->file.map = disk_io_map(open->file.fd, open->file.size);
}

void disk_check_run(struct disk_work *work)
{
	struct disk_check *check = (struct disk_check *)work;
	check->fd_ok = check->fd >= 0 && fstat(check->fd, &check->fd_info) == 0;
	check->path_ok = check->path != NULL && stat(check->path, &check->path_info) == 0;
}

void disk_read_run(struct disk_work *work)
{
	struct disk_read *read = (struct disk_read *)work;
	struct disk_io *io = work->io;
	off_t position = (off_t)read->offset;
	uint64_t left = read->length;
	read->read = 0;
	read->error_number = 0;
	for (uint64_t step = 0; step < read->length; step += WILLNEED_STEP) {
		uint64_t length = read->length - step < WILLNEED_STEP ? read->length - step : WILLNEED_STEP;
		posix_fadvise(read->fd, (off_t)(read->offset + step), (off_t)length,
			      POSIX_FADV_WILLNEED);
	}
	while (left > 0) {
		ssize_t moved = sendfile(io->null_fd, read->fd, &position,
					 left < READ_STEP ? (size_t)left : READ_STEP);
		if (moved < 0 && errno == EINTR)
			continue;
		if (moved < 0) {
			read->error_number = errno;
			atomic_fetch_add_explicit(&io->read_errors, 1, memory_order_relaxed);
			break;
		}
		if (moved == 0)
			break; /* the file is shorter than it was: the send finds out */
		read->read += (uint64_t)moved;
		left -= (uint64_t)moved;
	}
	atomic_fetch_add_explicit(&io->read_ahead_bytes, read->read, memory_order_relaxed);
}

void disk_io_count_evicted(struct disk_io *io)
{
	atomic_fetch_add_explicit(&io->evicted_sends, 1, memory_order_relaxed);
}

void disk_io_count_refused(struct disk_io *io)
{
	atomic_fetch_add_explicit(&io->refused, 1, memory_order_relaxed);
}

/* --- Closing --- */

struct close_work {
	struct task task;
	int fd;
	void *map;
	uint64_t size;
};

static void let_go(int fd, void *map, uint64_t size)
{
	if (map != NULL)
		munmap(map, (size_t)size);
	close(fd);
}

static void close_run(struct task *task)
{
	struct close_work *work = (struct close_work *)task;
	let_go(work->fd, work->map, work->size);
}

static void close_done(struct task *task)
{
	free(task);
}

void disk_io_close(struct disk_io *io, int fd, void *map, uint64_t size, unsigned lane)
{
	if (fd < 0)
		return;
	if (io == NULL) {
		let_go(fd, map, size);
		return;
	}
	struct close_work *work = malloc(sizeof(*work));
	if (work == NULL) {
		let_go(fd, map, size); /* out of memory: this thread waits rather than leak them */
		return;
	}
	*work = (struct close_work){
		.task = {.run = close_run, .done = close_done, .lane = lane, .kind = TASK_CONTINUE},
		.fd = fd,
		.map = map,
		.size = size,
	};
	if (task_pool_submit(io->pool, &work->task) < 0)
		free(work); /* stopping: the ending process closes it */
}

static void on_segment_freed(struct evbuffer_file_segment const *segment, int flags, void *arg)
{
	struct closer *closer = arg;
	(void)segment;
	(void)flags;
	disk_io_close(closer->io, closer->fd, closer->map, closer->size, closer->lane);
	free(closer);
}

struct evbuffer_file_segment *disk_io_segment_new(struct disk_io *io, int fd, uint64_t size,
						  void *map, unsigned lane)
{
	struct closer *closer = malloc(sizeof(*closer));
	/* Without EVBUF_FS_CLOSE_ON_FREE: the descriptor is closed off the loop, by the cleanup. */
	struct evbuffer_file_segment *segment =
		closer != NULL ? evbuffer_file_segment_new(fd, 0, (ev_off_t)size, 0) : NULL;
	if (segment == NULL) {
		free(closer);
		disk_io_close(io, fd, map, size, lane);
		return NULL;
	}
	if (io != NULL && lane >= io->lanes)
		lane = DISK_LANE_OTHER(io->lanes - 2);
	*closer = (struct closer){io, lane, fd, map, size};
	evbuffer_file_segment_add_cleanup_cb(segment, on_segment_freed, closer);
	return segment;
}

void disk_io_collect(struct disk_io *io, struct metrics_disk_snapshot *out)
{
	struct task_pool_stats pool;
	task_pool_collect(io->pool, &pool);
	struct task_pool_limits limits = task_pool_limits_of(io->pool);
	out->have = 1;
	out->threads = limits.threads;
	out->threads_per_root = limits.lane_threads;
	out->queue_limit = limits.queue_max;
	out->lanes = pool.lanes < METRICS_DISK_LANES_MAX ? pool.lanes : METRICS_DISK_LANES_MAX;
	for (unsigned i = 0; i < out->lanes; i++)
		out->lane[i] = (struct metrics_disk_lane){pool.lane[i].queued, pool.lane[i].waiting,
							  pool.lane[i].running, pool.lane[i].finished};
	out->wait = pool.wait;
	out->read_ahead_bytes = atomic_load_explicit(&io->read_ahead_bytes, memory_order_relaxed);
	out->evicted_sends = atomic_load_explicit(&io->evicted_sends, memory_order_relaxed);
	out->refused = atomic_load_explicit(&io->refused, memory_order_relaxed);
	out->read_errors = atomic_load_explicit(&io->read_errors, memory_order_relaxed);
}
