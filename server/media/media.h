/*
 * media: turns a path from the database into an open, regular file inside a
 * media root, or a reason why not. Containment is enforced on what is
 * actually opened, never on a name checked earlier, so a symlink swapped
 * between check and open cannot leak a byte from outside the roots: either
 * the kernel resolves the path beneath the root's directory (openat2 with
 * RESOLVE_BENEATH), or the opened descriptor's /proc/self/fd link is checked.
 */
#ifndef MUSICD_MEDIA_H
#define MUSICD_MEDIA_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "config/config.h"

/* The media roots, canonicalised and opened once at start-up. Owns its strings and fds. */
struct media_roots {
	char *paths[CONFIG_MAX_MEDIA_ROOTS];
	int directories[CONFIG_MAX_MEDIA_ROOTS]; /* O_PATH descriptors, for openat2 */
	bool local[CONFIG_MAX_MEDIA_ROOTS];	  /* on a local disk filesystem (media_filesystem_local) */
	size_t count;
};

enum media_status {
	MEDIA_OK,
	MEDIA_NOT_ABSOLUTE,   /* the stored path is relative: a data problem */
	MEDIA_MISSING,	      /* no such file (or a path component is not a directory) */
	MEDIA_UNREADABLE,     /* permission or I/O error */
	MEDIA_NOT_REGULAR,    /* a directory, device, FIFO ... */
	MEDIA_OUTSIDE_ROOTS,  /* resolves, symlinks included, outside every root */
};

/* An opened track. fd is the caller's to close. */
struct opened_file {
	int fd;
	uint64_t size;
	struct timespec mtime;
	dev_t device;
	ino_t inode;
	nlink_t links;		    /* names the file has (hard links) */
	bool local;		    /* on a local disk filesystem: an fstat of it never waits */
	int root_index;		    /* which root contains it */
	char resolved_path[PATH_MAX]; /* canonical path of the opened file */
};

/* Resolves each root (it must exist and be a directory). -1 with a message naming the root. */
int media_roots_resolve(struct media_roots *roots, char *const *given, size_t count, char *error,
			size_t error_size);
void media_roots_free(struct media_roots *roots);

/* Opens path if it is a regular file inside a root. On failure *error_number holds errno, if any. */
enum media_status media_open(const struct media_roots *roots, const char *path,
			     struct opened_file *file, int *error_number);

/*
 * Whether a filesystem (its statfs f_type) keeps the inodes of open files in
 * memory, so that an fstat, a lease or a send of cached pages never waits for
 * a device or a server: ext4, xfs, btrfs, f2fs, tmpfs. Not FUSE, not network
 * filesystems.
 */
bool media_filesystem_local(long type);

/*
 * Opens path as media_open does, but only where that waits for nothing: the
 * path names a file below a root on a local disk filesystem, every component
 * of it is in the kernel's lookup cache (openat2's RESOLVE_CACHED: EAGAIN
 * where one would be read from the disk or revalidated) and on the root's
 * own filesystem (RESOLVE_NO_XDEV: a mount below a root, an NFS export say,
 * is not local). Then the open and its fstat read memory only. 1 with
 * *status decided (MEDIA_OK: *file filled); 0 when it cannot tell without
 * waiting: open it with media_open off the loop.
 */
int media_open_cached(const struct media_roots *roots, const char *path, struct opened_file *file,
		      enum media_status *status, int *error_number);

/* A short description of a status, for logs. */
const char *media_status_describe(enum media_status status);

#endif
