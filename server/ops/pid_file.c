/*
 * pid_file: writing, checking and removing --pid-file (pid_file.h says when).
 * The file is made beside its final name with O_EXCL | O_NOFOLLOW and renamed
 * over it: a directory writable by others (/run/musicd belongs to musicd) can
 * neither make musicd write through a planted link nor show a reader a
 * partial number.
 */
#include "ops/pid_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

#define PID_TEXT_MAX 24 /* "2147483647\n" with room to spare */

int pid_file_write(const char *path, pid_t pid, char *error, size_t error_size)
{
	char temporary[PATH_MAX];
	char text[PID_TEXT_MAX];
	const char *step = "open";
	int length = snprintf(text, sizeof(text), "%jd\n", (intmax_t)pid);
	if (snprintf(temporary, sizeof(temporary), "%s.%jd.tmp", path, (intmax_t)pid) >=
	    (int)sizeof(temporary)) {
		snprintf(error, error_size, "pid-file %s: the name is too long", path);
		return -1;
	}
	unlink(temporary); /* what a musicd of this pid left, killed between open and rename */
	int fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		goto failed;
	step = "write";
	if (write(fd, text, (size_t)length) != length) {
		int saved = errno;
		close(fd);
		unlink(temporary);
		errno = saved != 0 ? saved : EIO;
		goto failed;
	}
	step = "close";
	if (close(fd) < 0) {
		int saved = errno;
		unlink(temporary);
		errno = saved;
		goto failed;
	}
	step = "rename";
	if (rename(temporary, path) < 0) {
		int saved = errno;
		unlink(temporary);
		errno = saved;
		goto failed;
	}
	return 0;
failed:
	snprintf(error, error_size, "pid-file %s: %s: %s", path, step, strerror(errno));
	return -1;
}

void pid_file_remove(const char *path, pid_t pid)
{
	char text[PID_TEXT_MAX];
	char expected[PID_TEXT_MAX];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			log_warn("pid-file %s: cannot read it to remove it: %s", path, strerror(errno));
		return;
	}
	ssize_t got = read(fd, text, sizeof(text) - 1);
	close(fd);
	text[got > 0 ? got : 0] = '\0';
	snprintf(expected, sizeof(expected), "%jd\n", (intmax_t)pid);
	if (strcmp(text, expected) != 0)
		return; /* another musicd's now */
	if (unlink(path) < 0)
		log_warn("pid-file %s: cannot remove it: %s", path, strerror(errno));
}

int pid_file_check(const char *path, char *error, size_t error_size)
{
	char buffer[PATH_MAX];
	snprintf(buffer, sizeof(buffer), "%s", path);
	const char *directory = dirname(buffer); /* dirname may write into its argument */
	if (access(directory, W_OK | X_OK) < 0) {
		snprintf(error, error_size, "pid-file %s: cannot create files in %s: %s", path,
			 directory, strerror(errno));
		return -1;
	}
	return 0;
}
