/*
 * gridfs_spool: one table of copies by name (lru.c, under one mutex), each
 * READY (complete, counted in used) or FILLING (a fill job holds it, with the
 * requests waiting for it). A fill is a db_pool job no loop waits for
 * (delivery NULL): it writes the copy on a pool thread, its done
 * callback publishes the result and delivers the waiters.
 */
#include "db/gridfs_spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "db/gridfs_read.h"
#include "base/log.h"
#include "base/lru.h"

/* "<24 hex>-<16 hex>" and a NUL. */
#define COPY_NAME_MAX 48
#define TEMPORARY_PREFIX ".tmp-"
/* Bytes read from the database per step of a fill. */
#define FILL_STEP (1024 * 1024)
#define SPOOL_BUCKETS 1024
/* A copy may take at most this share of the spool (1/4): a first request waits for the whole fill. */
#define COPY_SHARE 4

struct waiter {
	struct db_job *job;
	struct waiter *next;
};

struct copy {
	struct lru_node node; /* key: name */
	struct copy *doomed;  /* out of the table, its file to be removed after the lock */
	char name[COPY_NAME_MAX];
	uint64_t size;
	int ready;
	struct waiter *waiters; /* while filling */
};

struct fill {
	struct db_job job;
	struct gridfs_spool *spool;
	struct gridfs_entry file;
	char name[COPY_NAME_MAX];
};

struct gridfs_spool {
	int dir_fd;
	uint64_t max_bytes;
	struct db_pool *pool;
	unsigned max_fills;
	pthread_mutex_t lock;
	struct lru_table copies; /* guarded by lock, as are used and fills */
	uint64_t used;
	unsigned fills;
};

static void copy_name(char out[COPY_NAME_MAX], const struct gridfs_entry *file)
{
	snprintf(out, COPY_NAME_MAX, "%s-%" PRIx64, file->id, file->length);
}

static struct copy *find_copy(struct gridfs_spool *spool, const char *name)
{
	return (struct copy *)lru_find(&spool->copies, name, lru_hash(name));
}

static struct copy *add_copy(struct gridfs_spool *spool, const char *name, uint64_t size,
			     int ready)
{
	struct copy *copy = calloc(1, sizeof(*copy));
	if (copy == NULL)
		return NULL;
	snprintf(copy->name, sizeof(copy->name), "%s", name);
	copy->node.key = copy->name;
	copy->node.hash = lru_hash(copy->name);
	copy->size = size;
	copy->ready = ready;
	lru_insert(&spool->copies, &copy->node);
	if (ready)
		spool->used += size;
	return copy;
}

/*
 * Takes copy out of the table (lock held). With doomed, its file is to be
 * removed too: the copy joins *doomed, for remove_doomed once the lock is
 * let go (an unlink on a slow disk must not hold every request that asks the
 * spool); without, it is freed.
 */
static void remove_copy(struct gridfs_spool *spool, struct copy *copy, struct copy **doomed)
{
	lru_remove(&spool->copies, &copy->node);
	if (copy->ready)
		spool->used -= copy->size;
	if (doomed == NULL) {
		free(copy);
		return;
	}
	copy->doomed = *doomed;
	*doomed = copy;
}

/* Removes the files of the copies remove_copy doomed, and frees them; lock not held. */
static void remove_doomed(struct gridfs_spool *spool, struct copy *doomed)
{
	while (doomed != NULL) {
		struct copy *next = doomed->doomed;
		if (unlinkat(spool->dir_fd, doomed->name, 0) < 0 && errno != ENOENT)
			log_warn("gridfs spool: cannot remove %s: %s", doomed->name, strerror(errno));
		free(doomed);
		doomed = next;
	}
}

/* Dooms the least recently used complete copies until used fits (lock held). */
static void evict(struct gridfs_spool *spool, struct copy **doomed)
{
	struct lru_node *node = lru_oldest(&spool->copies);
	while (spool->used > spool->max_bytes && node != NULL) {
		struct copy *copy = (struct copy *)node;
		node = node->newer;
		if (copy->ready) {
			log_debug("gridfs spool: removing %s (least recently used)", copy->name);
			remove_copy(spool, copy, doomed);
		}
	}
}

int gridfs_spool_open_copy(struct gridfs_spool *spool, const struct gridfs_entry *file)
{
	char name[COPY_NAME_MAX];
	copy_name(name, file);
	pthread_mutex_lock(&spool->lock);
	struct copy *copy = find_copy(spool, name);
	int ready = copy != NULL && copy->ready;
	if (ready)
		lru_touch(&spool->copies, &copy->node);
	pthread_mutex_unlock(&spool->lock);
	if (!ready)
		return -1;
	int fd = openat(spool->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size == file->length)
		return fd;
	/* Removed or changed behind our back: forget it (a later request fills it again). */
	log_warn("gridfs spool: copy %s is missing or has the wrong length; dropping it", name);
	if (fd >= 0)
		close(fd);
	struct copy *doomed = NULL;
	pthread_mutex_lock(&spool->lock);
	copy = find_copy(spool, name);
	if (copy != NULL && copy->ready)
		remove_copy(spool, copy, &doomed);
	pthread_mutex_unlock(&spool->lock);
	remove_doomed(spool, doomed);
	return -1;
}

static void deliver(struct db_job *job, enum lookup_status status, const char *detail)
{
	job->status = status;
	snprintf(job->detail, sizeof(job->detail), "%s", detail);
	event_active(job->delivery, EV_TIMEOUT, 1);
}

/* On a lookup thread: the whole file into a temporary file, then renamed. */
static void fill_run(struct db_job *job, const struct db_thread *thread)
{
	struct fill *fill = (struct fill *)job;
	struct gridfs_spool *spool = fill->spool;
	char temporary[COPY_NAME_MAX + 16];
	snprintf(temporary, sizeof(temporary), TEMPORARY_PREFIX "%s", fill->name);
	struct evbuffer *data = evbuffer_new();
	int fd = openat(spool->dir_fd, temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	job->status = LOOKUP_FOUND;
	if (data == NULL || fd < 0) {
		job->status = LOOKUP_FAILED;
		snprintf(job->detail, sizeof(job->detail), "cannot create %s: %s", temporary,
			 data == NULL ? "out of memory" : strerror(errno));
		goto done;
	}
	for (uint64_t position = 0; position < fill->file.length && job->status == LOOKUP_FOUND;) {
		struct gridfs_span span = gridfs_span_next(&fill->file, position,
							   fill->file.length - 1, FILL_STEP);
		gridfs_read_span(job, thread, &fill->file, &span, data);
		while (job->status == LOOKUP_FOUND && evbuffer_get_length(data) > 0) {
			if (evbuffer_write(data, fd) < 0) {
				job->status = LOOKUP_FAILED;
				snprintf(job->detail, sizeof(job->detail), "writing %s: %s",
					 temporary, strerror(errno));
			}
		}
		position = span.last + 1;
	}
	struct stat st;
	if (job->status == LOOKUP_FOUND &&
	    (fsync(fd) < 0 || fstat(fd, &st) < 0 || (uint64_t)st.st_size != fill->file.length ||
	     renameat(spool->dir_fd, temporary, spool->dir_fd, fill->name) < 0)) {
		job->status = LOOKUP_FAILED;
		snprintf(job->detail, sizeof(job->detail), "cannot complete %s: %s", fill->name,
			 errno ? strerror(errno) : "wrong length");
	}
	if (job->status == LOOKUP_FOUND)
		fsync(spool->dir_fd); /* the rename itself survives a crash */
done:
	if (fd >= 0) {
		close(fd);
		if (job->status != LOOKUP_FOUND)
			unlinkat(spool->dir_fd, temporary, 0);
	}
	if (data != NULL)
		evbuffer_free(data);
}

/* After the fill ran (or was never run, at shutdown): publish it and wake its waiters. */
static void fill_done(struct db_job *job)
{
	struct fill *fill = (struct fill *)job;
	struct gridfs_spool *spool = fill->spool;
	struct copy *doomed = NULL;
	pthread_mutex_lock(&spool->lock);
	spool->fills--;
	struct copy *copy = find_copy(spool, fill->name);
	struct waiter *waiters = copy->waiters;
	copy->waiters = NULL;
	if (job->status == LOOKUP_FOUND) {
		copy->ready = 1;
		spool->used += copy->size;
		lru_touch(&spool->copies, &copy->node);
		evict(spool, &doomed);
	} else {
		remove_copy(spool, copy, NULL);
	}
	pthread_mutex_unlock(&spool->lock);
	remove_doomed(spool, doomed);
	if (job->status == LOOKUP_FOUND)
		log_debug("gridfs spool: %s complete", fill->name);
	else
		log_warn("gridfs spool: no copy of GridFS file %s: %s", fill->file.id, job->detail);
	while (waiters != NULL) {
		struct waiter *next = waiters->next;
		deliver(waiters->job, job->status, job->detail);
		free(waiters);
		waiters = next;
	}
	free(fill);
}

/* Starts the fill of a new FILLING copy (lock held); -1 when it cannot be queued. */
static int start_fill(struct gridfs_spool *spool, const struct gridfs_entry *file,
		      const char *name)
{
	struct fill *fill = calloc(1, sizeof(*fill));
	if (fill == NULL)
		return -1;
	fill->spool = spool;
	fill->file = *file;
	snprintf(fill->name, sizeof(fill->name), "%s", name);
	fill->job.run = fill_run;
	fill->job.done = fill_done;
	/* Each read of the fill has the socket timeout; the fill as a whole only needs to start. */
	fill->job.deadline = clock_deadline_after(60 * 1000);
	if (db_pool_submit(spool->pool, &fill->job) < 0) {
		free(fill);
		return -1;
	}
	spool->fills++;
	log_debug("gridfs spool: spooling GridFS file %s (%" PRIu64 " bytes)", file->id,
		  file->length);
	return 0;
}

void gridfs_spool_wait(struct gridfs_spool *spool, const struct gridfs_entry *file,
		       struct db_job *job)
{
	char name[COPY_NAME_MAX];
	const char *refused = NULL;
	struct waiter *waiter = malloc(sizeof(*waiter));
	copy_name(name, file);
	if (waiter == NULL) {
		deliver(job, LOOKUP_FAILED, "out of memory");
		return;
	}
	waiter->job = job;
	pthread_mutex_lock(&spool->lock);
	struct copy *copy = find_copy(spool, name);
	if (copy != NULL && copy->ready) {
		refused = ""; /* completed meanwhile: the waiter opens it */
	} else if (copy == NULL) {
		if (file->length == 0 || file->length > spool->max_bytes / COPY_SHARE)
			refused = "too large for the spool";
		else if (spool->fills >= spool->max_fills)
			refused = "too many fills running";
		else if ((copy = add_copy(spool, name, file->length, 0)) == NULL)
			refused = "out of memory";
		else if (start_fill(spool, file, name) < 0) {
			remove_copy(spool, copy, NULL);
			refused = "cannot queue the fill";
		}
	}
	if (refused == NULL) {
		waiter->next = copy->waiters;
		copy->waiters = waiter;
	}
	pthread_mutex_unlock(&spool->lock);
	if (refused != NULL) {
		free(waiter);
		deliver(job, refused[0] == '\0' ? LOOKUP_FOUND : LOOKUP_UNAVAILABLE, refused);
	}
}

/* "<24 hex>-<hex>": a name a complete copy has. */
static int is_copy_name(const char *name)
{
	size_t i = 0;
	for (; i < OBJECTID_HEX_LENGTH; i++) {
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	}
	if (name[i++] != '-' || name[i] == '\0')
		return 0;
	for (; name[i] != '\0'; i++) {
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	}
	return i < COPY_NAME_MAX;
}

struct found_copy {
	char name[COPY_NAME_MAX];
	uint64_t size;
	struct timespec used;
};

static int older_first(const void *a, const void *b)
{
	const struct found_copy *x = a, *y = b;
	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	return x->used.tv_nsec < y->used.tv_nsec ? -1 : x->used.tv_nsec > y->used.tv_nsec;
}

/* Takes in the copies left by an earlier run, oldest first by their last read; drops the rest. */
static int scan(struct gridfs_spool *spool, char *error, size_t error_size)
{
	int fd = dup(spool->dir_fd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	struct found_copy *found = NULL;
	size_t count = 0, capacity = 0;
	struct dirent *entry;
	if (dir == NULL) {
		snprintf(error, error_size, "gridfs-cache-dir: cannot read it: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((entry = readdir(dir)) != NULL) {
		struct stat st;
		if (strncmp(entry->d_name, TEMPORARY_PREFIX, strlen(TEMPORARY_PREFIX)) == 0) {
			unlinkat(spool->dir_fd, entry->d_name, 0); /* an unfinished fill */
			continue;
		}
		if (!is_copy_name(entry->d_name) ||
		    fstatat(spool->dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) ||
		    strtoull(strchr(entry->d_name, '-') + 1, NULL, 16) != (uint64_t)st.st_size)
			continue;
		if (count == capacity) {
			capacity = capacity ? capacity * 2 : 64;
			struct found_copy *grown = realloc(found, capacity * sizeof(*found));
			if (grown == NULL)
				break;
			found = grown;
		}
		memcpy(found[count].name, entry->d_name, strlen(entry->d_name) + 1); /* fits: is_copy_name */
		found[count].size = (uint64_t)st.st_size;
		found[count].used = st.st_atim;
		count++;
	}
	closedir(dir);
	if (count > 0) /* qsort may not be given NULL */
		qsort(found, count, sizeof(*found), older_first);
	for (size_t i = 0; i < count; i++)
		add_copy(spool, found[i].name, found[i].size, 1);
	free(found);
	struct copy *doomed = NULL;
	evict(spool, &doomed);
	remove_doomed(spool, doomed);
	return 0;
}

/*
 * The spool directory, opened, once the real user (after --user's drop, that
 * user) may create and remove copies in it: a spool it can only read would
 * start and then fail every fill. -1 with a message naming dir (and user).
 */
static int open_dir(const char *dir, const char *user, char *error, size_t error_size)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(error, error_size, "gridfs-cache-dir %s: %s", dir, strerror(errno));
		return -1;
	}
	if (faccessat(fd, ".", W_OK | X_OK, 0) < 0) {
		const char *reason = strerror(errno);
		if (user != NULL)
			snprintf(error, error_size,
				 "gridfs-cache-dir %s: user %s cannot create files in it (%s)", dir,
				 user, reason);
		else
			snprintf(error, error_size, "gridfs-cache-dir %s: cannot create files in it (%s)",
				 dir, reason);
		close(fd);
		return -1;
	}
	return fd;
}

int gridfs_spool_check(const char *dir, const char *user, char *error, size_t error_size)
{
	int fd = open_dir(dir, user, error, error_size);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

struct gridfs_spool *gridfs_spool_open(const char *dir, uint64_t max_bytes,
				       struct db_pool *pool, unsigned max_fills, char *error,
				       size_t error_size)
{
	struct gridfs_spool *spool = calloc(1, sizeof(*spool));
	if (spool == NULL || lru_init(&spool->copies, SPOOL_BUCKETS) < 0) {
		snprintf(error, error_size, "out of memory");
		free(spool);
		return NULL;
	}
	pthread_mutex_init(&spool->lock, NULL);
	spool->max_bytes = max_bytes;
	spool->pool = pool;
	spool->max_fills = max_fills ? max_fills : 1;
	spool->dir_fd = open_dir(dir, NULL, error, error_size);
	if (spool->dir_fd < 0) {
		gridfs_spool_free(spool);
		return NULL;
	}
	if (scan(spool, error, error_size) < 0) {
		gridfs_spool_free(spool);
		return NULL;
	}
	log_info("gridfs spool %s: %zu copies, %" PRIu64 " of %" PRIu64 " bytes", dir,
		 spool->copies.count, spool->used, max_bytes);
	return spool;
}

void gridfs_spool_free(struct gridfs_spool *spool)
{
	if (spool == NULL)
		return;
	struct lru_node *node;
	while ((node = lru_oldest(&spool->copies)) != NULL) {
		lru_remove(&spool->copies, node);
		free(node);
	}
	lru_destroy(&spool->copies);
	pthread_mutex_destroy(&spool->lock);
	if (spool->dir_fd >= 0)
		close(spool->dir_fd);
	free(spool);
}
