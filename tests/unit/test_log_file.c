/*
 * Unit tests for server/base/log_file.h, on real files in a directory of
 * their own under /tmp: a log is appended to, made 0640, and reopened under
 * the same descriptor; what could make root write elsewhere is refused with
 * its reason (a symbolic link as the file or on the way in a directory others
 * may write, a FIFO without waiting for its reader, a device, a second name,
 * a file of another user), root's own links are followed; log_file_check
 * answers as log_file_open would, making nothing. The tests that give files
 * to other users need root and are skipped without it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log_file.h"

/* A uid no file of the machine's belongs to, for a file of "another user". */
#define STRANGER_UID 54321
#define PATH_SIZE 512

struct dir {
	char path[64];
};

static int setup(void **state)
{
	struct dir *dir = calloc(1, sizeof(*dir));
	snprintf(dir->path, sizeof(dir->path), "/tmp/musicd-test-log-file-XXXXXX");
	if (mkdtemp(dir->path) == NULL)
		return -1;
	chmod(dir->path, 0755);
	*state = dir;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct dir *dir = *state;
	nftw(dir->path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
	return 0;
}

/* dir/name in out; returns out. */
static char *in(const struct dir *dir, const char *name, char out[PATH_SIZE])
{
	int length = snprintf(out, PATH_SIZE, "%s/%s", dir->path, name);
	assert_true(length > 0 && length < PATH_SIZE);
	return out;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

/* log_file_open's refusal: -1, the path and the reason named, and no descriptor. */
static void assert_open_refused(const char *path, const char *reason)
{
	char error[1024];
	int fd = -1;
	assert_int_equal(log_file_open(path, &fd, error, sizeof(error)), -1);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(error, path));
	if (strstr(error, reason) == NULL)
		fail_msg("'%s' does not say '%s'", error, reason);
	char check[1024];
	assert_int_equal(log_file_check(path, check, sizeof(check)), -1);
	assert_string_equal(check, error); /* -t says what start-up would */
}

/* The file's whole content (at most 255 bytes), for comparison. */
static void assert_file_holds(const char *path, const char *expected)
{
	char text[256] = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_true(read(fd, text, sizeof(text) - 1) >= 0);
	close(fd);
	assert_string_equal(text, expected);
}

static void test_reopen_after_a_rename_writes_to_a_new_file_under_the_same_descriptor(void **state)
{
	struct dir *dir = *state;
	char path[PATH_SIZE], renamed[PATH_SIZE], error[256];
	in(dir, "error.log", path);
	in(dir, "error.log.1", renamed);
	int fd = -1;
	assert_int_equal(log_file_open(path, &fd, error, sizeof(error)), 0);
	assert_int_equal(write(fd, "old\n", 4), 4);
	assert_int_equal(rename(path, renamed), 0);
	assert_int_equal(write(fd, "late\n", 5), 5); /* before the reopen: still the old file */

	assert_int_equal(log_file_reopen(path, fd, error, sizeof(error)), 0);
	assert_int_equal(write(fd, "new\n", 4), 4);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	assert_file_holds(renamed, "old\nlate\n");
	assert_file_holds(path, "new\n");
}

static void test_a_failed_reopen_names_the_path_and_keeps_the_old_file(void **state)
{
	struct dir *dir = *state;
	char path[PATH_SIZE], renamed[PATH_SIZE], error[1024];
	in(dir, "access.log", path);
	in(dir, "access.log.1", renamed);
	int fd = -1;
	assert_int_equal(log_file_open(path, &fd, error, sizeof(error)), 0);
	assert_int_equal(rename(path, renamed), 0);
	assert_int_equal(mkdir(path, 0755), 0); /* a directory cannot be opened for writing */

	assert_int_equal(log_file_reopen(path, fd, error, sizeof(error)), -1);
	assert_non_null(strstr(error, path));
	assert_int_equal(write(fd, "kept\n", 5), 5);
	close(fd);
	assert_file_holds(renamed, "kept\n");
}

static void test_a_new_log_is_made_0640_and_appended_to(void **state)
{
	struct dir *dir = *state;
	char path[PATH_SIZE], error[256];
	mode_t old_mask = umask(0);
	int fd = -1;
	assert_int_equal(log_file_open(in(dir, "new.log", path), &fd, error, sizeof(error)), 0);
	umask(old_mask);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_true(fcntl(fd, F_GETFL) & O_APPEND);
	assert_false(fcntl(fd, F_GETFL) & O_NONBLOCK);
	close(fd);
	write_file(in(dir, "old.log", path), "first\n", 0644);
	assert_int_equal(log_file_open(path, &fd, error, sizeof(error)), 0);
	assert_int_equal(write(fd, "second\n", 7), 7);
	close(fd);
	assert_file_holds(path, "first\nsecond\n");
	assert_int_equal(log_file_check(path, error, sizeof(error)), 0);
	assert_int_equal(log_file_check(in(dir, "missing.log", path), error, sizeof(error)), 0);
	assert_int_equal(access(path, F_OK), -1); /* the check made nothing */
}

static void test_a_symbolic_link_as_the_log_is_refused(void **state)
{
	struct dir *dir = *state;
	char path[PATH_SIZE], target[PATH_SIZE];
	write_file(in(dir, "target", target), "untouched\n", 0644);
	assert_int_equal(symlink(target, in(dir, "access.log", path)), 0);
	assert_open_refused(path, "is a symbolic link; a log must be a regular file");
	/* Dangling, it would have been created where it points. */
	assert_int_equal(symlink(in(dir, "nowhere", target), in(dir, "dangling.log", path)), 0);
	assert_open_refused(path, "is a symbolic link");
	assert_int_equal(access(target, F_OK), -1);
	assert_file_holds(in(dir, "target", target), "untouched\n");
}

static void test_a_symbolic_link_on_the_way_in_a_directory_others_may_write_is_refused(void **state)
{
	struct dir *dir = *state;
	char path[PATH_SIZE], logs[PATH_SIZE], elsewhere[PATH_SIZE];
	assert_int_equal(mkdir(in(dir, "elsewhere", elsewhere), 0755), 0);
	write_file(in(dir, "elsewhere/access.log", path), "untouched\n", 0644);
	assert_int_equal(mkdir(in(dir, "logs", logs), 0777), 0);
	assert_int_equal(chmod(logs, 0777), 0); /* anyone may plant a link there */
	assert_int_equal(symlink(elsewhere, in(dir, "logs/sub", path)), 0);
	assert_open_refused(in(dir, "logs/sub/access.log", path),
			    "sub is a symbolic link in a directory that others than root may write");
	/* Deeper, and reached through a link's target: the same. */
	assert_open_refused(in(dir, "logs/sub/../elsewhere/access.log", path),
			    "sub is a symbolic link");
	assert_file_holds(in(dir, "elsewhere/access.log", path), "untouched\n");
}

static void test_a_link_only_root_could_make_is_followed(void **state)
{
	struct dir *dir = *state;
	if (geteuid() != 0)
		skip();
	char path[PATH_SIZE], target[PATH_SIZE], error[256];
	assert_int_equal(mkdir(in(dir, "real", target), 0755), 0);
	/* dir is root's, 0755: the link in it is root's to make. */
	assert_int_equal(symlink("real", in(dir, "linked", path)), 0);
	int fd = -1;
	assert_int_equal(log_file_open(in(dir, "linked/x.log", path), &fd, error, sizeof(error)),
			 0);
	assert_int_equal(write(fd, "via the link\n", 13), 13);
	close(fd);
	assert_file_holds(in(dir, "real/x.log", path), "via the link\n");
	/* A link to a link, absolute: walked in its turn. */
	assert_int_equal(symlink(in(dir, "linked", target), in(dir, "twice", path)), 0);
	assert_int_equal(log_file_check(in(dir, "twice/x.log", path), error, sizeof(error)), 0);
	/* A link to itself ends with the kernel's own limit. */
	assert_int_equal(symlink("loop", in(dir, "loop", path)), 0);
	assert_open_refused(in(dir, "loop/x.log", path), "Too many levels of symbolic links");
}

static void test_a_fifo_is_refused_without_waiting_for_a_reader(void **state)
{
	struct dir *dir = *state;
	char path[PATH_SIZE];
	assert_int_equal(mkfifo(in(dir, "access.log", path), 0666), 0);
	time_t before = time(NULL);
	assert_open_refused(path, "is a FIFO; a log must be a regular file");
	assert_true(time(NULL) - before < 5);
	/* With a reader the open succeeds, and the file is refused all the same. */
	int reader = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(reader >= 0);
	assert_open_refused(path, "is a FIFO");
	char byte;
	assert_int_equal(read(reader, &byte, 1), 0); /* nothing was written to it */
	close(reader);
}

static void test_a_device_or_a_directory_is_refused(void **state)
{
	(void)state;
	assert_open_refused("/dev/null", "is a character device");
	assert_open_refused("/tmp", "is a directory; a log must be a regular file");
	assert_open_refused("/tmp/", "names a directory, not a file");
}

static void test_a_second_name_for_a_file_is_refused(void **state)
{
	struct dir *dir = *state;
	char path[PATH_SIZE], other[PATH_SIZE];
	write_file(in(dir, "secret", other), "untouched\n", 0600);
	assert_int_equal(link(other, in(dir, "access.log", path)), 0);
	assert_open_refused(path, "has 2 names (hard links)");
	assert_file_holds(other, "untouched\n");
}

static void test_a_file_of_another_user_is_refused(void **state)
{
	struct dir *dir = *state;
	if (geteuid() != 0)
		skip();
	char path[PATH_SIZE], error[256];
	write_file(in(dir, "theirs.log", path), "untouched\n", 0666);
	assert_int_equal(chown(path, STRANGER_UID, STRANGER_UID), 0);
	assert_open_refused(path, "is owned by uid 54321; a log must be root's or the user's musicd "
				  "runs as (uid 0)");
	/* The user musicd will run as may own it. */
	log_file_set_owner(STRANGER_UID);
	int fd = -1;
	assert_int_equal(log_file_open(path, &fd, error, sizeof(error)), 0);
	close(fd);
	log_file_set_owner(0);
	assert_open_refused(path, "is owned by uid 54321");
}

static void test_a_name_too_long_or_a_missing_directory_is_refused(void **state)
{
	struct dir *dir = *state;
	char path[PATH_SIZE];
	assert_open_refused(in(dir, "missing/access.log", path),
			    "missing: No such file or directory");
	write_file(in(dir, "file", path), "", 0644);
	assert_open_refused(in(dir, "file/access.log", path), "file: Not a directory");
	char long_name[300];
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_open_refused(in(dir, long_name, path), "File name too long");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_reopen_after_a_rename_writes_to_a_new_file_under_the_same_descriptor,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_a_failed_reopen_names_the_path_and_keeps_the_old_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_new_log_is_made_0640_and_appended_to, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_symbolic_link_as_the_log_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_a_symbolic_link_on_the_way_in_a_directory_others_may_write_is_refused,
			setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_link_only_root_could_make_is_followed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_fifo_is_refused_without_waiting_for_a_reader,
						setup, teardown),
		cmocka_unit_test(test_a_device_or_a_directory_is_refused),
		cmocka_unit_test_setup_teardown(test_a_second_name_for_a_file_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_file_of_another_user_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_name_too_long_or_a_missing_directory_is_refused,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
