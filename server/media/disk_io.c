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
 * mount allows) instead of one readahead step after another, then a one-byte
 * sendfile to /dev/null of the window's last page, which waits for it without
 * copying a byte to user space, and the residency check: the pages asked for
 * before it are mostly in by then. Only a window not whole then (or a file
 * the check cannot see into) is walked page by page by sendfile to /dev/null,
 * which waits until every page is in.
 *
 * A copy (disk_read.into): the range read into memory with pread, for a
 * window the page cache could not keep until its send (disk_gate.c).
 */
#include "media/disk_io.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/clock.h"
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
 * POSIX_FADV_WILLNEED is given a window in steps of this: one call asks for at
 * most the file's read-ahead (on FUSE 128 KiB, twice that once the file is
 * POSIX_FADV_SEQUENTIAL), so a window asked for in steps is read by as many
 * requests in flight at once, not one after another.
 */
#define WILLNEED_STEP ((uint64_t)256 * 1024)
/* Pages mincore is asked about at once (its answer is a byte each, on the stack). */
#define MINCORE_BATCH 512

/*
 * A file (disk_io.h): what the residency checks read, what a segment's
 * cleanup needs to let it go (libevent gives neither), and then an item of its
 * lane's closing.
 */
struct disk_file {
	struct disk_io *io; /* NULL: no pool, closed at once (unit tests) */
	unsigned lane;
	int fd;
	uint64_t size;
	_Atomic(void *) map;	  /* made at the first check that needs it; NULL: not yet */
	_Atomic bool unmappable;  /* mmap failed (FUSE direct_io ...): no mapping is tried again */
	struct disk_file *next;	  /* in its lane's closing */
};

/*
 * A lane's files to let go, closed by one task at a time: a busy cache that
 * evicts a file a request costs one pool hand-off per batch, not per file,
 * and a close that hangs (FUSE's FLUSH, a dead NFS server) holds only its own
 * lane's closes. The task is woken for DISK_CLOSE_BATCH files, or for fewer
 * once the oldest has waited DISK_CLOSE_WAIT_MS (looked at when the next
 * comes, and by disk_io_flush_closes): a wake-up per file cost a busy cache
 * two futex calls a request and a pool thread's switch.
 */
struct closing {
	struct task task; /* first: the pool's */
	struct disk_io *io;
	pthread_mutex_t lock;
	struct disk_file *first;      /* guarded by lock */
	unsigned waiting;	      /* guarded by lock: files on first */
	unsigned long long since_ms;  /* guarded by lock: when the oldest of them came */
	bool scheduled;		      /* guarded by lock: the task is queued or running */
};

struct disk_io {
	struct task_pool *pool;
	struct closing closing[TASK_POOL_LANES_MAX];
	int null_fd; /* /dev/null, where read-aheads send what they bring in */
	_Atomic uint64_t read_ahead_bytes, evicted_sends, copied_sends, refused, read_errors;
	unsigned lanes;
};

static void let_go(struct disk_file *file);
static void closing_run(struct task *task);
static void closing_done(struct task *task);

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
	for (unsigned i = 0; i < io->lanes; i++) {
		struct closing *closing = &io->closing[i];
		closing->task = (struct task){.run = closing_run, .done = closing_done, .lane = i,
					      .kind = TASK_CONTINUE};
		closing->io = io;
		pthread_mutex_init(&closing->lock, NULL);
	}
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
	for (unsigned i = 0; i < io->lanes; i++) {
		struct disk_file *left = io->closing[i].first; /* queued after the stop */
		while (left != NULL) {
			struct disk_file *next = left->next;
			let_go(left);
			left = next;
		}
		pthread_mutex_destroy(&io->closing[i].lock);
	}
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

/* The file's mapping, made now if it has none yet; NULL if it cannot be mapped. */
static const void *mapping_of(struct disk_file *file)
{
	void *map = atomic_load_explicit(&file->map, memory_order_acquire);
	if (map != NULL || atomic_load_explicit(&file->unmappable, memory_order_relaxed))
		return map;
	if (file->size == 0 || file->size > SIZE_MAX)
		return NULL;
	/* A memory operation: the file system is not asked for anything (FUSE, NFS alike). */
	void *made = mmap(NULL, (size_t)file->size, PROT_READ, MAP_SHARED, file->fd, 0);
	if (made == MAP_FAILED) {
		atomic_store_explicit(&file->unmappable, true, memory_order_relaxed);
		return NULL;
	}
	void *none = NULL;
	if (!atomic_compare_exchange_strong(&file->map, &none, made)) {
		munmap(made, (size_t)file->size); /* another worker made one first */
		return none;
	}
	return made;
}

enum disk_residency disk_residency(struct disk_file *file, uint64_t offset, uint64_t length)
{
	enum disk_residency residency;
	if (length == 0)
		return DISK_CACHED;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	char byte;
	struct iovec one = {.iov_base = &byte, .iov_len = 1};
	if (offset / page == (offset + length - 1) / page) {
		/* One page: a read that may not wait answers for it exactly. */
		if (preadv2(file->fd, &one, 1, (off_t)offset, RWF_NOWAIT) >= 0)
			return DISK_CACHED;
		if (errno == EAGAIN)
			return DISK_NOT_CACHED;
	}
	const void *map = mapping_of(file);
	if (map != NULL && mincore_residency(map, offset, length, &residency) == 0)
		return residency;
	if (cachestat_residency(file->fd, offset, length, &residency) == 0)
		return residency;
	if (preadv2(file->fd, &one, 1, (off_t)(offset + length - 1), RWF_NOWAIT) >= 0)
		return DISK_CACHED;
	return errno == EAGAIN ? DISK_NOT_CACHED : DISK_MAY_BLOCK;
}

int disk_file_fd(const struct disk_file *file)
{
	return file->fd;
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
}

bool disk_open_now(struct disk_open *open)
{
	open->work.skipped = false;
	return media_open_cached(open->roots, open->path, &open->file, &open->status,
				 &open->error_number);
}

void disk_check_run(struct disk_work *work)
{
	struct disk_check *check = (struct disk_check *)work;
	check->fd_ok = check->fd >= 0 && fstat(check->fd, &check->fd_info) == 0;
	check->path_ok = check->path != NULL && stat(check->path, &check->path_info) == 0;
}

/*
 * Waits for the window's last page, the one asked for last, then looks at the
 * whole window without waiting: true when every page of it came in. One page
 * walked instead of every one, and the others are touched once, by their
 * send, as nginx's one sendfile touches them: a page touched twice goes to
 * the kernel's active list, and tracks streamed once would then push the hot
 * ones out of memory.
 */
static bool came_in_whole(struct disk_io *io, const struct disk_read *read)
{
	if (read->file == NULL || read->length == 0)
		return false;
	off_t last = (off_t)(read->offset + read->length - 1);
	ssize_t moved;
	do
		moved = sendfile(io->null_fd, read->fd, &last, 1);
	while (moved < 0 && errno == EINTR);
	return moved == 1 && disk_residency(read->file, read->offset, read->length) == DISK_CACHED;
}

/*
 * What is left of the read, a step at a time: into memory (disk_read.into),
 * or into the page cache by a sendfile to /dev/null, which waits for each page.
 */
static void read_rest(struct disk_io *io, struct disk_read *read)
{
	while (read->read < read->length) {
		uint64_t left = read->length - read->read;
		off_t position = (off_t)(read->offset + read->read);
		ssize_t moved = read->into != NULL
					? pread(read->fd, read->into + read->read, (size_t)left, position)
					: sendfile(io->null_fd, read->fd, &position,
						   left < READ_STEP ? (size_t)left : READ_STEP);
		if (moved < 0 && errno == EINTR)
			continue;
		if (moved < 0) {
			read->error_number = errno;
			atomic_fetch_add_explicit(&io->read_errors, 1, memory_order_relaxed);
			return;
		}
		if (moved == 0)
			return; /* the file is shorter than it was: the send finds out */
		read->read += (uint64_t)moved;
	}
}

void disk_read_run(struct disk_work *work)
{
	struct disk_read *read = (struct disk_read *)work;
	struct disk_io *io = work->io;
	read->read = 0;
	read->error_number = 0;
	if (read->into != NULL) {
		read_rest(io, read); /* a copy: what the page cache could not keep until its send */
		return;
	}
	/* Read in order from start to end: the kernel reads further ahead for such files. Given
	 * here, where the reading is, and not at the open: a file whose bytes are all cached is
	 * never read, and its open on the loop costs a syscall less. */
	if (read->first)
		posix_fadvise(read->fd, 0, 0, POSIX_FADV_SEQUENTIAL); /* the file's, for every stream */
	for (uint64_t step = 0; step < read->length; step += WILLNEED_STEP) {
		uint64_t length = read->length - step < WILLNEED_STEP ? read->length - step : WILLNEED_STEP;
		posix_fadvise(read->fd, (off_t)(read->offset + step), (off_t)length,
			      POSIX_FADV_WILLNEED);
	}
	if (came_in_whole(io, read))
		read->read = read->length;
	read_rest(io, read);
	atomic_fetch_add_explicit(&io->read_ahead_bytes, read->read, memory_order_relaxed);
}

void disk_io_count_evicted(struct disk_io *io)
{
	atomic_fetch_add_explicit(&io->evicted_sends, 1, memory_order_relaxed);
}

void disk_io_count_copied(struct disk_io *io)
{
	atomic_fetch_add_explicit(&io->copied_sends, 1, memory_order_relaxed);
}

void disk_io_count_refused(struct disk_io *io)
{
	atomic_fetch_add_explicit(&io->refused, 1, memory_order_relaxed);
}

/* --- Closing --- */

static void let_go(struct disk_file *file)
{
	void *map = atomic_load(&file->map);
	if (map != NULL)
		munmap(map, (size_t)file->size);
	close(file->fd);
	free(file);
}

/* On a pool thread: the lane's files, a batch at a time, until none is left. */
static void closing_run(struct task *task)
{
	struct closing *closing = (struct closing *)task;
	for (;;) {
		pthread_mutex_lock(&closing->lock);
		struct disk_file *batch = closing->first;
		closing->first = NULL;
		closing->waiting = 0;
		if (batch == NULL)
			closing->scheduled = false; /* a file queued from now on schedules the task again */
		pthread_mutex_unlock(&closing->lock);
		if (batch == NULL)
			return;
		while (batch != NULL) {
			struct disk_file *next = batch->next;
			let_go(batch);
			batch = next;
		}
	}
}

static void closing_done(struct task *task)
{
	(void)task; /* skipped at a stop: what it holds is left to the ending process */
}

/*
 * Under closing's lock: whether the task is to be woken now (and it is then
 * marked so): files wait, it is not woken yet, and they are a batch, the
 * oldest is old, or all are due (a flush).
 */
static bool wake_closing(struct closing *closing, unsigned long long now_ms, bool all_due)
{
	if (closing->scheduled || closing->first == NULL ||
	    (!all_due && closing->waiting < DISK_CLOSE_BATCH &&
	     now_ms - closing->since_ms < DISK_CLOSE_WAIT_MS))
		return false;
	closing->scheduled = true;
	return true;
}

static void submit_closing(struct disk_io *io, struct closing *closing)
{
	if (task_pool_submit(io->pool, &closing->task) < 0) {
		/* Stopping: the files are left to the ending process. */
	}
}

/* Queues file (taken over) on its lane's closing; the task is woken for a batch (above). */
static void close_later(struct disk_io *io, struct disk_file *file)
{
	struct closing *closing = &io->closing[file->lane];
	unsigned long long now_ms = clock_now_ms();
	pthread_mutex_lock(&closing->lock);
	if (closing->first == NULL)
		closing->since_ms = now_ms;
	file->next = closing->first;
	closing->first = file;
	closing->waiting++;
	bool wake = wake_closing(closing, now_ms, false);
	pthread_mutex_unlock(&closing->lock);
	if (wake)
		submit_closing(io, closing);
}

void disk_io_flush_closes(struct disk_io *io)
{
	if (io == NULL)
		return;
	for (unsigned i = 0; i < io->lanes; i++) {
		struct closing *closing = &io->closing[i];
		pthread_mutex_lock(&closing->lock);
		bool wake = wake_closing(closing, 0, true);
		pthread_mutex_unlock(&closing->lock);
		if (wake)
			submit_closing(io, closing);
	}
}

/* A file of fd (size bytes, in lane), not mapped yet; NULL if out of memory. */
static struct disk_file *file_new(struct disk_io *io, int fd, uint64_t size, unsigned lane)
{
	struct disk_file *file = calloc(1, sizeof(*file));
	if (file == NULL)
		return NULL;
	if (io != NULL && lane >= io->lanes)
		lane = DISK_LANE_OTHER(io->lanes - 2);
	file->io = io;
	file->lane = lane;
	file->fd = fd;
	file->size = size;
	return file;
}

void disk_io_close(struct disk_io *io, int fd, unsigned lane)
{
	if (fd < 0)
		return;
	struct disk_file *file = file_new(io, fd, 0, lane);
	if (file == NULL) {
		close(fd); /* out of memory: this thread waits rather than leak it */
		return;
	}
	if (io == NULL)
		let_go(file);
	else
		close_later(io, file);
}

static void on_segment_freed(struct evbuffer_file_segment const *segment, int flags, void *arg)
{
	struct disk_file *file = arg;
	(void)segment;
	(void)flags;
	if (file->io == NULL)
		let_go(file);
	else
		close_later(file->io, file);
}

struct evbuffer_file_segment *disk_io_segment_new(struct disk_io *io, int fd, uint64_t size,
						  unsigned lane, struct disk_file **file)
{
	*file = file_new(io, fd, size, lane);
	/* Without EVBUF_FS_CLOSE_ON_FREE: the descriptor is closed off the loop, by the cleanup. */
	struct evbuffer_file_segment *segment =
		*file != NULL ? evbuffer_file_segment_new(fd, 0, (ev_off_t)size, 0) : NULL;
	if (segment == NULL) {
		free(*file);
		*file = NULL;
		disk_io_close(io, fd, lane);
		return NULL;
	}
	evbuffer_file_segment_add_cleanup_cb(segment, on_segment_freed, *file);
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
	out->copied_sends = atomic_load_explicit(&io->copied_sends, memory_order_relaxed);
	out->refused = atomic_load_explicit(&io->refused, memory_order_relaxed);
	out->read_errors = atomic_load_explicit(&io->read_errors, memory_order_relaxed);
}
