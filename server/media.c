/*
 * media: opening a track's file safely. realpath() rejects paths outside the
 * roots before anything is opened (opening a device or FIFO outside the roots
 * could have effects of its own); the opened descriptor is then checked again
 * through /proc/self/fd, which is what closes the swap-a-symlink race.
 */
#include "media.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "containment.h"

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
		roots->paths[roots->count++] = resolved;
	}
	return 0;
fail:
	media_roots_free(roots);
	return -1;
}

void media_roots_free(struct media_roots *roots)
{
	for (size_t i = 0; i < roots->count; i++)
		free(roots->paths[i]);
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

enum media_status media_open(const struct media_roots *roots, const char *path,
			     struct media_file *file, int *error_number)
{
	const char *const *root_paths = (const char *const *)roots->paths;
	char resolved[PATH_MAX];
	enum media_status status;
	struct stat info;
	int fd = -1;

	*error_number = 0;
	if (path[0] != '/')
		return MEDIA_NOT_ABSOLUTE;
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
	if (fstat(fd, &info) < 0) {
		*error_number = errno;
		status = MEDIA_UNREADABLE;
		goto fail;
	}
	if (!S_ISREG(info.st_mode)) {
		status = MEDIA_NOT_REGULAR;
		goto fail;
	}
	if (descriptor_path(fd, file->resolved_path, sizeof(file->resolved_path)) < 0) {
		*error_number = errno;
		status = MEDIA_UNREADABLE;
		goto fail;
	}
	file->root_index =
		containment_find_root(root_paths, roots->count, file->resolved_path);
	if (file->root_index < 0) {
		status = MEDIA_OUTSIDE_ROOTS;
		goto fail;
	}
	file->fd = fd;
	file->size = (uint64_t)info.st_size;
	file->mtime = info.st_mtim;
	file->device = info.st_dev;
	file->inode = info.st_ino;
	return MEDIA_OK;

fail:
	close(fd);
	return status;
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
