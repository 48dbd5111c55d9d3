/*
 * file_cache: open files kept open, like nginx's open_file_cache. A hot file
 * is opened once and its libevent file segment shared by every response that
 * sends it (each response holds its own segment reference while it sends).
 * Every hit checks the open file, so that a file rewritten in place is noticed
 * at once, never sent with its old length and validators: by the entry's
 * lease (file_lease: a writer's open or truncate waits until the entry is
 * marked, and the hit reads the mark, no syscall) or, where no lease can be
 * had, by fstat. The lease is taken at a file's first hit, not when it is
 * cached: a library larger than the cache brings in many files asked for
 * once, and a lease costs five syscalls. Once per valid interval it checks the path (stat: a file
 * replaced by another, deleted, or only touched, is noticed within that
 * interval; responses already sending the old file keep sending the old
 * bytes, never a mix). Entries unused for the inactive time are closed.
 *
 * Shared by every worker; split into independently locked shards.
 */
#ifndef MUSICD_FILE_CACHE_H
#define MUSICD_FILE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <event2/buffer.h>

#include "base/lru.h"
#include "media/disk_io.h"
#include "media/media.h"
#include "http/representation.h"

struct file_cache;
struct file_cache_entry;

/*
 * max_entries 0 disables the cache. Descriptors are closed by io's pool
 * (disk_io_close: a close on FUSE or NFS may wait); io NULL closes them at
 * once (unit tests).
 */
struct file_cache *file_cache_new(size_t max_entries, unsigned valid_seconds,
				  unsigned inactive_seconds, struct disk_io *io);
/* Drops every entry (responses still sending keep their segments alive). */
void file_cache_free(struct file_cache *cache);

/* What file_cache_get found. */
enum file_cache_found {
	FILE_CACHE_MISS,  /* nothing usable: the caller opens the file (off the loop) */
	FILE_CACHE_HIT,	  /* the entry, borrowed, may be used now */
	FILE_CACHE_CHECK, /* the entry, borrowed, may be used once check says it is unchanged */
};

/*
 * What a FILE_CACHE_CHECK asks to be looked at on the disk, off the loop
 * (disk_io.h's disk_check), before the entry is used: an fstat of the open
 * file where no lease tells of writes and the file is not on a local disk
 * (NFS, FUSE: their fstat may wait for a server), and the stat of the path
 * once per valid interval (a replaced or deleted file).
 */
struct file_cache_check {
	int fd;		  /* fstat it; -1: no */
	const char *path; /* stat it; NULL: no. The entry's own: valid while it is borrowed */
};

/*
 * Looks path up, with no system call that may wait and none under the shard's
 * lock: an entry is borrowed (a reference the caller gives back with
 * file_cache_release) on HIT and CHECK, and *check says what a CHECK needs.
 * generation is the request's settings snapshot's: an entry whose headers
 * were made with an older one is stale (dropped, a miss), and one made with a
 * newer one is not the request's (a miss, kept).
 */
enum file_cache_found file_cache_get(struct file_cache *cache, const char *path,
				     uint64_t generation, struct file_cache_entry **entry,
				     struct file_cache_check *check);

/*
 * The findings of a CHECK's fstat (fd_ok: it succeeded, with fd_info) and
 * stat (path_ok, path_info), for what check asked. True: the entry is
 * unchanged and may be used (still borrowed). False: it changed, so it is
 * dropped and the reference given back: a miss.
 */
bool file_cache_checked(struct file_cache *cache, struct file_cache_entry *entry,
			const struct file_cache_check *check, bool fd_ok,
			const struct stat *fd_info, bool path_ok, const struct stat *path_info);

/*
 * Takes over an opened file (file->fd) for path and returns a referenced
 * entry, its header lines made with cache_control (copied) of the settings
 * snapshot generation, cached for later requests (in a full cache, the least
 * recently used entry of its shard, or of another shard, makes room). With
 * the cache disabled, or an entry of a newer generation cached for path, the
 * entry is the caller's alone and closed on release. NULL if out of memory
 * (the fd is closed then too).
 */
struct file_cache_entry *file_cache_insert(struct file_cache *cache, const char *path,
					   const struct opened_file *file, uint64_t generation,
					   const char *cache_control);

/* A file on disk as an answer needs it; valid while the entry's reference is held. */
struct cached_file {
	struct representation representation;
	struct evbuffer_file_segment *segment; /* the whole file, by sendfile; the entry's */
	int fd;				       /* the segment's descriptor (it closes it) */
	const char *resolved_path;	       /* canonical path, for the offload headers */
	int root_index;			       /* the media root containing it: its disk lane */
	bool local;			       /* on a local disk filesystem (media.h) */
	struct disk_file *disk;		       /* the segment's, for disk_residency */
	struct file_cache_entry *entry;	       /* the entry holding it (file_cache_hold) */
};

/* The path the entry is cached under (the database's); valid while the reference is held. */
const char *file_cache_path(const struct file_cache_entry *entry);

/* The entry's file; valid while the reference is held. */
const struct cached_file *file_cache_file(const struct file_cache_entry *entry);

void file_cache_release(struct file_cache *cache, struct file_cache_entry *entry);

/*
 * One more reference to a borrowed entry, and giving one back, with no cache at
 * hand: for an answer that keeps the file past its handler (respond/file_plan.h).
 */
void file_cache_hold(struct file_cache_entry *entry);
void file_cache_drop(struct file_cache_entry *entry);

/* Closes entries unused for the inactive time, and hands on the closes waiting for a batch
 * (media/disk_io.h); call about once a second. */
void file_cache_expire(struct file_cache *cache);

/* New valid and inactive intervals (a reload), from any thread; they apply to every entry. */
void file_cache_set_intervals(struct file_cache *cache, unsigned valid_seconds,
			      unsigned inactive_seconds);

struct cache_stats file_cache_stats(struct file_cache *cache);

/* How many cached entries are checked by their lease, so that their hits need no fstat. */
size_t file_cache_leased(struct file_cache *cache);

#endif
