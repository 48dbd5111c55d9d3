/*
 * log_file: the path is walked one component at a time from a directory
 * descriptor (openat with O_NOFOLLOW), so what is checked is what is opened:
 * nothing anyone renames meanwhile can make a checked name lead elsewhere.
 * A symbolic link on the way is read and walked in its turn, but only when
 * the directory holding it is root's and no one else may write it (or it is
 * sticky, as /tmp, and the link is root's): any other link could have been
 * planted by the user who may write there. The file itself is opened with
 * O_NOFOLLOW and O_NONBLOCK (a FIFO without a reader would block the open
 * forever), then checked through its descriptor, and its name looked at once
 * more: a hard link the user made to a file of root's (fs.protected_hardlinks
 * off) is a regular file of root's, told apart only by its link count, and a
 * name removed in between shows as gone or as another file.
 */
#include "base/log_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Symbolic links followed on the way to one file: the kernel's own limit (ELOOP). */
#define LOG_PATH_LINKS_MAX 40

/* log_file_set_owner's user; set before any thread starts, read-only after. */
static uid_t given_owner;
static bool owner_given;

void log_file_set_owner(uid_t uid)
{
	given_owner = uid;
	owner_given = true;
}

static uid_t allowed_owner(void)
{
	return owner_given ? given_owner : geteuid();
}

static void say(char *out, size_t out_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *out, size_t out_size, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	vsnprintf(out, out_size, fmt, args);
	va_end(args);
}

/*
 * Whether a symbolic link in dir may be followed: only root could have made
 * it and only root can change it.
 */
static bool link_is_roots(const struct stat *dir, const struct stat *link)
{
	if (dir->st_uid != 0 || link->st_uid != 0)
		return false;
	return (dir->st_mode & (S_IWGRP | S_IWOTH)) == 0 || (dir->st_mode & S_ISVTX) != 0;
}

/* Replaces what is left to walk (rest, within todo) with target, then rest; -1 if too long. */
static int splice_link(char *todo, size_t todo_size, const char *rest, const char *target)
{
	char joined[PATH_MAX];
	int length = snprintf(joined, sizeof(joined), "%s/%s", target, rest);
	if (length < 0 || (size_t)length >= sizeof(joined) || (size_t)length >= todo_size)
		return -1;
	memcpy(todo, joined, (size_t)length + 1);
	return 0;
}

/* One step of the walk from *dir into component; -1 with the reason (*dir stays open). */
static int step(int *dir, const char *component, char *todo, size_t todo_size, const char *rest,
		unsigned *links, char *reason, size_t reason_size)
{
	int next = openat(*dir, component, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat found, here;
	if (next < 0 || fstat(next, &found) < 0) {
		say(reason, reason_size, "%s: %s", component, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(found.st_mode)) {
		close(*dir);
		*dir = next;
		return 0;
	}
	if (!S_ISLNK(found.st_mode)) {
		say(reason, reason_size, "%s: %s", component, strerror(ENOTDIR));
		goto fail;
	}
	if (fstat(*dir, &here) < 0 || !link_is_roots(&here, &found)) {
		say(reason, reason_size,
		    "%s is a symbolic link in a directory that others than root may write "
		    "(give a path without it)",
		    component);
		goto fail;
	}
	char target[PATH_MAX];
	ssize_t length = readlinkat(next, "", target, sizeof(target));
	if (++*links > LOG_PATH_LINKS_MAX || length < 0 || (size_t)length >= sizeof(target)) {
		say(reason, reason_size, "%s: %s", component,
		    strerror(length < 0 ? errno : *links > LOG_PATH_LINKS_MAX ? ELOOP : ENAMETOOLONG));
		goto fail;
	}
	target[length] = '\0';
	close(next);
	if (splice_link(todo, todo_size, rest, target) < 0) {
		say(reason, reason_size, "%s: %s", component, strerror(ENAMETOOLONG));
		return -1;
	}
	if (target[0] == '/') {
		int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root < 0) {
			say(reason, reason_size, "/: %s", strerror(errno));
			return -1;
		}
		close(*dir);
		*dir = root;
	}
	return 0;
fail:
	if (next >= 0)
		close(next);
	return -1;
}

/*
 * Opens (O_PATH) the directory holding path's last component, walking every
 * component before it as the file's header says, and copies that last
 * component into name. The descriptor, or -1 with the reason.
 */
static int open_parent(const char *path, char *name, size_t name_size, char *reason,
		       size_t reason_size)
{
	const char *slash = strrchr(path, '/');
	const char *last = slash != NULL ? slash + 1 : path;
	char todo[PATH_MAX];
	size_t directory_length = slash != NULL ? (size_t)(slash - path) : 0;
	if (last[0] == '\0' || strcmp(last, ".") == 0 || strcmp(last, "..") == 0) {
		say(reason, reason_size, "names a directory, not a file");
		return -1;
	}
	if (strlen(last) >= name_size || directory_length >= sizeof(todo)) {
		say(reason, reason_size, "%s", strerror(ENAMETOOLONG));
		return -1;
	}
	memcpy(name, last, strlen(last) + 1);
	memcpy(todo, path, directory_length);
	todo[directory_length] = '\0';

	int dir = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		say(reason, reason_size, "%s: %s", path[0] == '/' ? "/" : ".", strerror(errno));
		return -1;
	}
	unsigned links = 0;
	const char *cursor = todo;
	for (;;) {
		cursor += strspn(cursor, "/");
		if (*cursor == '\0')
			return dir;
		size_t length = strcspn(cursor, "/");
		char component[NAME_MAX + 1];
		if (length > NAME_MAX) {
			say(reason, reason_size, "%s", strerror(ENAMETOOLONG));
			break;
		}
		memcpy(component, cursor, length);
		component[length] = '\0';
		cursor += length;
		if (strcmp(component, ".") == 0)
			continue;
		char rest[PATH_MAX];
		snprintf(rest, sizeof(rest), "%s", cursor); /* step may rewrite todo */
		size_t links_before = links;
		if (step(&dir, component, todo, sizeof(todo), rest, &links, reason, reason_size) < 0)
			break;
		if (links != links_before)
			cursor = todo; /* the link's target, then the rest */
	}
	close(dir);
	return -1;
}

static const char *file_kind(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFIFO:
		return "a FIFO";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFSOCK:
		return "a socket";
	case S_IFDIR:
		return "a directory";
	case S_IFLNK:
		return "a symbolic link";
	default:
		return "not a regular file";
	}
}

/*
 * What an existing log file must be: a regular file with one name, root's or
 * the allowed user's. 0, or -1 with the reason.
 */
static int check_file(const struct stat *file, char *reason, size_t reason_size)
{
	if (!S_ISREG(file->st_mode)) {
		say(reason, reason_size, "is %s; a log must be a regular file",
		    file_kind(file->st_mode));
		return -1;
	}
	uid_t owner = allowed_owner();
	if (file->st_uid != 0 && file->st_uid != owner) {
		say(reason, reason_size,
		    "is owned by uid %u; a log must be root's or the user's musicd runs as (uid %u)",
		    (unsigned)file->st_uid, (unsigned)owner);
		return -1;
	}
	if (file->st_nlink != 1) {
		say(reason, reason_size, "has %ju names (hard links); a log must have one",
		    (uintmax_t)file->st_nlink);
		return -1;
	}
	return 0;
}

/* Opens name in dir for appending and checks it; the descriptor, or -1 with the reason. */
static int open_in(int dir, const char *name, char *reason, size_t reason_size)
{
	struct stat opened, named;
	/* What is there already is judged before it is opened: a device is never opened. */
	if (fstatat(dir, name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
	    check_file(&named, reason, reason_size) < 0)
		return -1;
	int fd = openat(dir, name,
			O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
			LOG_FILE_MODE);
	if (fd < 0) {
		/* Planted since: ELOOP for a link (O_NOFOLLOW), ENXIO for a FIFO without a reader. */
		int failure = errno;
		if (fstatat(dir, name, &named, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(named.st_mode))
			check_file(&named, reason, reason_size);
		else
			say(reason, reason_size, "%s", strerror(failure));
		return -1;
	}
	if (fstat(fd, &opened) < 0 || check_file(&opened, reason, reason_size) < 0)
		goto fail;
	/* Its name once more, after the open: still this file, still its only name. */
	if (fstatat(dir, name, &named, AT_SYMLINK_NOFOLLOW) < 0 || named.st_dev != opened.st_dev ||
	    named.st_ino != opened.st_ino) {
		say(reason, reason_size, "was replaced while it was opened");
		goto fail;
	}
	if (check_file(&named, reason, reason_size) < 0)
		goto fail;
	/* Writes wait for the disk as any file's do: O_NONBLOCK was for the open. */
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		say(reason, reason_size, "%s", strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

int log_file_open(const char *path, int *fd, char *error, size_t error_size)
{
	char name[NAME_MAX + 1], reason[PATH_MAX + 256];
	int dir = open_parent(path, name, sizeof(name), reason, sizeof(reason));
	int opened = dir < 0 ? -1 : open_in(dir, name, reason, sizeof(reason));
	if (dir >= 0)
		close(dir);
	if (opened < 0) {
		say(error, error_size, "%s: %s", path, reason);
		return -1;
	}
	*fd = opened;
	return 0;
}

int log_file_reopen(const char *path, int fd, char *error, size_t error_size)
{
	int fresh;
	if (log_file_open(path, &fresh, error, error_size) < 0)
		return -1;
	/* The swap itself: writers keep using fd, which now names the new file. */
	int swapped = dup3(fresh, fd, O_CLOEXEC);
	int saved = errno;
	close(fresh);
	if (swapped < 0) {
		say(error, error_size, "%s: %s", path, strerror(saved));
		return -1;
	}
	return 0;
}

/* -t's question about a file that exists: would log_file_open take it? 0, or -1 with the reason. */
static int check_existing(int dir, const char *name, const struct stat *file, char *reason,
			  size_t reason_size)
{
	if (check_file(file, reason, reason_size) < 0)
		return -1;
	if (faccessat(dir, name, W_OK, 0) < 0) {
		say(reason, reason_size, "%s", strerror(errno));
		return -1;
	}
	return 0;
}

int log_file_check(const char *path, char *error, size_t error_size)
{
	char name[NAME_MAX + 1], reason[PATH_MAX + 256];
	struct stat file;
	int status = -1;
	int dir = open_parent(path, name, sizeof(name), reason, sizeof(reason));
	if (dir < 0)
		goto out;
	if (fstatat(dir, name, &file, AT_SYMLINK_NOFOLLOW) == 0)
		status = check_existing(dir, name, &file, reason, sizeof(reason));
	else if (errno != ENOENT)
		say(reason, sizeof(reason), "%s", strerror(errno));
	/* Missing: it will be made, if its directory lets the real user. */
	else if (faccessat(dir, "", W_OK | X_OK, AT_EMPTY_PATH) < 0)
		say(reason, sizeof(reason), "%s", strerror(errno));
	else
		status = 0;
	close(dir);
out:
	if (status < 0)
		say(error, error_size, "%s: %s", path, reason);
	return status;
}
