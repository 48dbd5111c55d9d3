/*
 * media: opening a track's file safely, in two ways.
 *
 * The usual path, a canonical path that names a file below a root: openat2()
 * relative to the root's directory with RESOLVE_BENEATH, so the kernel itself
 * refuses any resolution (symlinks included) that would leave the root.
 * That is an open and an fstat, what nginx pays for a file.
 *
 * Everything else (a path that is not canonical, a symlink with an absolute
 * target or one leading to another root, a kernel without openat2):
 * realpath() rejects paths outside the roots before anything is opened
 * (opening a device or FIFO outside the roots could have effects of its
 * own), and the opened descriptor is checked again through /proc/self/fd,
 * which is what closes the swap-a-symlink race.
 */
#include "media/media.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "media/containment.h"

int media_roots_resolve(struct media_roots *roots, char *const *given, size_t count, char *error,
			size_t error_size)
{
	memset(roots, 0, sizeof(*roots));
	for (size_t i = 0; i < count; i++) {
		char *resolved = realpath(given[i], NULL);
		struct stat info;
		if (resolved == NULL || stat(resolved, &info) < 0) {
			snprintf(error, error_size, "media root %s: %s", given[i], strerror(errno));
			free(resolved);
			goto fail;
		}
		if (!S_ISDIR(info.st_mode)) {
			snprintf(error, error_size, "media root %s: not a directory", given[i]);
			free(resolved);
			goto fail;
		}
		int directory = open(resolved, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (directory < 0) {
			snprintf(error, error_size, "media root %s: %s", given[i], strerror(errno));
			free(resolved);
			goto fail;
		}
		struct statfs filesystem;
		roots->paths[roots->count] = resolved;
		roots->directories[roots->count] = directory;
		roots->local[roots->count] = fstatfs(directory, &filesystem) == 0 &&
					     media_filesystem_local((long)filesystem.f_type);
		roots->count++;
	}
	return 0;
fail:
	media_roots_free(roots);
	return -1;
}

void media_roots_free(struct media_roots *roots)
{
	for (size_t i = 0; i < roots->count; i++) {
		free(roots->paths[i]);
		close(roots->directories[i]);
	}
	memset(roots, 0, sizeof(*roots));
}

static enum media_status status_from_errno(int error_number)
{
	switch (error_number) {
	case ENOENT:
	case ENOTDIR:
	case ELOOP:
	case ENAMETOOLONG:
		return MEDIA_MISSING;
	default:
		return MEDIA_UNREADABLE;
	}
}

/* The canonical path of an open descriptor, from the kernel. */
static int descriptor_path(int fd, char *out, size_t out_size)
{
	char link[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t length = readlink(link, out, out_size - 1);
	if (length < 0 || (size_t)length >= out_size - 1)
		return -1;
	out[length] = '\0';
	return 0;
}

/* Fills file from an open descriptor; closes it and says why if it is not a regular file. */
static enum media_status describe_opened(int fd, const char *resolved_path, int root_index,
					 struct opened_file *file, int *error_number, int local)
{
	struct stat info;
	if (fstat(fd, &info) < 0) {
		*error_number = errno;
		close(fd);
		return MEDIA_UNREADABLE;
	}
	if (!S_ISREG(info.st_mode)) {
		close(fd);
		return MEDIA_NOT_REGULAR;
	}
	if (resolved_path != file->resolved_path)
		snprintf(file->resolved_path, sizeof(file->resolved_path), "%s", resolved_path);
	file->fd = fd;
	file->root_index = root_index;
	file->size = (uint64_t)info.st_size;
	file->mtime = info.st_mtim;
	file->device = info.st_dev;
	file->inode = info.st_ino;
	file->links = info.st_nlink;
	struct statfs filesystem;
	file->local = local >= 0 ? local
				 : fstatfs(fd, &filesystem) == 0 &&
					   media_filesystem_local((long)filesystem.f_type);
	return MEDIA_OK;
}

/* 0: the beneath-the-root open decided (see *status); -1: take the careful path instead. */
static int open_beneath(const struct media_roots *roots, const char *path,
			struct opened_file *file, enum media_status *status, int *error_number)
{
	/* O_NONBLOCK: a FIFO planted in a root must not block the worker. */
	static const struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	static _Atomic int unavailable;
	const char *const *root_paths = (const char *const *)roots->paths;
	if (unavailable || strlen(path) >= sizeof(file->resolved_path))
		return -1;
	int root = containment_find_root(root_paths, roots->count, path);
	if (root < 0)
		return -1; /* not canonical, or lexically outside: the careful path decides */

	const char *below = path + strlen(roots->paths[root]) + (strcmp(roots->paths[root], "/") != 0);
	long fd = syscall(SYS_openat2, roots->directories[root], below, &how, sizeof(how));
	if (fd < 0) {
		switch (errno) {
		case ENOSYS:
		case EPERM: /* seccomp filters that do not know openat2 */
			unavailable = 1;
			return -1;
		case EXDEV: /* a symlink leaves the root, or is absolute */
		case ELOOP:
		case EAGAIN:
			return -1;
		default:
			*error_number = errno;
			*status = status_from_errno(errno);
			return 0;
		}
	}
	*status = describe_opened((int)fd, path, root, file, error_number, -1);
	return 0;
}

int media_open_cached(const struct media_roots *roots, const char *path, struct opened_file *file,
		      enum media_status *status, int *error_number)
{
	/* O_NONBLOCK: a FIFO planted in a root must not block the worker. */
	static const struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_CACHED | RESOLVE_NO_XDEV,
	};
	static _Atomic int unavailable; /* a kernel before 5.12, or a filter without openat2 */
	*error_number = 0;
	if (unavailable || path[0] != '/' || strlen(path) >= sizeof(file->resolved_path))
		return 0;
	int root = containment_find_root((const char *const *)roots->paths, roots->count, path);
	if (root < 0 || !roots->local[root])
		return 0;
	const char *below = path + strlen(roots->paths[root]) + (strcmp(roots->paths[root], "/") != 0);
	long fd = syscall(SYS_openat2, roots->directories[root], below, &how, sizeof(how));
	if (fd < 0) {
		switch (errno) {
		case ENOSYS:
		case EPERM:
		case EINVAL: /* RESOLVE_CACHED unknown */
			unavailable = 1;
			return 0;
		case ENOENT: /* a missing name, known as such from the lookup cache */
		case ENOTDIR:
		case EACCES:
			*error_number = errno;
			*status = status_from_errno(errno);
			return 1;
		default: /* EAGAIN (not cached), EXDEV, ELOOP ...: the disk pool opens it */
			return 0;
		}
	}
	/* RESOLVE_NO_XDEV: the file is on its root's filesystem, a local one. */
	*status = describe_opened((int)fd, path, root, file, error_number, 1);
	return 1;
}

enum media_status media_open(const struct media_roots *roots, const char *path,
			     struct opened_file *file, int *error_number)
{
	const char *const *root_paths = (const char *const *)roots->paths;
	char resolved[PATH_MAX];
	enum media_status status;
	int fd = -1;

	*error_number = 0;
	if (path[0] != '/')
		return MEDIA_NOT_ABSOLUTE;
	if (open_beneath(roots, path, file, &status, error_number) == 0)
		return status;
	if (realpath(path, resolved) == NULL) {
		*error_number = errno;
		return status_from_errno(errno);
	}
	if (containment_find_root(root_paths, roots->count, resolved) < 0)
		return MEDIA_OUTSIDE_ROOTS;

	/* O_NONBLOCK: a FIFO planted in a root must not block the worker. */
	fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		*error_number = errno;
		return status_from_errno(errno);
	}
	if (descriptor_path(fd, file->resolved_path, sizeof(file->resolved_path)) < 0) {
		*error_number = errno;
		close(fd);
		return MEDIA_UNREADABLE;
	}
	int root = containment_find_root(root_paths, roots->count, file->resolved_path);
	if (root < 0) {
		close(fd);
		return MEDIA_OUTSIDE_ROOTS;
	}
	return describe_opened(fd, file->resolved_path, root, file, error_number, -1);
}

bool media_filesystem_local(long type)
{
	switch (type) {
	case EXT4_SUPER_MAGIC: /* and ext2, ext3 */
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case F2FS_SUPER_MAGIC:
	case TMPFS_MAGIC:
		return true;
	default:
		return false;
	}
}

const char *media_status_describe(enum media_status status)
{
	switch (status) {
	case MEDIA_OK:
		return "ok";
	case MEDIA_NOT_ABSOLUTE:
		return "path is not absolute";
	case MEDIA_MISSING:
		return "file does not exist";
	case MEDIA_UNREADABLE:
		return "file cannot be read";
	case MEDIA_NOT_REGULAR:
		return "not a regular file";
	case MEDIA_OUTSIDE_ROOTS:
		return "path is outside the media roots";
	}
	return "unknown";
}
