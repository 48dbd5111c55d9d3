/*
 * file_cache: FILE_CACHE_SHARDS LRU tables of open files keyed by the path
 * the database gave. Each entry owns one reference to its file segment (which
 * owns the descriptor) and a count of borrowers; an entry removed from its
 * table while borrowed is freed by its last release.
 *
 * A hit without an fstat. The guarantee: a write completed before a request
 * began is seen by that request, so a file rewritten in place never goes out
 * with its old length or validators. Ways to learn of a write, and why:
 * - inotify (IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE, ... on each cached file),
 *   read by the hit: the non-blocking read() that finds the queue empty is
 *   one syscall per hit, the fstat it replaces. No saving.
 * - inotify read by a thread that marks entries stale: the kernel queues the
 *   event during the write, but the thread reads it whenever it is next
 *   scheduled; a request arriving in between (on a loaded host, for as long
 *   as the thread waits for a CPU) is sent the old length. Fails the
 *   guarantee. Watching the inotify descriptor from each worker's event loop
 *   too would make it depend on epoll's ordering and on the exchange.
 * - a read lease (file_lease): the writer's open() (or truncate) does not
 *   return until musicd's thread has marked the entry and given the lease
 *   up, so the mark comes before any byte is written; the hit reads it with
 *   no syscall. Meets the guarantee, with two limits, both written down
 *   where they apply: the kernel stops waiting after fs.lease-break-time
 *   (45 s), so only a lease thread starved that long could miss a write;
 *   and leases are taken only on local filesystems, by the file's owner (or
 *   with CAP_LEASE), and not while someone has the file open for writing.
 *   An entry without a lease is checked by fstat on every hit, as before,
 *   and tries for one again at each path check while the file was busy.
 *   Two more choices keep leases cheap: one is taken at an entry's first
 *   hit, not when it is cached (most files of a library larger than the
 *   cache are asked for once, and a lease costs five syscalls), and never on
 *   a file with several names (leases belong to the inode, and every open
 *   and close of it walks them all: measured with perf on 4,000 hard links
 *   of one file, 20% of musicd's CPU went to the kernel's lease lists).
 * What a lease does not see: a rename over the path or an unlink (the open
 * file is unchanged, so the stat of the path at the valid interval finds
 * it, as before), and a change of the mtime alone (utimensat, no write: the
 * bytes, so the old validators, are unchanged; also found at the interval).
 * Measured with strace -c -f on 1000 cached 64 KiB range requests: 7.10
 * syscalls per request with the fstat, 6.10 with leases.
 */
#include "media/file_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/content_type.h"
#include "media/file_lease.h"
#include "http/response_head.h"
#include "base/clock.h"
#include "base/lru.h"
#include "http/etag.h"
#include "http/http_date.h"

#define FILE_CACHE_SHARDS 16
_Static_assert((FILE_CACHE_SHARDS & (FILE_CACHE_SHARDS - 1)) == 0, "lru_shard_for takes a power of two");

struct file_cache_entry {
	struct lru_node node;
	struct file_cache *cache;
	/* In text, after the entry (one allocation, one free: most entries are evicted unhit). */
	char *path;		/* the key: the path as the database has it */
	char *resolved_path;	/* where it really is; file.resolved_path points here */
	char *file_lines;	/* file.representation.file_lines points here */
	char *cache_control;	/* file.representation.cache_control points here; NULL for none */
	uint64_t generation;	/* of the settings snapshot file_lines were made with */
	unsigned borrowers;	/* guarded by the shard lock */
	int in_table;		/* guarded by the shard lock */
	int64_t validated_at;	/* clock_coarse_seconds() of the last check against the disk */
	int64_t used_at;
	dev_t device;
	ino_t inode;
	nlink_t links;		/* names the file had when opened */
	struct timespec mtime;
	int fd;			/* owned by the segment; for fstat and the lease */
	bool leased;		/* guarded by the shard lock: hits read lease_broken, no fstat */
	bool lease_later;	/* guarded by the shard lock: try the lease at the next path check */
	bool lease_on_first_hit; /* guarded by the shard lock: no lease taken yet, the first hit takes it */
	bool lease_claimed;	/* guarded by the shard lock: a hit is taking the lease, outside the lock */
	bool path_checking;	/* guarded by the shard lock: a CHECK of the path is under way */
	_Atomic bool lease_broken; /* set by the lease watch before anyone may write the file */
	struct cached_file file; /* owns one segment reference */
	char text[];		 /* path, resolved_path, cache_control and file_lines */
};

struct file_cache {
	int enabled;
	struct disk_io *io; /* closes the descriptors; NULL: at once */
	atomic_uint valid_seconds, inactive_seconds; /* a reload may change them */
	_Atomic size_t entries; /* in every shard */
	_Atomic size_t leased;	/* entries holding a lease */
	struct file_lease_watch *leases; /* NULL: no leases, every hit does an fstat */
	struct lru_shard shards[FILE_CACHE_SHARDS];
};

struct file_cache *file_cache_new(size_t max_entries, unsigned valid_seconds,
				  unsigned inactive_seconds, struct disk_io *io)
{
	struct file_cache *cache = calloc(1, sizeof(*cache));
	if (cache == NULL)
		return NULL;
	cache->io = io;
	cache->enabled = max_entries > 0;
	atomic_init(&cache->valid_seconds, valid_seconds);
	atomic_init(&cache->inactive_seconds, inactive_seconds);
	if (lru_shards_init(cache->shards, FILE_CACHE_SHARDS, max_entries, &cache->entries) < 0) {
		file_cache_free(cache);
		return NULL;
	}
	if (cache->enabled)
		cache->leases = file_lease_watch_new(); /* without it, hits fstat as they must */
	return cache;
}

static void free_entry(struct file_cache_entry *entry)
{
	if (entry->file.segment != NULL)
		evbuffer_file_segment_free(entry->file.segment);
	free(entry);
}

static int same_file(const struct file_cache_entry *entry, const struct stat *info)
{
	return info->st_dev == entry->device && info->st_ino == entry->inode &&
	       (uint64_t)info->st_size == entry->file.representation.size &&
	       info->st_mtim.tv_sec == entry->mtime.tv_sec &&
	       info->st_mtim.tv_nsec == entry->mtime.tv_nsec;
}

/*
 * Whether the open file is as it was when cached: catches a file rewritten in
 * place, whose old length and validators would otherwise go out with new bytes.
 */
static int descriptor_unchanged(const struct file_cache_entry *entry)
{
	struct stat info;
	return fstat(entry->fd, &info) == 0 && same_file(entry, &info);
}

/*
 * Takes the entry's lease, then checks the open file once more: a write before
 * the lease broke none, so from here on the lease tells of writes, but not of
 * that one. Called outside the shard lock by the hit that claimed the lease
 * (lease_claimed), on a borrowed entry of a local filesystem: fcntl and fstat
 * of an open file there read memory, never the disk.
 */
static void lease_take(struct lru_shard *shard, struct file_cache_entry *entry)
{
	struct file_cache *cache = entry->cache;
	/*
	 * Leases belong to the inode, and every open or close of it, under any
	 * name, walks all of them: a file with several names, cached under each,
	 * would make each open cost one step per cached name. Such files keep
	 * the fstat per hit.
	 */
	enum file_lease_result result = FILE_LEASE_NEVER;
	bool unchanged = false;
	if (cache->leases != NULL && entry->links == 1) {
		result = file_lease_begin(cache->leases, entry->fd, &entry->lease_broken);
		unchanged = result == FILE_LEASE_HELD && descriptor_unchanged(entry);
	}
	pthread_mutex_lock(&shard->lock);
	entry->lease_claimed = false;
	entry->lease_later = result == FILE_LEASE_BUSY;
	if (result == FILE_LEASE_HELD) {
		if (unchanged && entry->in_table) {
			entry->leased = true;
			cache->leased++;
		} else {
			/* Stale already (the check finds it), or evicted meanwhile: nobody asks. */
			file_lease_end(cache->leases, entry->fd);
		}
	}
	pthread_mutex_unlock(&shard->lock);
}

/* Gives the entry's lease up: it is no longer in the table, so nobody asks. */
static void lease_give_up(struct file_cache_entry *entry)
{
	if (!entry->leased)
		return;
	file_lease_end(entry->cache->leases, entry->fd);
	entry->leased = false;
	entry->cache->leased--;
}

/* Takes entry out of its table; frees it unless borrowed. Shard lock held. */
static void evict(struct lru_shard *shard, struct file_cache_entry *entry)
{
	lease_give_up(entry);
	lru_remove(&shard->table, &entry->node);
	entry->in_table = 0;
	if (entry->borrowers == 0)
		free_entry(entry);
}

static void evict_node(struct lru_shard *shard, struct lru_node *node)
{
	evict(shard, lru_entry(node, struct file_cache_entry, node));
}

void file_cache_free(struct file_cache *cache)
{
	if (cache == NULL)
		return;
	lru_shards_destroy(cache->shards, FILE_CACHE_SHARDS, evict_node);
	file_lease_watch_free(cache->leases);
	free(cache);
}

static struct lru_shard *shard_for(struct file_cache *cache, uint64_t hash)
{
	return lru_shard_for(cache->shards, FILE_CACHE_SHARDS, hash);
}

/* Counts a lookup's outcome, and drops entry if it turned out stale. Shard lock held. */
static void count_lookup(struct lru_shard *shard, struct file_cache_entry *entry, bool hit)
{
	if (hit) {
		shard->stats.hits++;
		return;
	}
	shard->stats.misses++;
	if (entry != NULL && entry->in_table) {
		evict(shard, entry);
		shard->stats.evictions++;
	}
}

/* A borrowed entry found stale outside the lock: dropped and given back, a miss. */
static void drop_stale(struct lru_shard *shard, struct file_cache_entry *entry)
{
	pthread_mutex_lock(&shard->lock);
	count_lookup(shard, entry, false);
	pthread_mutex_unlock(&shard->lock);
	file_cache_release(entry->cache, entry);
}

enum file_cache_found file_cache_get(struct file_cache *cache, const char *path,
				     uint64_t generation, struct file_cache_entry **found,
				     struct file_cache_check *check)
{
	*found = NULL;
	*check = (struct file_cache_check){.fd = -1, .path = NULL};
	if (!cache->enabled)
		return FILE_CACHE_MISS;
	uint64_t hash = lru_hash(path);
	struct lru_shard *shard = shard_for(cache, hash);
	struct file_cache_entry *entry = NULL;
	int64_t now = clock_coarse_seconds();
	unsigned valid_seconds = atomic_load_explicit(&cache->valid_seconds, memory_order_relaxed);
	bool path_due = false, take_lease = false, leased = false;

	/* Under the lock: flags and counts only, no system call. */
	pthread_mutex_lock(&shard->lock);
	struct lru_node *node = lru_find(&shard->table, path, hash);
	if (node != NULL) {
		entry = lru_entry(node, struct file_cache_entry, node);
		if (entry->generation > generation) {
			/* A request older than the entry's settings: not its headers; kept for newer ones. */
			entry = NULL;
		} else if (entry->generation < generation ||
			   (entry->leased && atomic_load(&entry->lease_broken))) {
			/* Stale headers (a reload since) or a file written: reopened by the caller. */
			evict(shard, entry);
			shard->stats.evictions++;
			entry = NULL;
		} else {
			/* One path check at a time: the others use the entry meanwhile. */
			path_due = now - entry->validated_at >= (int64_t)valid_seconds &&
				   !entry->path_checking;
			entry->path_checking = entry->path_checking || path_due;
			/* A file asked for twice is worth its lease (5 syscalls, once). */
			take_lease = entry->file.local && !entry->lease_claimed && !entry->leased &&
				     (entry->lease_on_first_hit || (path_due && entry->lease_later));
			if (take_lease) {
				entry->lease_on_first_hit = false;
				entry->lease_claimed = true;
			}
			entry->used_at = now;
			entry->borrowers++;
			lru_touch(&shard->table, node);
			leased = entry->leased;
			if (leased && !path_due) {
				/* The usual hit: the lease says the file is as it was. One lock. */
				count_lookup(shard, entry, true);
				pthread_mutex_unlock(&shard->lock);
				*found = entry;
				return FILE_CACHE_HIT;
			}
		}
	}
	if (entry == NULL)
		count_lookup(shard, NULL, false);
	pthread_mutex_unlock(&shard->lock);
	if (entry == NULL)
		return FILE_CACHE_MISS;

	if (take_lease) {
		lease_take(shard, entry);
		/* The lease's flag, read again: taken just now, or not. */
		pthread_mutex_lock(&shard->lock);
		leased = entry->leased;
		pthread_mutex_unlock(&shard->lock);
	}
	if (leased ? atomic_load(&entry->lease_broken)
		   : entry->file.local && !descriptor_unchanged(entry)) {
		/* On a local disk the fstat reads the inode in memory: done here, at once. */
		drop_stale(shard, entry);
		return FILE_CACHE_MISS;
	}
	*found = entry;
	if (!leased && !entry->file.local)
		check->fd = entry->fd;
	if (path_due)
		check->path = entry->path;
	if (check->fd >= 0 || check->path != NULL)
		return FILE_CACHE_CHECK;
	pthread_mutex_lock(&shard->lock);
	count_lookup(shard, entry, true);
	pthread_mutex_unlock(&shard->lock);
	return FILE_CACHE_HIT;
}

bool file_cache_checked(struct file_cache *cache, struct file_cache_entry *entry,
			const struct file_cache_check *check, bool fd_ok,
			const struct stat *fd_info, bool path_ok, const struct stat *path_info)
{
	bool unchanged = (check->fd < 0 || (fd_ok && same_file(entry, fd_info))) &&
			 (check->path == NULL || (path_ok && same_file(entry, path_info)));
	struct lru_shard *shard = shard_for(cache, entry->node.hash);
	pthread_mutex_lock(&shard->lock);
	if (check->path != NULL) {
		entry->path_checking = false;
		if (unchanged)
			entry->validated_at = clock_coarse_seconds();
	}
	if (unchanged)
		count_lookup(shard, entry, true);
	pthread_mutex_unlock(&shard->lock);
	if (!unchanged)
		drop_stale(shard, entry);
	return unchanged;
}

static struct file_cache_entry *new_entry(struct file_cache *cache, const char *path,
					  const struct opened_file *file, uint64_t generation,
					  const char *cache_control)
{
	size_t path_size = strlen(path) + 1, resolved_size = strlen(file->resolved_path) + 1;
	size_t control_size = cache_control != NULL ? strlen(cache_control) + 1 : 0;
	size_t lines_size = RESPONSE_FILE_LINES_SIZE(cache_control ? strlen(cache_control) : 0);
	struct file_cache_entry *entry =
		calloc(1, sizeof(*entry) + path_size + resolved_size + control_size + lines_size);
	if (entry == NULL) {
		disk_io_close(cache->io, file->fd, (unsigned)file->root_index);
		return NULL;
	}
	entry->path = memcpy(entry->text, path, path_size);
	entry->resolved_path = memcpy(entry->path + path_size, file->resolved_path, resolved_size);
	if (cache_control != NULL)
		entry->cache_control =
			memcpy(entry->resolved_path + resolved_size, cache_control, control_size);
	entry->file_lines = entry->resolved_path + resolved_size + control_size;
	entry->file.segment = disk_io_segment_new(cache->io, file->fd, file->size,
						  (unsigned)file->root_index, &entry->file.disk);
	if (entry->file.segment == NULL) {
		free(entry);
		return NULL;
	}
	entry->node.key = entry->path;
	entry->node.hash = lru_hash(entry->path);
	entry->cache = cache;
	entry->validated_at = entry->used_at = clock_coarse_seconds();
	entry->fd = entry->file.fd = file->fd;
	entry->device = file->device;
	entry->inode = file->inode;
	entry->links = file->links;
	entry->mtime = file->mtime;
	entry->borrowers = 1;
	entry->file.representation.size = file->size;
	entry->file.representation.mtime = file->mtime.tv_sec;
	entry->file.representation.content_type = content_type_for_path(file->resolved_path);
	entry->generation = generation;
	entry->file.representation.cache_control = entry->cache_control;
	entry->file.resolved_path = entry->resolved_path;
	entry->file.root_index = file->root_index;
	entry->file.local = file->local;
	entry->file.entry = entry;
	etag_format(entry->file.representation.etag, file->mtime, file->size);
	http_date_format(entry->file.representation.last_modified, file->mtime.tv_sec);
	if (response_head_file_lines(entry->file_lines, lines_size,
				     entry->file.representation.last_modified,
				     entry->file.representation.etag, cache_control) == 0) {
		free_entry(entry);
		return NULL;
	}
	entry->file.representation.file_lines = entry->file_lines;
	return entry;
}

struct file_cache_entry *file_cache_insert(struct file_cache *cache, const char *path,
					   const struct opened_file *file, uint64_t generation,
					   const char *cache_control)
{
	struct file_cache_entry *entry = new_entry(cache, path, file, generation, cache_control);
	if (entry == NULL || !cache->enabled)
		return entry;

	/*
	 * No lease yet: most files a cache takes in are asked for once (a library
	 * larger than the cache), and a lease costs five syscalls. The first hit
	 * takes it; until then hits fstat.
	 */
	entry->lease_on_first_hit = cache->leases != NULL && file->local;
	struct lru_shard *shard = shard_for(cache, entry->node.hash);
	pthread_mutex_lock(&shard->lock);
	struct lru_node *cached = lru_find(&shard->table, entry->node.key, entry->node.hash);
	if (cached != NULL &&
	    lru_entry(cached, struct file_cache_entry, node)->generation > generation) {
		/* Made with newer settings than this request's: that one stays; this is the caller's. */
		entry->in_table = 0;
	} else {
		/* When every other shard is busy this instant, the file stays the caller's alone. */
		entry->in_table = lru_shard_insert_bounded(cache->shards, FILE_CACHE_SHARDS, shard,
							   &entry->node, evict_node);
	}
	if (!entry->in_table)
		lease_give_up(entry);
	pthread_mutex_unlock(&shard->lock);
	return entry;
}

const char *file_cache_path(const struct file_cache_entry *entry)
{
	return entry->path;
}

const struct cached_file *file_cache_file(const struct file_cache_entry *entry)
{
	return &entry->file;
}

void file_cache_release(struct file_cache *cache, struct file_cache_entry *entry)
{
	struct lru_shard *shard = shard_for(cache, entry->node.hash);
	pthread_mutex_lock(&shard->lock);
	int last = --entry->borrowers == 0 && !entry->in_table;
	pthread_mutex_unlock(&shard->lock);
	if (last)
		free_entry(entry);
}

void file_cache_hold(struct file_cache_entry *entry)
{
	struct lru_shard *shard = shard_for(entry->cache, entry->node.hash);
	pthread_mutex_lock(&shard->lock);
	entry->borrowers++;
	pthread_mutex_unlock(&shard->lock);
}

void file_cache_drop(struct file_cache_entry *entry)
{
	file_cache_release(entry->cache, entry);
}

void file_cache_expire(struct file_cache *cache)
{
	disk_io_flush_closes(cache->io);
	if (!cache->enabled)
		return;
	int64_t now = clock_coarse_seconds();
	unsigned inactive_seconds =
		atomic_load_explicit(&cache->inactive_seconds, memory_order_relaxed);
	for (size_t i = 0; i < FILE_CACHE_SHARDS; i++) {
		struct lru_shard *shard = &cache->shards[i];
		pthread_mutex_lock(&shard->lock);
		struct lru_node *node;
		while ((node = lru_oldest(&shard->table)) != NULL) {
			struct file_cache_entry *entry =
				lru_entry(node, struct file_cache_entry, node);
			if (now - entry->used_at < (int64_t)inactive_seconds)
				break;
			evict(shard, entry);
			shard->stats.evictions++;
		}
		pthread_mutex_unlock(&shard->lock);
	}
}

struct cache_stats file_cache_stats(struct file_cache *cache)
{
	return lru_shards_stats(cache->shards, FILE_CACHE_SHARDS);
}

size_t file_cache_leased(struct file_cache *cache)
{
	return cache->leased;
}

void file_cache_set_intervals(struct file_cache *cache, unsigned valid_seconds,
			      unsigned inactive_seconds)
{
	atomic_store_explicit(&cache->valid_seconds, valid_seconds, memory_order_relaxed);
	atomic_store_explicit(&cache->inactive_seconds, inactive_seconds, memory_order_relaxed);
}
