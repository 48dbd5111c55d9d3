/*
 * slowfs: a read-only FUSE passthrough that makes storage slow or hung, for tests and
 * benchmarks of what a server does when the disk is not in memory (issue 26).
 *
 * It mounts SOURCE (a directory) at MOUNTPOINT, read-only, open to every user (nginx's
 * workers run as nobody), and answers each read request of the kernel after a set wait
 * (--read-delay-us), as a busy disk or a NAS does. Reads of paths matching a pattern can be
 * hung: they are not answered at all until released, as a hung NFS server's are, while the
 * reads of every other file go on being answered. Lookups, getattr, open and flush (what
 * open(2), stat(2), fstat(2) and close(2) wait for on FUSE) are answered at once, unless
 * --meta-delay-us or a meta pattern says otherwise.
 *
 * Nothing waits on a thread: a delayed or hung request is queued with its due time, and a
 * few reply threads answer each one when it is due (spliced from SOURCE). So hundreds of
 * reads can be in flight (200 readers at 10 ms a read) on a handful of threads, and the
 * filesystem is not what limits a benchmark: the kernel's max_background is (raised here
 * to --max-background at INIT, and written again under /sys/fs/fuse/connections/<device>/
 * after mounting, fusectl mounted there first if need be). Its CPU: about 1 ms a MB served
 * on the 2-CPU VM it was written on, mostly the kernel's (copying into the page cache,
 * switching threads once a request).
 *
 * Each path is a file of its own, with its own inode number and cached pages, also where
 * SOURCE has hard links: a benchmark can link a few bodies under thousands of names, and each
 * name is cold once. Without --keep-cache each open drops the file's cached pages (what makes
 * a track cold again); the kernel's read requests are up to --max-read-kb (max_pages at
 * INIT), its read-ahead is the mount's bdi read_ahead_kb (--read-ahead-kb sets it), and reads
 * are asynchronous (FUSE_ASYNC_READ: read-ahead goes out in background requests, up to
 * max_background at once).
 *
 * Control (--control SOCKET, a UNIX stream socket, one command a line, one reply line each,
 * "ok ..." or "error ..."):
 *   hang-read GLOB     reads of paths matching GLOB (fnmatch, no flags: '*' crosses '/',
 *                      paths relative to SOURCE, no leading '/') wait until released
 *   hang-meta GLOB     the same for lookup, getattr, open and flush of matching paths
 *   release            forget every pattern and answer every hung request now
 *   read-delay US      the wait before each read is answered, from now on
 *   meta-delay US      the same for lookup, getattr, open and flush
 *   stats              "ok reads=... read_bytes=... read_size_max=... in_flight_max=...
 *                      hung=... hung_total=... released=... lookups=... getattrs=...
 *                      opens=... flushes=... answered=... late_us_total=... late_us_max=..."
 *                      (requests answered, each kind and all delayed ones; how late after
 *                      their due time, summed and at most: above a few hundred us on
 *                      average the machine or this filesystem, not the wait asked for, set
 *                      the pace)
 * From a shell: `slowfs ctl SOCKET COMMAND [ARG]` sends one command and prints the reply.
 *
 * Output (stdout): "slowfs: ready dev=0:N max_background=... congestion_threshold=...
 * read_ahead_kb=... max_read_kb=..." once the mount answers and its limits are set;
 * "slowfs: exit reads=... read_bytes=..." (the stats) when it ends. It ends on SIGTERM or
 * SIGINT (hung requests are answered first, then the mount is detached) or when the mount is
 * unmounted and no file of it is open.
 *
 * Usage: slowfs [options] SOURCE MOUNTPOINT     (root: allow_other, fusectl, sysfs)
 *        slowfs ctl SOCKET COMMAND [ARG]
 * Options: --read-delay-us N, --meta-delay-us N, --hang-read GLOB, --hang-meta GLOB (each
 * repeatable), --control PATH, --keep-cache, --attr-timeout SECONDS (1), --max-background N
 * (1024), --read-ahead-kb N (the kernel's unless given), --max-read-kb N (1024),
 * --threads N (FUSE loop threads, 16), --repliers N (reply threads, 4), --realtime (every
 * thread SCHED_RR, priority 1: a busy machine otherwise answers its requests late: on the
 * 2-CPU VM at a load average of 15-38, 5-27 ms late on average, 0.16 ms with it; the threads
 * only ever block, never spin, and the kernel keeps 5% of each second for others), --debug.
 *
 * Build: make build/tools/slowfs (cc ... $(pkg-config --cflags --libs fuse3) -pthread)
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION FUSE_MAKE_VERSION(3, 14)
#include <fuse_lowlevel.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_PATTERNS 32
#define PATTERN_MAX 1024
#define NODE_BUCKETS 16384
#define CONTROL_LINE_MAX 2048
#define CONTROL_TIMEOUT_S 5
#define DEFAULT_MAX_BACKGROUND 1024
#define MAX_BACKGROUND_LIMIT 65535 /* the INIT reply's field is 16 bits */
#define DEFAULT_MAX_READ_KB 1024
#define MAX_READ_KB_LIMIT 1024 /* libfuse's buffer: 256 pages */
#define DEFAULT_LOOP_THREADS 16
#define DEFAULT_REPLIERS 4
#define MAX_THREADS 4096
#define FUSECTL_DIR "/sys/fs/fuse/connections"

/* -- options and counters ------------------------------------------------------------- */

static struct {
	const char *source;
	const char *mountpoint;
	const char *control;
	int keep_cache;
	double attr_timeout;
	unsigned max_background;
	int read_ahead_kb; /* -1: the kernel's */
	unsigned max_read_kb;
	unsigned loop_threads;
	unsigned repliers;
	int realtime;
	int debug;
} opt = {
	.attr_timeout = 1.0,
	.max_background = DEFAULT_MAX_BACKGROUND,
	.read_ahead_kb = -1,
	.max_read_kb = DEFAULT_MAX_READ_KB,
	.loop_threads = DEFAULT_LOOP_THREADS,
	.repliers = DEFAULT_REPLIERS,
};

static struct {
	atomic_ullong reads, read_bytes, read_size_max, in_flight_max;
	atomic_ullong hung_total, released, lookups, getattrs, opens, flushes;
	/* How late requests were answered after their due time (a busy machine, too few
	 * repliers): what says whether the filesystem itself held a benchmark back. */
	atomic_ullong answered, late_ns_total, late_ns_max;
} stats;

static int source_fd = -1;
static struct fuse_session *session;

static void atomic_max(atomic_ullong *slot, unsigned long long value)
{
	unsigned long long seen = atomic_load(slot);
	while (value > seen && !atomic_compare_exchange_weak(slot, &seen, value))
		;
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* -- nodes: the FUSE inode number of a path ------------------------------------------- */

/* One per path the kernel has looked up, kept until exit (a test's tree is small); its
 * address is its inode number. Owned by the table. */
struct node {
	char *path; /* relative to SOURCE; "." for the root */
	struct node *next;
};

static struct node root_node = {.path = "."};
static struct node *node_table[NODE_BUCKETS];
static pthread_mutex_t node_lock = PTHREAD_MUTEX_INITIALIZER;

static struct node *node_of(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? &root_node : (struct node *)(uintptr_t)ino;
}

static fuse_ino_t ino_of(struct node *n)
{
	return n == &root_node ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

static unsigned path_hash(const char *s)
{
	unsigned h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % NODE_BUCKETS;
}

/* The node of path (made if new), or NULL when out of memory. */
static struct node *node_get(const char *path)
{
	if (strcmp(path, ".") == 0)
		return &root_node;
	unsigned b = path_hash(path);
	pthread_mutex_lock(&node_lock);
	struct node *n = node_table[b];
	while (n && strcmp(n->path, path) != 0)
		n = n->next;
	if (!n && (n = calloc(1, sizeof *n)) && (n->path = strdup(path))) {
		n->next = node_table[b];
		node_table[b] = n;
	} else if (n && !n->path) {
		free(n);
		n = NULL;
	}
	pthread_mutex_unlock(&node_lock);
	return n;
}

/* parent's path joined with name into out (PATH_MAX); -1 if too long. */
static int child_path(const struct node *parent, const char *name, char *out)
{
	int len = parent == &root_node ? snprintf(out, PATH_MAX, "%s", name)
				       : snprintf(out, PATH_MAX, "%s/%s", parent->path, name);
	return len < 0 || len >= PATH_MAX ? -1 : 0;
}

/* -- deferred requests ---------------------------------------------------------------- */

enum kind { K_READ, K_LOOKUP, K_GETATTR, K_OPEN, K_FLUSH };

/* A request answered later: due in the heap, or hung in the list until released. Owned by
 * whoever holds it (heap, list, then the replier that answers it and frees it). */
struct pending {
	fuse_req_t req;
	enum kind kind;
	uint64_t due_ns;
	char path[PATH_MAX]; /* what the hang patterns are matched against */
	struct node *node;
	int has_fi;
	struct fuse_file_info fi;
	size_t size;
	off_t off;
	struct pending *prev, *next; /* the hung list */
};

static struct {
	pthread_mutex_t lock;
	/* One replier at a time waits for the earliest due time (the timer, on timer_wake); the
	 * others wait on idle_wake until there is work: a due time wakes one thread, not all. */
	pthread_cond_t timer_wake, idle_wake;
	int timer_busy;
	struct pending **heap; /* min-heap by due_ns */
	size_t len, cap;
	struct pending hung;   /* list head */
	size_t hung_count;
	char read_patterns[MAX_PATTERNS][PATTERN_MAX];
	size_t n_read_patterns;
	char meta_patterns[MAX_PATTERNS][PATTERN_MAX];
	size_t n_meta_patterns;
	uint64_t read_delay_ns, meta_delay_ns;
	int stopping; /* replies everything now, then the repliers end */
} q = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.hung = {.prev = &q.hung, .next = &q.hung},
};

static void heap_swap(size_t a, size_t b)
{
	struct pending *t = q.heap[a];
	q.heap[a] = q.heap[b];
	q.heap[b] = t;
}

/* Under q.lock. -1 when out of memory. */
static int heap_push(struct pending *p)
{
	if (q.len == q.cap) {
		size_t cap = q.cap ? q.cap * 2 : 1024;
		struct pending **grown = realloc(q.heap, cap * sizeof *grown);
		if (!grown)
			return -1;
		q.heap = grown;
		q.cap = cap;
	}
	size_t i = q.len++;
	q.heap[i] = p;
	while (i > 0 && q.heap[(i - 1) / 2]->due_ns > q.heap[i]->due_ns) {
		heap_swap(i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	if (i == 0) /* a new earliest due time */
		pthread_cond_signal(q.timer_busy ? &q.timer_wake : &q.idle_wake);
	return 0;
}

static struct pending *heap_pop(void)
{
	struct pending *top = q.heap[0];
	q.heap[0] = q.heap[--q.len];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < q.len && q.heap[l]->due_ns < q.heap[m]->due_ns)
			m = l;
		if (r < q.len && q.heap[r]->due_ns < q.heap[m]->due_ns)
			m = r;
		if (m == i)
			break;
		heap_swap(i, m);
		i = m;
	}
	return top;
}

static int matches(char patterns[][PATTERN_MAX], size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (fnmatch(patterns[i], path, 0) == 0)
			return 1;
	return 0;
}

static void answer(struct pending *p);

/* Queues p: hung if its path matches a pattern of its kind, else due after its kind's
 * delay. Answers at once (ENOMEM) if it cannot be queued. */
static void defer(struct pending *p)
{
	int is_read = p->kind == K_READ;
	pthread_mutex_lock(&q.lock);
	int hang = !q.stopping &&
		   (is_read ? matches(q.read_patterns, q.n_read_patterns, p->path)
			    : matches(q.meta_patterns, q.n_meta_patterns, p->path));
	int queued = 0;
	if (hang) {
		p->next = &q.hung;
		p->prev = q.hung.prev;
		q.hung.prev->next = p;
		q.hung.prev = p;
		q.hung_count++;
		atomic_fetch_add(&stats.hung_total, 1);
		queued = 1;
	} else {
		p->due_ns = now_ns() + (is_read ? q.read_delay_ns : q.meta_delay_ns);
		queued = heap_push(p) == 0;
	}
	if (queued)
		atomic_max(&stats.in_flight_max, q.len + q.hung_count);
	pthread_mutex_unlock(&q.lock);
	if (!queued) {
		fuse_reply_err(p->req, ENOMEM);
		free(p);
	}
}

/* Under q.lock: every hung request due now. */
static void release_all(void)
{
	uint64_t now = now_ns();
	while (q.hung.next != &q.hung) {
		struct pending *p = q.hung.next;
		q.hung.next = p->next;
		p->next->prev = &q.hung;
		q.hung_count--;
		p->due_ns = now;
		atomic_fetch_add(&stats.released, 1);
		if (heap_push(p) != 0) { /* out of memory: answered, not lost */
			pthread_mutex_unlock(&q.lock);
			fuse_reply_err(p->req, EIO);
			free(p);
			pthread_mutex_lock(&q.lock);
		}
	}
	q.n_read_patterns = q.n_meta_patterns = 0;
	pthread_cond_broadcast(&q.timer_wake);
	pthread_cond_broadcast(&q.idle_wake);
}

static struct pending *pending_new(fuse_req_t req, enum kind kind, struct node *node,
				   struct fuse_file_info *fi)
{
	struct pending *p = calloc(1, sizeof *p);
	if (!p) {
		fuse_reply_err(req, ENOMEM);
		return NULL;
	}
	p->req = req;
	p->kind = kind;
	p->node = node;
	if (fi) {
		p->fi = *fi;
		p->has_fi = 1;
	}
	snprintf(p->path, sizeof p->path, "%s", node->path);
	return p;
}

/* -- the answers ---------------------------------------------------------------------- */

/* The bytes go from SOURCE to the kernel by splice(2) (FUSE_CAP_SPLICE_WRITE, when the kernel
 * offers it; else libfuse reads them into a buffer): no copy through this process, a fifth
 * less CPU a read. A read at the end of the file is answered short, which the kernel takes
 * as the end of the file; the count served is worked out from the file's size. */
static void answer_read(struct pending *p)
{
	struct stat st;
	if (fstat((int)p->fi.fh, &st) != 0) {
		fuse_reply_err(p->req, errno);
		return;
	}
	size_t served = p->off >= st.st_size ? 0 : (size_t)(st.st_size - p->off);
	if (served > p->size)
		served = p->size;
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(p->size);
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = (int)p->fi.fh;
	buf.buf[0].pos = p->off;
	/* Counted before the answer: a reader it wakes may ask for the stats at once. */
	atomic_fetch_add(&stats.reads, 1);
	atomic_fetch_add(&stats.read_bytes, served);
	atomic_max(&stats.read_size_max, p->size);
	if (fuse_reply_data(p->req, &buf, FUSE_BUF_SPLICE_MOVE) != 0) {
		/* the reader is gone (interrupted, connection aborted): nothing was served */
		atomic_fetch_sub(&stats.reads, 1);
		atomic_fetch_sub(&stats.read_bytes, served);
	}
}

static void answer_lookup(struct pending *p)
{
	struct fuse_entry_param e = {.attr_timeout = opt.attr_timeout,
				     .entry_timeout = opt.attr_timeout};
	if (fstatat(source_fd, p->path, &e.attr, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT) { /* a negative entry, cached as long as a positive one */
			e.ino = 0;
			fuse_reply_entry(p->req, &e);
		} else {
			fuse_reply_err(p->req, errno);
		}
		return;
	}
	struct node *n = node_get(p->path);
	if (!n) {
		fuse_reply_err(p->req, ENOMEM);
		return;
	}
	e.ino = ino_of(n);
	e.attr.st_ino = e.ino; /* a file of its own, also for a hard link (see the header) */
	fuse_reply_entry(p->req, &e);
}

static void answer_getattr(struct pending *p)
{
	struct stat st;
	int rc = p->has_fi ? fstat((int)p->fi.fh, &st)
			   : fstatat(source_fd, p->path, &st, AT_SYMLINK_NOFOLLOW);
	if (rc != 0) {
		fuse_reply_err(p->req, errno);
		return;
	}
	st.st_ino = ino_of(p->node);
	fuse_reply_attr(p->req, &st, opt.attr_timeout);
}

static void answer_open(struct pending *p)
{
	if ((p->fi.flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(p->req, EROFS);
		return;
	}
	int fd = openat(source_fd, p->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		fuse_reply_err(p->req, errno);
		return;
	}
	p->fi.fh = (uint64_t)fd;
	p->fi.keep_cache = opt.keep_cache ? 1 : 0;
	if (fuse_reply_open(p->req, &p->fi) != 0)
		close(fd); /* the opener was interrupted: no release will come */
}

static void answer(struct pending *p)
{
	switch (p->kind) {
	case K_READ:
		answer_read(p);
		break;
	case K_LOOKUP:
		atomic_fetch_add(&stats.lookups, 1);
		answer_lookup(p);
		break;
	case K_GETATTR:
		atomic_fetch_add(&stats.getattrs, 1);
		answer_getattr(p);
		break;
	case K_OPEN:
		atomic_fetch_add(&stats.opens, 1);
		answer_open(p);
		break;
	case K_FLUSH:
		atomic_fetch_add(&stats.flushes, 1);
		fuse_reply_err(p->req, 0); /* nothing written, nothing to flush */
		break;
	}
	free(p);
}

/* A replier: answers each queued request when it is due (all of them at once when
 * stopping), until stopping and the heap is empty. */
static void *replier(void *unused)
{
	(void)unused;
	prctl(PR_SET_TIMERSLACK, 1UL); /* a 1 ms delay is not rounded up by 50 us */
	pthread_mutex_lock(&q.lock);
	for (;;) {
		if (q.len == 0) {
			if (q.stopping)
				break;
			pthread_cond_wait(&q.idle_wake, &q.lock);
			continue;
		}
		uint64_t due = q.heap[0]->due_ns;
		if (!q.stopping && due > now_ns()) {
			if (q.timer_busy) {
				pthread_cond_wait(&q.idle_wake, &q.lock);
				continue;
			}
			struct timespec until = {.tv_sec = (time_t)(due / 1000000000u),
						 .tv_nsec = (long)(due % 1000000000u)};
			q.timer_busy = 1;
			pthread_cond_timedwait(&q.timer_wake, &q.lock, &until);
			q.timer_busy = 0;
			continue;
		}
		struct pending *p = heap_pop();
		if (q.len > 0 && !q.timer_busy) /* someone watches the next one while this answers */
			pthread_cond_signal(&q.idle_wake);
		uint64_t now = now_ns(), late = now > p->due_ns ? now - p->due_ns : 0;
		atomic_fetch_add(&stats.answered, 1);
		atomic_fetch_add(&stats.late_ns_total, late);
		atomic_max(&stats.late_ns_max, late);
		pthread_mutex_unlock(&q.lock);
		answer(p);
		pthread_mutex_lock(&q.lock);
	}
	pthread_mutex_unlock(&q.lock);
	return NULL;
}

/* -- FUSE operations ------------------------------------------------------------------ */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_write = opt.max_read_kb * 1024; /* libfuse derives max_pages from it */
	conn->max_background = opt.max_background;
	conn->congestion_threshold = opt.max_background * 3 / 4;
	if (conn->capable & FUSE_CAP_ASYNC_READ)
		conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct pending *p = pending_new(req, K_LOOKUP, node_of(parent), NULL);
	if (!p)
		return;
	if (child_path(node_of(parent), name, p->path) != 0) {
		fuse_reply_err(req, ENAMETOOLONG);
		free(p);
		return;
	}
	defer(p);
}

/* getattr, open and flush: the request on ino, answered when due (at once by default). */
static void defer_on_inode(fuse_req_t req, enum kind kind, fuse_ino_t ino,
			   struct fuse_file_info *fi)
{
	struct pending *p = pending_new(req, kind, node_of(ino), fi);
	if (p)
		defer(p);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	defer_on_inode(req, K_GETATTR, ino, fi);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	defer_on_inode(req, K_OPEN, ino, fi);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	defer_on_inode(req, K_FLUSH, ino, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct pending *p = pending_new(req, K_READ, node_of(ino), fi);
	if (!p)
		return;
	p->size = size;
	p->off = off;
	defer(p);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	close((int)fi->fh);
	fuse_reply_err(req, 0);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(source_fd, node_of(ino)->path, target, sizeof target - 1);
	if (n < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	target[n] = '\0';
	fuse_reply_readlink(req, target);
}

/* An open directory: its stream, read from where the kernel's offset says. */
struct dir {
	DIR *dp;
	pthread_mutex_t lock;
};

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dir *d = calloc(1, sizeof *d);
	int fd = openat(source_fd, node_of(ino)->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!d || fd < 0 || !(d->dp = fdopendir(fd))) {
		int err = d ? errno : ENOMEM;
		if (fd >= 0)
			close(fd);
		free(d);
		fuse_reply_err(req, err);
		return;
	}
	pthread_mutex_init(&d->lock, NULL);
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi) != 0) {
		closedir(d->dp);
		free(d);
	}
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino;
	struct dir *d = (struct dir *)(uintptr_t)fi->fh;
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	pthread_mutex_lock(&d->lock);
	seekdir(d->dp, off);
	for (;;) {
		long before = telldir(d->dp);
		errno = 0;
		struct dirent *e = readdir(d->dp);
		if (!e)
			break;
		struct stat st = {.st_ino = e->d_ino, .st_mode = (mode_t)DTTOIF(e->d_type)};
		size_t need = fuse_add_direntry(req, buf + used, size - used, e->d_name, &st,
						telldir(d->dp));
		if (need > size - used) {
			seekdir(d->dp, before); /* the next call starts with it */
			break;
		}
		used += need;
	}
	pthread_mutex_unlock(&d->lock);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	struct dir *d = (struct dir *)(uintptr_t)fi->fh;
	closedir(d->dp);
	pthread_mutex_destroy(&d->lock);
	free(d);
	fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	struct statvfs sv;
	if (fstatvfs(source_fd, &sv) != 0)
		fuse_reply_err(req, errno);
	else
		fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.open = op_open,
	.read = op_read,
	.flush = op_flush,
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.statfs = op_statfs,
};

/* -- control -------------------------------------------------------------------------- */

static void stats_line(char *out, size_t size, const char *prefix)
{
	pthread_mutex_lock(&q.lock);
	size_t hung = q.hung_count;
	pthread_mutex_unlock(&q.lock);
	snprintf(out, size,
		 "%sreads=%llu read_bytes=%llu read_size_max=%llu in_flight_max=%llu hung=%zu "
		 "hung_total=%llu released=%llu lookups=%llu getattrs=%llu opens=%llu flushes=%llu "
		 "answered=%llu late_us_total=%llu late_us_max=%llu",
		 prefix, atomic_load(&stats.reads), atomic_load(&stats.read_bytes),
		 atomic_load(&stats.read_size_max), atomic_load(&stats.in_flight_max), hung,
		 atomic_load(&stats.hung_total), atomic_load(&stats.released),
		 atomic_load(&stats.lookups), atomic_load(&stats.getattrs),
		 atomic_load(&stats.opens), atomic_load(&stats.flushes),
		 atomic_load(&stats.answered), atomic_load(&stats.late_ns_total) / 1000,
		 atomic_load(&stats.late_ns_max) / 1000);
}

/* -1 when value is not a whole number of microseconds, else 0 with *ns set. */
static int parse_us(const char *value, uint64_t *ns)
{
	char *end;
	errno = 0;
	unsigned long long us = strtoull(value, &end, 10);
	if (errno || end == value || *end || value[0] == '-' || us > 3600ull * 1000000)
		return -1;
	*ns = us * 1000;
	return 0;
}

/* Adds pattern to a list under q.lock; the reply in out. */
static void add_pattern(char patterns[][PATTERN_MAX], size_t *n, const char *pattern,
			char *out, size_t size)
{
	if (!*pattern || strlen(pattern) >= PATTERN_MAX)
		snprintf(out, size, "error: a pattern of 1 to %d bytes", PATTERN_MAX - 1);
	else if (*n == MAX_PATTERNS)
		snprintf(out, size, "error: %d patterns already", MAX_PATTERNS);
	else {
		snprintf(patterns[(*n)++], PATTERN_MAX, "%s", pattern);
		snprintf(out, size, "ok");
	}
}

/* One command line (no newline) -> one reply line (no newline). */
static void control_command(char *line, char *out, size_t size)
{
	char *arg = strchr(line, ' ');
	if (arg)
		*arg++ = '\0';
	else
		arg = "";
	uint64_t ns;
	if (strcmp(line, "stats") == 0) {
		stats_line(out, size, "ok ");
		return;
	}
	pthread_mutex_lock(&q.lock);
	if (strcmp(line, "hang-read") == 0)
		add_pattern(q.read_patterns, &q.n_read_patterns, arg, out, size);
	else if (strcmp(line, "hang-meta") == 0)
		add_pattern(q.meta_patterns, &q.n_meta_patterns, arg, out, size);
	else if (strcmp(line, "release") == 0) {
		size_t hung = q.hung_count;
		release_all();
		snprintf(out, size, "ok released=%zu", hung);
	} else if (strcmp(line, "read-delay") == 0 && parse_us(arg, &ns) == 0) {
		q.read_delay_ns = ns;
		snprintf(out, size, "ok");
	} else if (strcmp(line, "meta-delay") == 0 && parse_us(arg, &ns) == 0) {
		q.meta_delay_ns = ns;
		snprintf(out, size, "ok");
	} else
		snprintf(out, size, "error: commands: hang-read GLOB, hang-meta GLOB, release, "
				    "read-delay US, meta-delay US, stats");
	pthread_mutex_unlock(&q.lock);
}

static void control_client(int fd)
{
	struct timeval timeout = {.tv_sec = CONTROL_TIMEOUT_S};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
	char line[CONTROL_LINE_MAX];
	size_t have = 0;
	for (;;) {
		char *nl = memchr(line, '\n', have);
		if (!nl) {
			if (have == sizeof line)
				return; /* a line too long: the client is cut off */
			ssize_t n = recv(fd, line + have, sizeof line - have, 0);
			if (n <= 0)
				return;
			have += (size_t)n;
			continue;
		}
		*nl = '\0';
		if (nl > line && nl[-1] == '\r')
			nl[-1] = '\0';
		char reply[CONTROL_LINE_MAX];
		control_command(line, reply, sizeof reply - 1);
		size_t len = strlen(reply);
		reply[len++] = '\n';
		if (send(fd, reply, len, MSG_NOSIGNAL) != (ssize_t)len)
			return;
		size_t used = (size_t)(nl + 1 - line);
		memmove(line, nl + 1, have - used);
		have -= used;
	}
}

/* The control socket's thread: one client at a time (each bounded by CONTROL_TIMEOUT_S). */
static void *control_thread(void *arg)
{
	int listener = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		control_client(fd);
		close(fd);
	}
}

static int control_listen(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		fprintf(stderr, "slowfs: --control %s: path too long\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 16) != 0) {
		fprintf(stderr, "slowfs: --control %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* slowfs ctl SOCKET COMMAND [ARG]: 0 when the reply is "ok ...". */
static int control_client_main(int argc, char **argv)
{
	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: slowfs ctl SOCKET COMMAND [ARG]\n");
		return 2;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char line[CONTROL_LINE_MAX];
	int len = snprintf(line, sizeof line, "%s%s%s\n", argv[3], argc == 5 ? " " : "",
			   argc == 5 ? argv[4] : "");
	if (strlen(argv[2]) >= sizeof sa.sun_path || len < 0 || len >= (int)sizeof line) {
		fprintf(stderr, "slowfs ctl: socket path or command too long\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[2]);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    send(fd, line, (size_t)len, MSG_NOSIGNAL) != len) {
		fprintf(stderr, "slowfs ctl: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	size_t have = 0;
	ssize_t n;
	while (have < sizeof line - 1 && (n = recv(fd, line + have, sizeof line - 1 - have, 0)) > 0) {
		have += (size_t)n;
		if (memchr(line, '\n', have))
			break;
	}
	close(fd);
	line[have] = '\0';
	fputs(line, stdout);
	return strncmp(line, "ok", 2) == 0 ? 0 : 1;
}

/* -- after mounting: the connection's limits ------------------------------------------ */

/* Writes value to a sysfs file; -1 (errno set) on failure. */
static int write_number(const char *path, unsigned value)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int ok = fprintf(f, "%u\n", value) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static long read_number(const char *path)
{
	FILE *f = fopen(path, "r");
	long value = -1;
	if (f) {
		if (fscanf(f, "%ld", &value) != 1)
			value = -1;
		fclose(f);
	}
	return value;
}

/* Waits for the mount to answer (a stat of its root waits for INIT), sets its limits in
 * sysfs, prints the ready line. Runs beside the loop, which answers that stat. */
static void *setup_thread(void *unused)
{
	(void)unused;
	struct stat st;
	if (stat(opt.mountpoint, &st) != 0) {
		fprintf(stderr, "slowfs: stat %s: %s\n", opt.mountpoint, strerror(errno));
		fuse_session_exit(session);
		kill(getpid(), SIGTERM); /* wakes the loop's main thread */
		return NULL;
	}
	unsigned dev = minor(st.st_dev);
	char dir[128], path[192];
	snprintf(dir, sizeof dir, FUSECTL_DIR "/%u", dev);
	if (access(dir, F_OK) != 0 &&
	    mount("none", FUSECTL_DIR, "fusectl", 0, NULL) != 0 && errno != EBUSY)
		fprintf(stderr, "slowfs: mount -t fusectl none " FUSECTL_DIR ": %s\n",
			strerror(errno));
	snprintf(path, sizeof path, "%s/max_background", dir);
	if (write_number(path, opt.max_background) != 0)
		fprintf(stderr, "slowfs: %s: %s\n", path, strerror(errno));
	long max_background = read_number(path);
	snprintf(path, sizeof path, "%s/congestion_threshold", dir);
	if (write_number(path, opt.max_background * 3 / 4) != 0)
		fprintf(stderr, "slowfs: %s: %s\n", path, strerror(errno));
	long congestion = read_number(path);
	snprintf(path, sizeof path, "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev), dev);
	if (opt.read_ahead_kb >= 0 && write_number(path, (unsigned)opt.read_ahead_kb) != 0)
		fprintf(stderr, "slowfs: %s: %s\n", path, strerror(errno));
	long read_ahead = read_number(path);
	printf("slowfs: ready dev=%u:%u max_background=%ld congestion_threshold=%ld "
	       "read_ahead_kb=%ld max_read_kb=%u\n",
	       major(st.st_dev), dev, max_background, congestion, read_ahead, opt.max_read_kb);
	fflush(stdout);
	return NULL;
}

/* -- main ----------------------------------------------------------------------------- */

/* Starts a thread with every signal blocked (signals go to the main thread, whose
 * sem_wait in the loop they interrupt). */
static int start_thread(pthread_t *t, void *(*fn)(void *), void *arg, int detached)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int rc = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0 && detached)
		pthread_detach(*t);
	return rc;
}

static int parse_unsigned(const char *value, unsigned min, unsigned max, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(value, &end, 10);
	if (errno || end == value || *end || value[0] == '-' || v < min || v > max)
		return -1;
	*out = (unsigned)v;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: slowfs [options] SOURCE MOUNTPOINT\n"
		"       slowfs ctl SOCKET COMMAND [ARG]\n"
		"  --read-delay-us N     wait N us before answering each read (0)\n"
		"  --meta-delay-us N     the same for lookup, getattr, open, flush (0)\n"
		"  --hang-read GLOB      never answer reads of matching paths until released\n"
		"  --hang-meta GLOB      the same for lookup, getattr, open, flush\n"
		"  --control PATH        UNIX socket for commands (see the source's header)\n"
		"  --keep-cache          keep a file's cached pages across opens\n"
		"  --attr-timeout S      attribute and entry timeout, seconds (1)\n"
		"  --max-background N    the connection's background requests (%d)\n"
		"  --read-ahead-kb N     the mount's read-ahead (the kernel's)\n"
		"  --max-read-kb N       the largest read request (%d, at most %d)\n"
		"  --threads N           FUSE loop threads (%d)\n"
		"  --repliers N          threads answering delayed requests (%d)\n"
		"  --realtime            every thread SCHED_RR (priority 1): answers on time on a busy\n"
		"                        machine\n"
		"  --debug               libfuse's debug output\n",
		DEFAULT_MAX_BACKGROUND, DEFAULT_MAX_READ_KB, MAX_READ_KB_LIMIT,
		DEFAULT_LOOP_THREADS, DEFAULT_REPLIERS);
}

static int parse_options(int argc, char **argv)
{
	enum { O_READ_DELAY = 256, O_META_DELAY, O_HANG_READ, O_HANG_META, O_CONTROL,
	       O_KEEP_CACHE, O_ATTR_TIMEOUT, O_MAX_BACKGROUND, O_READ_AHEAD, O_MAX_READ,
	       O_THREADS, O_REPLIERS, O_REALTIME, O_DEBUG };
	static const struct option longopts[] = {
		{"read-delay-us", required_argument, NULL, O_READ_DELAY},
		{"meta-delay-us", required_argument, NULL, O_META_DELAY},
		{"hang-read", required_argument, NULL, O_HANG_READ},
		{"hang-meta", required_argument, NULL, O_HANG_META},
		{"control", required_argument, NULL, O_CONTROL},
		{"keep-cache", no_argument, NULL, O_KEEP_CACHE},
		{"attr-timeout", required_argument, NULL, O_ATTR_TIMEOUT},
		{"max-background", required_argument, NULL, O_MAX_BACKGROUND},
		{"read-ahead-kb", required_argument, NULL, O_READ_AHEAD},
		{"max-read-kb", required_argument, NULL, O_MAX_READ},
		{"threads", required_argument, NULL, O_THREADS},
		{"repliers", required_argument, NULL, O_REPLIERS},
		{"realtime", no_argument, NULL, O_REALTIME},
		{"debug", no_argument, NULL, O_DEBUG},
		{NULL, 0, NULL, 0},
	};
	int c;
	unsigned u;
	char reply[256], *end;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case O_READ_DELAY:
			bad = parse_us(optarg, &q.read_delay_ns);
			break;
		case O_META_DELAY:
			bad = parse_us(optarg, &q.meta_delay_ns);
			break;
		case O_HANG_READ:
			add_pattern(q.read_patterns, &q.n_read_patterns, optarg, reply, sizeof reply);
			bad = strncmp(reply, "ok", 2) != 0;
			break;
		case O_HANG_META:
			add_pattern(q.meta_patterns, &q.n_meta_patterns, optarg, reply, sizeof reply);
			bad = strncmp(reply, "ok", 2) != 0;
			break;
		case O_CONTROL:
			opt.control = optarg;
			break;
		case O_KEEP_CACHE:
			opt.keep_cache = 1;
			break;
		case O_ATTR_TIMEOUT:
			opt.attr_timeout = strtod(optarg, &end);
			bad = end == optarg || *end || !(opt.attr_timeout >= 0);
			break;
		case O_MAX_BACKGROUND:
			bad = parse_unsigned(optarg, 1, MAX_BACKGROUND_LIMIT, &opt.max_background);
			break;
		case O_READ_AHEAD:
			bad = parse_unsigned(optarg, 0, 1u << 20, &u);
			opt.read_ahead_kb = (int)u;
			break;
		case O_MAX_READ:
			bad = parse_unsigned(optarg, 4, MAX_READ_KB_LIMIT, &opt.max_read_kb);
			break;
		case O_THREADS:
			bad = parse_unsigned(optarg, 1, MAX_THREADS, &opt.loop_threads);
			break;
		case O_REPLIERS:
			bad = parse_unsigned(optarg, 1, MAX_THREADS, &opt.repliers);
			break;
		case O_REALTIME:
			opt.realtime = 1;
			break;
		case O_DEBUG:
			opt.debug = 1;
			break;
		default:
			bad = 1;
		}
		if (bad) {
			if (c != '?')
				fprintf(stderr, "slowfs: bad value for %s: %s\n", argv[optind - 1],
					optarg ? optarg : "");
			usage();
			return -1;
		}
	}
	if (argc - optind != 2) {
		usage();
		return -1;
	}
	opt.source = argv[optind];
	opt.mountpoint = argv[optind + 1];
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "ctl") == 0)
		return control_client_main(argc, argv);
	if (parse_options(argc, argv) != 0)
		return 2;

	int status = 1, mounted = 0, control_fd = -1;
	pthread_t *repliers = NULL, thread;
	unsigned started = 0;
	struct fuse_loop_config *loop = NULL;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q.timer_wake, &ca);
	pthread_cond_init(&q.idle_wake, &ca);
	pthread_condattr_destroy(&ca);

	/* Before any thread is made: every thread (libfuse's too) inherits the policy. */
	struct sched_param rr = {.sched_priority = 1};
	if (opt.realtime && (errno = pthread_setschedparam(pthread_self(), SCHED_RR, &rr)) != 0) {
		fprintf(stderr, "slowfs: --realtime: %s\n", strerror(errno));
		goto out;
	}
	source_fd = open(opt.source, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (source_fd < 0) {
		fprintf(stderr, "slowfs: %s: %s\n", opt.source, strerror(errno));
		goto out;
	}
	if (opt.control && (control_fd = control_listen(opt.control)) < 0)
		goto out;
	/* ro: nothing is written; allow_other: nginx's workers are another user;
	 * default_permissions: the kernel checks modes as a local filesystem does. */
	char *fuse_argv[] = {argv[0], "-o",
			     "ro,allow_other,default_permissions,fsname=slowfs,subtype=slowfs",
			     opt.debug ? "-d" : NULL, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(opt.debug ? 4 : 3, fuse_argv);
	session = fuse_session_new(&args, &ops, sizeof ops, NULL);
	if (!session)
		goto out;
	if (fuse_set_signal_handlers(session) != 0)
		goto out;
	if (fuse_session_mount(session, opt.mountpoint) != 0)
		goto out;
	mounted = 1;
	repliers = calloc(opt.repliers, sizeof *repliers);
	if (!repliers)
		goto out;
	for (; started < opt.repliers; started++)
		if (start_thread(&repliers[started], replier, NULL, 0) != 0)
			goto out;
	if (control_fd >= 0 &&
	    start_thread(&thread, control_thread, (void *)(intptr_t)control_fd, 1) != 0)
		goto out;
	if (start_thread(&thread, setup_thread, NULL, 1) != 0)
		goto out;
	loop = fuse_loop_cfg_create();
	if (!loop)
		goto out;
	fuse_loop_cfg_set_max_threads(loop, opt.loop_threads);
	/* Idle threads are kept: a thread made and destroyed per burst is CPU for nothing. */
	fuse_loop_cfg_set_idle_threads(loop, opt.loop_threads);
	int rc = fuse_session_loop_mt(session, loop);
	status = rc < 0 ? 1 : 0;

out:
	/* Everything queued or hung is answered before the mount goes: no reader stays stuck. */
	pthread_mutex_lock(&q.lock);
	q.stopping = 1;
	release_all();
	pthread_mutex_unlock(&q.lock);
	for (unsigned i = 0; i < started; i++)
		pthread_join(repliers[i], NULL);
	free(repliers);
	if (loop)
		fuse_loop_cfg_destroy(loop);
	if (session) {
		fuse_remove_signal_handlers(session);
		if (mounted)
			fuse_session_unmount(session);
		fuse_session_destroy(session);
	}
	if (control_fd >= 0) {
		close(control_fd);
		unlink(opt.control);
	}
	char line[512];
	stats_line(line, sizeof line, "slowfs: exit ");
	printf("%s\n", line);
	fflush(stdout);
	return status;
}
