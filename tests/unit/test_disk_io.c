/*
 * Unit tests for server/media/disk_io.h, on real files in a temporary
 * directory: the residency check tells cached from evicted bytes (and never
 * reads); a read-ahead brings a window in, looking at its pages or walking
 * them, and seeing them leaves each to be touched once, by its send; an open resolves below the roots
 * and reports the filesystem; a check fstats and stats; the lanes follow the
 * roots as written; segments close their descriptors through the pool, off
 * the caller's thread; and the work is handed back through the owner's event.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "media/disk_io.h"

#define TEMP_TEMPLATE "/tmp/musicd-test-disk-io.XXXXXX"
#define FILE_SIZE (4 * 1024 * 1024)
#define WINDOW (1024 * 1024)
#define WAIT_STEP_NS (1000 * 1000)
#define WAIT_LIMIT_STEPS 5000
#define ACTIVATION_TRIES 3

struct fixture {
	char directory[sizeof(TEMP_TEMPLATE)];
	char track[PATH_MAX];
	struct media_roots roots;
	struct disk_io *io;
	struct event_base *base;
};

static void write_track(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	char block[65536];
	for (size_t i = 0; i < sizeof(block); i++)
		block[i] = (char)(i * 7);
	for (size_t written = 0; written < FILE_SIZE; written += sizeof(block))
		assert_int_equal(write(fd, block, sizeof(block)), (ssize_t)sizeof(block));
	assert_int_equal(fsync(fd), 0); /* clean pages: POSIX_FADV_DONTNEED can drop them */
	assert_int_equal(close(fd), 0);
}

static int setup(void **state)
{
	struct fixture *fixture = calloc(1, sizeof(*fixture));
	assert_non_null(fixture);
	memcpy(fixture->directory, TEMP_TEMPLATE, sizeof(TEMP_TEMPLATE));
	assert_non_null(mkdtemp(fixture->directory));
	snprintf(fixture->track, sizeof(fixture->track), "%s/track.mp3", fixture->directory);
	write_track(fixture->track);
	char error[256];
	char *given[] = {fixture->directory};
	assert_int_equal(media_roots_resolve(&fixture->roots, given, 1, error, sizeof(error)), 0);
	struct disk_io_limits limits = {.threads = 2, .root_threads = 2, .queue = 8};
	fixture->io = disk_io_new(&limits, 1, error, sizeof(error));
	assert_non_null(fixture->io);
	evthread_use_pthreads();
	fixture->base = event_base_new();
	assert_non_null(fixture->base);
	*state = fixture;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fixture = *state;
	disk_io_free(fixture->io);
	event_base_free(fixture->base);
	media_roots_free(&fixture->roots);
	unlink(fixture->track);
	assert_int_equal(rmdir(fixture->directory), 0);
	free(fixture);
	return 0;
}

static int open_track(const struct fixture *fixture)
{
	int fd = open(fixture->track, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void evict(int fd)
{
	assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
}

/* The owner's side of a piece of work: its event, run on the test's loop until delivered. */
static int delivered;

static void on_delivered(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	delivered++;
}

static void run_on_pool(struct fixture *fixture, struct disk_work *work, disk_work_fn run,
			unsigned lane, enum task_kind kind)
{
	struct event *delivery = event_new(fixture->base, -1, 0, on_delivered, NULL);
	assert_non_null(delivery);
	work->delivery = delivery;
	int before = delivered;
	assert_int_equal(disk_io_submit(fixture->io, work, run, lane, kind), 0);
	for (int i = 0; delivered == before && i < WAIT_LIMIT_STEPS; i++) {
		event_base_loop(fixture->base, EVLOOP_NONBLOCK);
		struct timespec pause = {0, WAIT_STEP_NS};
		nanosleep(&pause, NULL);
	}
	assert_int_equal(delivered, before + 1);
	event_free(delivery);
}

/* The track as the disk work knows it (its segment owns it; freeing the segment closes fd). */
struct tracked {
	struct evbuffer_file_segment *segment;
	struct disk_file *file;
	int fd;
};

static struct tracked track_open(const struct fixture *fixture)
{
	struct tracked track = {.fd = open_track(fixture)};
	track.segment = disk_io_segment_new(NULL, track.fd, FILE_SIZE, 0, &track.file);
	assert_non_null(track.segment);
	assert_int_equal(disk_file_fd(track.file), track.fd);
	return track;
}

static void test_evicted_bytes_are_not_cached_and_checking_reads_nothing(void **state)
{
	struct fixture *fixture = *state;
	struct tracked track = track_open(fixture);
	evict(track.fd);
	assert_int_equal(disk_residency(track.file, 0, WINDOW), DISK_NOT_CACHED);
	assert_int_equal(disk_residency(track.file, FILE_SIZE - WINDOW, WINDOW), DISK_NOT_CACHED);
	assert_int_equal(disk_residency(track.file, 5000, 10), DISK_NOT_CACHED); /* one page */
	/* Asking did not bring anything in. */
	assert_int_equal(disk_residency(track.file, 0, WINDOW), DISK_NOT_CACHED);
	assert_int_equal(disk_residency(track.file, 0, 0), DISK_CACHED); /* nothing to send */
	evbuffer_file_segment_free(track.segment);
}

static void test_a_read_ahead_brings_exactly_its_window_in(void **state)
{
	struct fixture *fixture = *state;
	struct tracked track = track_open(fixture);
	evict(track.fd);
	struct disk_read read = {.fd = track.fd, .offset = WINDOW, .length = WINDOW};
	run_on_pool(fixture, &read.work, disk_read_run, 0, TASK_CONTINUE);
	assert_false(read.work.skipped);
	assert_int_equal(read.error_number, 0);
	assert_int_equal(read.read, WINDOW);
	assert_int_equal(disk_residency(track.file, WINDOW, WINDOW), DISK_CACHED);
	assert_int_equal(disk_residency(track.file, WINDOW + 100, 5000), DISK_CACHED); /* unaligned */
	assert_int_equal(disk_residency(track.file, 2 * WINDOW, WINDOW), DISK_NOT_CACHED);
	/* The last, partial page of a range counts. */
	assert_int_equal(disk_residency(track.file, 2 * WINDOW - 1, 2), DISK_NOT_CACHED);
	/* One page in memory is enough for a range within it, and for no more. */
	evict(track.fd);
	char byte;
	assert_int_equal(pread(track.fd, &byte, 1, 0), 1);
	assert_int_equal(disk_residency(track.file, 0, 2), DISK_CACHED);
	assert_int_equal(disk_residency(track.file, 3 * WINDOW, WINDOW), DISK_NOT_CACHED);
	struct metrics_disk_snapshot stats;
	disk_io_collect(fixture->io, &stats);
	assert_int_equal(stats.read_ahead_bytes, WINDOW);
	assert_int_equal(stats.read_errors, 0);
	evbuffer_file_segment_free(track.segment);
}

/* Given the file, a read waits for the window's last page and looks at the rest: the same. */
static void test_a_read_that_can_see_the_pages_brings_exactly_its_window_in(void **state)
{
	struct fixture *fixture = *state;
	struct tracked track = track_open(fixture);
	evict(track.fd);
	struct disk_read read = {.fd = track.fd, .file = track.file, .offset = WINDOW + 4096 + 7,
				 .length = WINDOW, .first = true};
	run_on_pool(fixture, &read.work, disk_read_run, 0, TASK_CONTINUE);
	assert_int_equal(read.error_number, 0);
	assert_int_equal(read.read, WINDOW);
	assert_int_equal(disk_residency(track.file, read.offset, WINDOW), DISK_CACHED);
	assert_int_equal(disk_residency(track.file, 3 * WINDOW, WINDOW), DISK_NOT_CACHED);
	/* Past the end: what there is, as without the file. */
	read = (struct disk_read){.fd = track.fd, .file = track.file, .offset = FILE_SIZE - 100,
				  .length = WINDOW};
	run_on_pool(fixture, &read.work, disk_read_run, 0, TASK_CONTINUE);
	assert_int_equal(read.error_number, 0);
	assert_int_equal(read.read, 100);
	/* A window whose last page is in and the rest not is read whole all the same. */
	evict(track.fd);
	assert_int_equal(posix_fadvise(track.fd, 0, 0, POSIX_FADV_RANDOM), 0); /* this page only: */
	char byte;
	assert_int_equal(pread(track.fd, &byte, 1, 2 * WINDOW - 1), 1);
	assert_int_equal(disk_residency(track.file, WINDOW, WINDOW), DISK_NOT_CACHED);
	read = (struct disk_read){.fd = track.fd, .file = track.file, .offset = WINDOW,
				  .length = WINDOW};
	run_on_pool(fixture, &read.work, disk_read_run, 0, TASK_CONTINUE);
	assert_int_equal(read.read, WINDOW);
	assert_int_equal(disk_residency(track.file, WINDOW, WINDOW), DISK_CACHED);
	struct metrics_disk_snapshot stats;
	disk_io_collect(fixture->io, &stats);
	assert_int_equal(stats.read_ahead_bytes, 2 * WINDOW + 100);
	evbuffer_file_segment_free(track.segment);
}

/* The machine's count of pages moved to the active list (/proc/vmstat pgactivate); -1: none. */
static long long pages_activated(void)
{
	FILE *vmstat = fopen("/proc/vmstat", "r");
	if (vmstat == NULL)
		return -1;
	char name[64];
	long long value, found = -1;
	while (fscanf(vmstat, "%63s %lld", name, &value) == 2) {
		if (strcmp(name, "pgactivate") == 0) {
			found = value;
			break;
		}
	}
	fclose(vmstat);
	return found;
}

/*
 * Pages the kernel activated while the whole track was read in (read.file as
 * given) and then sent once, as the loop sends it: a page touched twice goes to
 * the active list.
 */
static long long activated_by_read_and_send(struct fixture *fixture, struct tracked *track,
					    struct disk_file *file)
{
	evict(track->fd);
	long long before = pages_activated();
	struct disk_read read = {.fd = track->fd, .file = file, .length = FILE_SIZE};
	run_on_pool(fixture, &read.work, disk_read_run, 0, TASK_CONTINUE);
	assert_int_equal(read.read, FILE_SIZE);
	int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(null_fd >= 0);
	off_t position = 0;
	assert_int_equal(sendfile(null_fd, track->fd, &position, FILE_SIZE), FILE_SIZE);
	close(null_fd);
	return pages_activated() - before;
}

/* Seeing the pages, a read touches only the last one: its send is each page's first touch. */
static void test_a_read_that_sees_the_pages_leaves_them_off_the_active_list(void **state)
{
	struct fixture *fixture = *state;
	struct tracked track = track_open(fixture);
	long long pages = FILE_SIZE / sysconf(_SC_PAGESIZE);
	if (pages_activated() < 0) {
		evbuffer_file_segment_free(track.segment);
		skip(); /* no /proc/vmstat pgactivate here */
	}
	/* The control: walked by the read, then sent, every page is touched twice. */
	long long walked = activated_by_read_and_send(fixture, &track, NULL);
	if (walked < pages / 2) {
		evbuffer_file_segment_free(track.segment);
		skip(); /* this kernel does not count what the test looks at */
	}
	/* The count is the machine's: the fewest of a few tries, in case another process (this
	 * test's TSan twin runs beside it) activated pages at the same moment. */
	long long seen = LLONG_MAX;
	for (int attempt = 0; attempt < ACTIVATION_TRIES && seen >= pages / 4; attempt++) {
		long long activated = activated_by_read_and_send(fixture, &track, track.file);
		seen = activated < seen ? activated : seen;
	}
	evbuffer_file_segment_free(track.segment);
	if (seen >= pages / 4)
		fail_msg("%lld of %lld pages activated (walked: %lld)", seen, pages, walked);
}

static void test_a_read_past_the_end_reads_what_there_is(void **state)
{
	struct fixture *fixture = *state;
	int fd = open_track(fixture);
	struct disk_read read = {.fd = fd, .offset = FILE_SIZE - 100, .length = WINDOW};
	run_on_pool(fixture, &read.work, disk_read_run, 0, TASK_START);
	assert_int_equal(read.error_number, 0);
	assert_int_equal(read.read, 100);
	close(fd);
}

static void test_a_copy_reads_its_range_into_memory_and_no_further(void **state)
{
	struct fixture *fixture = *state;
	int fd = open_track(fixture);
	static char into[WINDOW + 1];
	into[WINDOW - 100] = 'x'; /* past the end of the file: never written */
	struct disk_read read = {.fd = fd, .offset = 4097, .length = 100000, .into = into};
	run_on_pool(fixture, &read.work, disk_read_run, 0, TASK_CONTINUE);
	assert_int_equal(read.error_number, 0);
	assert_int_equal(read.read, 100000);
	for (size_t i = 0; i < 100000; i++)
		assert_int_equal(into[i], (char)(((4097 + i) % 65536) * 7));
	read = (struct disk_read){.fd = fd, .offset = FILE_SIZE - 100, .length = WINDOW,
				  .into = into};
	run_on_pool(fixture, &read.work, disk_read_run, 0, TASK_CONTINUE);
	assert_int_equal(read.error_number, 0);
	assert_int_equal(read.read, 100);
	assert_int_equal(into[WINDOW - 100], 'x');
	struct metrics_disk_snapshot stats;
	disk_io_collect(fixture->io, &stats);
	assert_int_equal(stats.read_ahead_bytes, 0); /* a copy brings nothing in ahead */
	close(fd);
}

static void test_a_failed_read_says_why(void **state)
{
	struct fixture *fixture = *state;
	int fd = open(fixture->directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	struct disk_read read = {.fd = fd, .offset = 0, .length = WINDOW};
	run_on_pool(fixture, &read.work, disk_read_run, 0, TASK_START);
	assert_int_not_equal(read.error_number, 0);
	struct metrics_disk_snapshot stats;
	disk_io_collect(fixture->io, &stats);
	assert_int_equal(stats.read_errors, 1);
	close(fd);
}

static void test_an_open_resolves_below_a_root_and_knows_its_filesystem(void **state)
{
	struct fixture *fixture = *state;
	struct disk_open open = {.roots = &fixture->roots};
	snprintf(open.path, sizeof(open.path), "%s", fixture->track);
	run_on_pool(fixture, &open.work, disk_open_run, 0, TASK_START);
	assert_int_equal(open.status, MEDIA_OK);
	assert_int_equal(open.file.size, FILE_SIZE);
	assert_int_equal(open.file.root_index, 0);
	struct stat info;
	assert_int_equal(fstat(open.file.fd, &info), 0);
	assert_int_equal(info.st_ino, open.file.inode);
	disk_io_close(NULL, open.file.fd, 0);

	struct disk_open outside = {.roots = &fixture->roots};
	snprintf(outside.path, sizeof(outside.path), "/etc/passwd");
	run_on_pool(fixture, &outside.work, disk_open_run, DISK_LANE_OTHER(1), TASK_START);
	assert_int_equal(outside.status, MEDIA_OUTSIDE_ROOTS);
}

static void test_a_check_stats_the_descriptor_and_the_path(void **state)
{
	struct fixture *fixture = *state;
	int fd = open_track(fixture);
	struct disk_check check = {.fd = fd, .path = fixture->track};
	run_on_pool(fixture, &check.work, disk_check_run, 0, TASK_START);
	assert_true(check.fd_ok);
	assert_true(check.path_ok);
	assert_int_equal(check.fd_info.st_ino, check.path_info.st_ino);
	struct disk_check gone = {.fd = -1, .path = "/nonexistent/track.mp3"};
	run_on_pool(fixture, &gone.work, disk_check_run, 0, TASK_START);
	assert_false(gone.fd_ok);
	assert_false(gone.path_ok);
	close(fd);
}

static void test_paths_take_their_roots_lane_as_written(void **state)
{
	struct fixture *fixture = *state;
	assert_int_equal(disk_io_lane_of_path(&fixture->roots, fixture->track), 0);
	assert_int_equal(disk_io_lane_of_path(&fixture->roots, "/srv/elsewhere/track.mp3"),
			 DISK_LANE_OTHER(1));
	assert_int_equal(DISK_LANE_SPOOL(1), 1);
	assert_int_equal(DISK_LANES(1), 3);
}

/* Whether fd is open in this process. */
static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

static void test_a_segment_closes_its_descriptor_on_the_pool(void **state)
{
	struct fixture *fixture = *state;
	int fd = open_track(fixture);
	struct evbuffer_file_segment *segment =
		disk_io_segment_new(fixture->io, fd, FILE_SIZE, 0, &(struct disk_file *){NULL});
	assert_non_null(segment);
	struct evbuffer *output = evbuffer_new();
	assert_int_equal(evbuffer_set_flags(output, EVBUFFER_FLAG_DRAINS_TO_FD), 0);
	assert_int_equal(evbuffer_add_file_segment(output, segment, 0, 100), 0);
	evbuffer_file_segment_free(segment);
	assert_true(is_open(fd)); /* the buffer still holds it */
	evbuffer_free(output);
	assert_true(is_open(fd)); /* one file waits for its lane's batch ... */
	disk_io_flush_closes(fixture->io); /* ... until the sweep hands it on */
	struct metrics_disk_snapshot stats = {0};
	for (int i = 0; (is_open(fd) || stats.lane[0].finished == 0) && i < WAIT_LIMIT_STEPS; i++) {
		struct timespec pause = {0, WAIT_STEP_NS};
		nanosleep(&pause, NULL);
		disk_io_collect(fixture->io, &stats);
	}
	assert_false(is_open(fd));
	assert_true(stats.lane[0].finished >= 1); /* by its lane's closing task */
}

static void test_a_batch_of_closes_wakes_its_lane_without_a_sweep(void **state)
{
	struct fixture *fixture = *state;
	int fds[DISK_CLOSE_BATCH];
	for (int i = 0; i < DISK_CLOSE_BATCH; i++)
		fds[i] = open_track(fixture);
	unsigned long long first_ms = clock_now_ms();
	for (int i = 0; i < DISK_CLOSE_BATCH - 1; i++)
		disk_io_close(fixture->io, fds[i], 0);
	/* Fewer than a batch, none old, they wait (unless this thread was held off past the age
	 * that hands them on, which a loaded machine can do). */
	if (clock_now_ms() - first_ms < DISK_CLOSE_WAIT_MS)
		assert_true(is_open(fds[0]));
	disk_io_close(fixture->io, fds[DISK_CLOSE_BATCH - 1], 0);
	int open_left = DISK_CLOSE_BATCH;
	for (int i = 0; open_left > 0 && i < WAIT_LIMIT_STEPS; i++) {
		struct timespec pause = {0, WAIT_STEP_NS};
		nanosleep(&pause, NULL);
		open_left = 0;
		for (int j = 0; j < DISK_CLOSE_BATCH; j++)
			open_left += is_open(fds[j]);
	}
	assert_int_equal(open_left, 0);
}

static void test_a_stopped_pool_skips_and_refuses(void **state)
{
	struct fixture *fixture = *state;
	assert_int_equal(disk_io_quiesce(fixture->io, 1000), 0);
	struct disk_read read = {.fd = -1, .length = 1};
	assert_int_equal(disk_io_submit(fixture->io, &read.work, disk_read_run, 0, TASK_START), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_evicted_bytes_are_not_cached_and_checking_reads_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_read_ahead_brings_exactly_its_window_in, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
		    test_a_read_that_can_see_the_pages_brings_exactly_its_window_in, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_a_read_that_sees_the_pages_leaves_them_off_the_active_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_read_past_the_end_reads_what_there_is, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_copy_reads_its_range_into_memory_and_no_further,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_failed_read_says_why, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_an_open_resolves_below_a_root_and_knows_its_filesystem, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_check_stats_the_descriptor_and_the_path, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_paths_take_their_roots_lane_as_written, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_a_segment_closes_its_descriptor_on_the_pool,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_batch_of_closes_wakes_its_lane_without_a_sweep,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_stopped_pool_skips_and_refuses, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
