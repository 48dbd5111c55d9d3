/*
 * Unit tests for server/media/file_cache.h, on real files in a temporary directory
 * opened with media_open: what a hit hands a response (size, type,
 * validators, header lines, the file's bytes), the checks that keep a changed
 * file from being served stale (a lease, or without one an fstat, on every
 * hit; a stat of the path once per valid interval), the leases themselves (a
 * writer held back until the entry is marked, no lease on a file open for
 * writing, none left behind by evicted entries), a disabled cache, the bound
 * on entries, entries borrowed while evicted, and the closing of entries left
 * unused.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <event2/buffer.h>

#include "http/content_type.h"
#include "media/file_cache.h"
#include "http/response_head.h"
#include "base/clock.h"
#include "base/lru.h"
#include "media/media.h"
#include "http/etag.h"
#include "http/http_date.h"

#define TEMP_TEMPLATE "/tmp/musicd-test-file-cache.XXXXXX"
#define ROOT_COUNT 2
#define TRACK_ROOT 1 /* files go in the second root, so root_index is not 0 by default */
#define CONTENT "ID3 the first version of the track"
#define NEW_CONTENT "ID3 a longer, second version of the track"
#define CACHE_CONTROL "public, max-age=86400"
#define LONG_TIME 3600 /* seconds: an interval no test lasts */
#define MAX_ENTRIES 100
#define LINES_MAX 256
#define POLL_NANOSECONDS (20 * 1000 * 1000)
#define WAIT_LIMIT_SECONDS 3
#define SAME_SHARD_BITS 16

/* One test's files: a temporary directory holding the media roots "one" and "two". */
struct fixture {
	char directory[sizeof(TEMP_TEMPLATE)];
	struct media_roots roots;
};

static void join(char out[PATH_MAX], const char *directory, const char *name)
{
	int length = snprintf(out, PATH_MAX, "%s/%s", directory, name);
	assert_true(length > 0 && length < PATH_MAX);
}

static int setup(void **state)
{
	struct fixture *fixture = calloc(1, sizeof(*fixture));
	assert_non_null(fixture);
	memcpy(fixture->directory, TEMP_TEMPLATE, sizeof(TEMP_TEMPLATE));
	assert_non_null(mkdtemp(fixture->directory));
	char one[PATH_MAX], two[PATH_MAX], error[256];
	join(one, fixture->directory, "one");
	join(two, fixture->directory, "two");
	assert_int_equal(mkdir(one, 0700), 0);
	assert_int_equal(mkdir(two, 0700), 0);
	char *given[ROOT_COUNT] = {one, two};
	assert_int_equal(media_roots_resolve(&fixture->roots, given, ROOT_COUNT, error,
					     sizeof(error)),
			 0);
	*state = fixture;
	return 0;
}

/* Removes every file in directory, then the directory. */
static void remove_tree(const char *directory)
{
	DIR *listing = opendir(directory);
	assert_non_null(listing);
	struct dirent *item;
	while ((item = readdir(listing)) != NULL) {
		if (strcmp(item->d_name, ".") == 0 || strcmp(item->d_name, "..") == 0)
			continue;
		char path[PATH_MAX];
		join(path, directory, item->d_name);
		assert_int_equal(unlink(path), 0);
	}
	closedir(listing);
	assert_int_equal(rmdir(directory), 0);
}

static int teardown(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	join(path, fixture->directory, "one");
	remove_tree(path);
	join(path, fixture->directory, "two");
	remove_tree(path);
	assert_int_equal(rmdir(fixture->directory), 0);
	media_roots_free(&fixture->roots);
	free(fixture);
	return 0;
}

/* The path of name in a root, as the database would store it. */
static void track_path(const struct fixture *fixture, int root, const char *name,
		       char out[PATH_MAX])
{
	join(out, fixture->roots.paths[root], name);
}

static void write_file(const char *path, const char *content)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	assert_int_equal(close(fd), 0);
}

/* Writes a new file beside path and renames it over path: a new inode under the old name. */
static void replace_file(const char *path, const char *content)
{
	char fresh[PATH_MAX];
	int length = snprintf(fresh, sizeof(fresh), "%s.new", path);
	assert_true(length > 0 && length < PATH_MAX);
	write_file(fresh, content);
	assert_int_equal(rename(fresh, path), 0);
}

/* What a request's miss path does: media_open, then file_cache_insert. */
static struct file_cache_entry *open_and_insert(const struct fixture *fixture,
						struct file_cache *cache, const char *path,
						const char *cache_control)
{
	struct opened_file file;
	int error_number;
	assert_int_equal(media_open(&fixture->roots, path, &file, &error_number), MEDIA_OK);
	struct file_cache_entry *entry = file_cache_insert(cache, path, &file, 0, cache_control);
	assert_non_null(entry);
	return entry;
}

/* Inserts path's file and gives the reference back at once. */
static void cache_file(const struct fixture *fixture, struct file_cache *cache, const char *path)
{
	file_cache_release(cache, open_and_insert(fixture, cache, path, NULL));
}

/*
 * What a request does (respond/track.c): file_cache_get, and for a CHECK the
 * disk pool's fstat and stat (run here, on this thread) and file_cache_checked.
 * The entry, borrowed, or NULL for a miss.
 */
static struct file_cache_entry *get(struct file_cache *cache, const char *path,
				    uint64_t generation)
{
	struct file_cache_entry *entry;
	struct file_cache_check asked;
	switch (file_cache_get(cache, path, generation, &entry, &asked)) {
	case FILE_CACHE_MISS:
		return NULL;
	case FILE_CACHE_HIT:
		return entry;
	case FILE_CACHE_CHECK:
		break;
	}
	struct disk_check check = {.fd = asked.fd, .path = asked.path};
	disk_check_run(&check.work);
	return file_cache_checked(cache, entry, &asked, check.fd_ok, &check.fd_info, check.path_ok,
				  &check.path_info)
		       ? entry
		       : NULL;
}

/* Whether get hits; gives back the reference it took. */
static int hits(struct file_cache *cache, const char *path)
{
	struct file_cache_entry *entry = get(cache, path, 0);
	if (entry != NULL)
		file_cache_release(cache, entry);
	return entry != NULL;
}

/* The entry's segment added to a fresh buffer gives exactly content. */
static void assert_segment_holds(const struct file_cache_entry *entry, const char *content)
{
	const struct cached_file *response = file_cache_file(entry);
	size_t size = strlen(content);
	struct evbuffer *buffer = evbuffer_new();
	assert_non_null(buffer);
	assert_int_equal(evbuffer_add_file_segment(buffer, response->segment, 0,
						   (ev_off_t)response->representation.size),
			 0);
	assert_int_equal(evbuffer_get_length(buffer), size);
	char *bytes = malloc(size + 1);
	assert_non_null(bytes);
	assert_int_equal(evbuffer_remove(buffer, bytes, size), (int)size);
	assert_memory_equal(bytes, content, size);
	free(bytes);
	evbuffer_free(buffer);
}

static struct file_cache *new_cache(size_t max_entries, unsigned valid, unsigned inactive)
{
	struct file_cache *cache = file_cache_new(max_entries, valid, inactive, NULL);
	assert_non_null(cache);
	return cache;
}

static void pause_briefly(void)
{
	struct timespec pause = {0, POLL_NANOSECONDS};
	nanosleep(&pause, NULL);
}

static int waited_too_long(const struct timespec *begun)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec - begun->tv_sec >= WAIT_LIMIT_SECONDS;
}

/* Waits until the caches' clock has just ticked, so almost a whole second is ahead. Bounded. */
static int64_t wait_for_next_second(void)
{
	struct timespec begun;
	clock_gettime(CLOCK_MONOTONIC, &begun);
	int64_t start = clock_coarse_seconds();
	while (clock_coarse_seconds() == start) {
		assert_false(waited_too_long(&begun));
		struct timespec pause = {0, 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	return clock_coarse_seconds();
}

/* Waits until the caches' clock reads at least second. Bounded. */
static void wait_until(int64_t second)
{
	struct timespec begun;
	clock_gettime(CLOCK_MONOTONIC, &begun);
	while (clock_coarse_seconds() < second) {
		assert_false(waited_too_long(&begun));
		pause_briefly();
	}
}

/* Sets path's mtime (none if its tv_nsec is UTIME_OMIT); returns the mtime path has then. */
static struct timespec set_mtime(const char *path, struct timespec mtime)
{
	struct stat info;
	assert_int_equal(stat(path, &info), 0);
	if (mtime.tv_nsec == UTIME_OMIT)
		return info.st_mtim;
	struct timespec times[2] = {info.st_atim, mtime};
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
	assert_int_equal(stat(path, &info), 0);
	assert_int_equal(info.st_mtim.tv_sec, mtime.tv_sec);
	assert_int_equal(info.st_mtim.tv_nsec, mtime.tv_nsec);
	return mtime;
}

static struct timespec mtime_of(const char *path)
{
	return set_mtime(path, (struct timespec){0, UTIME_OMIT});
}

/* Overwrites path's bytes in place (same inode, same size), then sets its mtime. */
static void rewrite_same_size(const char *path, struct timespec mtime)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	char same_size[sizeof(CONTENT)];
	memset(same_size, 'Z', sizeof(same_size) - 1);
	assert_int_equal(pwrite(fd, same_size, sizeof(same_size) - 1, 0),
			 (ssize_t)(sizeof(same_size) - 1));
	assert_int_equal(close(fd), 0);
	set_mtime(path, mtime);
}

static void test_get_on_an_empty_cache_misses(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_insert_then_get_hits_the_same_entry(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	struct file_cache_entry *inserted = open_and_insert(fixture, cache, path, NULL);
	file_cache_release(cache, inserted);
	struct file_cache_entry *found = get(cache, path, 0);
	assert_ptr_equal(found, inserted);
	assert_segment_holds(found, CONTENT);
	file_cache_release(cache, found);
	/* Hits again: a hit does not use the entry up. */
	assert_true(hits(cache, path));
	file_cache_free(cache);
}

/* Checks every field against what the file and the pure formatters say. */
static void check_response(const struct fixture *fixture, const char *name, int root,
			   const char *cache_control)
{
	char path[PATH_MAX];
	track_path(fixture, root, name, path);
	write_file(path, CONTENT);
	struct stat info;
	assert_int_equal(stat(path, &info), 0);
	char etag[ETAG_MAX], last_modified[HTTP_DATE_MAX], lines[LINES_MAX];
	etag_format(etag, info.st_mtim, (uint64_t)info.st_size);
	http_date_format(last_modified, info.st_mtim.tv_sec);
	assert_true(response_head_file_lines(lines, sizeof(lines), last_modified, etag, cache_control) > 0);

	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	file_cache_release(cache, open_and_insert(fixture, cache, path, cache_control));
	struct file_cache_entry *entry = get(cache, path, 0);
	assert_non_null(entry);
	const struct cached_file *response = file_cache_file(entry);
	assert_int_equal(response->representation.size, strlen(CONTENT));
	assert_int_equal(response->representation.mtime, info.st_mtim.tv_sec);
	assert_string_equal(response->representation.content_type, "audio/mpeg");
	assert_string_equal(response->representation.etag, etag);
	assert_string_equal(response->representation.last_modified, last_modified);
	assert_string_equal(response->representation.file_lines, lines);
	/* The entry's own copy: the settings snapshot it came from may go before it. */
	if (cache_control == NULL) {
		assert_null(response->representation.cache_control);
	} else {
		assert_string_equal(response->representation.cache_control, cache_control);
		assert_ptr_not_equal(response->representation.cache_control, cache_control);
	}
	assert_string_equal(response->resolved_path, path);
	assert_int_equal(response->root_index, root);
	assert_non_null(response->segment);
	assert_segment_holds(entry, CONTENT);
	file_cache_release(cache, entry);
	file_cache_free(cache);
}

static void test_response_is_that_of_the_file_with_cache_control(void **state)
{
	static const char cache_control[] = CACHE_CONTROL;
	check_response(*state, "a.mp3", 1, cache_control);
}

static void test_response_is_that_of_the_file_without_cache_control(void **state)
{
	check_response(*state, "b.MP3", 0, NULL);
}

/* Inserts path's file as a request of settings generation would; returns the entry. */
static struct file_cache_entry *insert_as(const struct fixture *fixture, struct file_cache *cache,
					  const char *path, uint64_t generation,
					  const char *cache_control)
{
	struct opened_file file;
	int error_number;
	assert_int_equal(media_open(&fixture->roots, path, &file, &error_number), MEDIA_OK);
	struct file_cache_entry *entry =
		file_cache_insert(cache, path, &file, generation, cache_control);
	assert_non_null(entry);
	return entry;
}

static void test_a_reload_makes_entries_of_older_settings_stale(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "reloaded.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	file_cache_release(cache, insert_as(fixture, cache, path, 1, "public, max-age=60"));
	struct file_cache_entry *old = get(cache, path, 1);
	assert_non_null(old);
	assert_non_null(strstr(file_cache_file(old)->representation.file_lines,
			       "Cache-Control: public, max-age=60\r\n"));

	/* A request of generation 2: the entry's lines are of generation 1, so it misses. */
	assert_null(get(cache, path, 2));
	struct file_cache_entry *fresh = insert_as(fixture, cache, path, 2, "no-cache");
	assert_non_null(strstr(file_cache_file(fresh)->representation.file_lines,
			       "Cache-Control: no-cache\r\n"));
	assert_null(strstr(file_cache_file(fresh)->representation.file_lines, "max-age"));
	file_cache_release(cache, fresh);
	struct file_cache_entry *hit = get(cache, path, 2);
	assert_ptr_equal(hit, fresh);
	file_cache_release(cache, hit);
	/* The response still sending with the old lines keeps them whole. */
	assert_non_null(strstr(file_cache_file(old)->representation.file_lines, "max-age=60"));
	assert_segment_holds(old, CONTENT);
	file_cache_release(cache, old);
	file_cache_free(cache);
}

static void test_a_request_older_than_the_entry_leaves_it_cached(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "newer.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	file_cache_release(cache, insert_as(fixture, cache, path, 3, "no-cache"));
	/* A request that began before the reload: not its headers, but not stale either. */
	assert_null(get(cache, path, 2));
	struct file_cache_entry *own = insert_as(fixture, cache, path, 2, "private");
	assert_string_equal(file_cache_file(own)->representation.cache_control, "private");
	file_cache_release(cache, own); /* its own entry: closed here */
	struct file_cache_entry *kept = get(cache, path, 3);
	assert_non_null(kept);
	assert_string_equal(file_cache_file(kept)->representation.cache_control, "no-cache");
	file_cache_release(cache, kept);
	assert_int_equal(file_cache_stats(cache).entries, 1);
	file_cache_free(cache);
}

static void test_content_type_follows_the_extension(void **state)
{
	struct fixture *fixture = *state;
	static const char *const names[] = {"a.flac", "b.ogg", "c.unknown"};
	static const char *const types[] = {"audio/flac", "audio/ogg", CONTENT_TYPE_DEFAULT};
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	for (size_t i = 0; i < 3; i++) {
		char path[PATH_MAX];
		track_path(fixture, TRACK_ROOT, names[i], path);
		write_file(path, CONTENT);
		cache_file(fixture, cache, path);
		struct file_cache_entry *entry = get(cache, path, 0);
		assert_non_null(entry);
		assert_string_equal(file_cache_file(entry)->representation.content_type, types[i]);
		file_cache_release(cache, entry);
	}
	file_cache_free(cache);
}

static void test_inserted_entry_is_usable_before_any_get(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	struct file_cache_entry *entry = open_and_insert(fixture, cache, path, NULL);
	assert_int_equal(file_cache_file(entry)->representation.size, strlen(CONTENT));
	assert_segment_holds(entry, CONTENT);
	file_cache_release(cache, entry);
	file_cache_free(cache);
}

static void test_empty_file_is_cached_with_size_zero(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "empty.mp3", path);
	write_file(path, "");
	struct timespec mtime = mtime_of(path);
	char etag[ETAG_MAX];
	etag_format(etag, mtime, 0);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, path);
	struct file_cache_entry *entry = get(cache, path, 0);
	assert_non_null(entry);
	assert_int_equal(file_cache_file(entry)->representation.size, 0);
	assert_string_equal(file_cache_file(entry)->representation.etag, etag);
	file_cache_release(cache, entry);
	file_cache_free(cache);
}

static void test_file_rewritten_in_place_is_a_miss_on_the_next_get(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, path);
	assert_true(hits(cache, path));
	struct stat before, after;
	assert_int_equal(stat(path, &before), 0);
	write_file(path, NEW_CONTENT); /* O_TRUNC: the same inode */
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino);
	assert_null(get(cache, path, 0));
	/* The caller opens it again, and from then on the new version is served. */
	cache_file(fixture, cache, path);
	struct file_cache_entry *entry = get(cache, path, 0);
	assert_non_null(entry);
	assert_int_equal(file_cache_file(entry)->representation.size, strlen(NEW_CONTENT));
	assert_segment_holds(entry, NEW_CONTENT);
	file_cache_release(cache, entry);
	file_cache_free(cache);
}

static void test_same_size_rewrite_with_another_mtime_second_is_a_miss(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct timespec mtime = set_mtime(path, (struct timespec){1700000000, 500});
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, path);
	mtime.tv_sec += 1;
	rewrite_same_size(path, mtime);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_same_size_rewrite_with_an_mtime_a_nanosecond_on_is_a_miss(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct timespec mtime = set_mtime(path, (struct timespec){1700000000, 500});
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, path);
	mtime.tv_nsec += 1;
	rewrite_same_size(path, mtime);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_size_change_is_a_miss_even_with_the_mtime_put_back(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, path);
	struct timespec mtime = mtime_of(path);
	write_file(path, NEW_CONTENT);
	set_mtime(path, mtime);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_file_replaced_by_rename_is_kept_until_the_path_is_due(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, path);
	replace_file(path, NEW_CONTENT);
	/* Not checked yet: the old file, whole and consistent. */
	struct file_cache_entry *entry = get(cache, path, 0);
	assert_non_null(entry);
	assert_int_equal(file_cache_file(entry)->representation.size, strlen(CONTENT));
	assert_segment_holds(entry, CONTENT);
	file_cache_release(cache, entry);
	file_cache_free(cache);
}

static void test_file_replaced_by_rename_is_a_miss_when_checked_every_time(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, 0, LONG_TIME);
	cache_file(fixture, cache, path);
	assert_true(hits(cache, path));
	replace_file(path, NEW_CONTENT);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_lookalike_replacement_is_a_miss_when_checked(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX], fresh[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	track_path(fixture, TRACK_ROOT, "a.mp3.new", fresh);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, 0, LONG_TIME);
	cache_file(fixture, cache, path);
	/* As a copy that keeps times would leave it: only the inode tells them apart. */
	char same_size[sizeof(CONTENT)];
	memset(same_size, 'Z', sizeof(same_size) - 1);
	same_size[sizeof(same_size) - 1] = '\0';
	write_file(fresh, same_size);
	set_mtime(fresh, mtime_of(path));
	assert_int_equal(rename(fresh, path), 0);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_file_replaced_by_rename_is_a_miss_once_the_interval_passes(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, 1, LONG_TIME);
	int64_t inserted_at = wait_for_next_second();
	cache_file(fixture, cache, path);
	replace_file(path, NEW_CONTENT);
	assert_true(hits(cache, path));
	struct timespec begun;
	clock_gettime(CLOCK_MONOTONIC, &begun);
	int64_t missed_at;
	for (;;) {
		missed_at = clock_coarse_seconds();
		if (!hits(cache, path))
			break;
		assert_false(waited_too_long(&begun));
		pause_briefly();
	}
	/* Checked once the interval has passed, and not later. */
	assert_true(clock_coarse_seconds() - inserted_at >= 1);
	assert_true(missed_at - inserted_at <= 1);
	file_cache_free(cache);
}

static void test_path_is_checked_at_most_once_per_interval(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, 1, LONG_TIME);
	int64_t inserted_at = wait_for_next_second();
	cache_file(fixture, cache, path);
	wait_until(inserted_at + 1);
	assert_true(hits(cache, path)); /* due: checked, and unchanged */
	replace_file(path, NEW_CONTENT);
	assert_true(hits(cache, path)); /* not due again before inserted_at + 2 */
	assert_int_equal(clock_coarse_seconds(), inserted_at + 1);
	file_cache_free(cache);
}

static void test_deleted_file_is_a_miss_when_checked_every_time(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, 0, LONG_TIME);
	cache_file(fixture, cache, path);
	assert_true(hits(cache, path));
	assert_int_equal(unlink(path), 0);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_deleted_file_is_kept_until_the_path_is_due(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, path);
	assert_int_equal(unlink(path), 0);
	struct file_cache_entry *entry = get(cache, path, 0);
	assert_non_null(entry);
	assert_segment_holds(entry, CONTENT);
	file_cache_release(cache, entry);
	file_cache_free(cache);
}

static void test_disabled_cache_gives_a_private_entry_and_never_hits(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(0, LONG_TIME, LONG_TIME);
	struct file_cache_entry *entry = open_and_insert(fixture, cache, path, NULL);
	assert_int_equal(file_cache_file(entry)->representation.size, strlen(CONTENT));
	assert_string_equal(file_cache_file(entry)->representation.content_type, "audio/mpeg");
	assert_segment_holds(entry, CONTENT);
	/* Not even while the inserting caller still holds it. */
	assert_null(get(cache, path, 0));
	file_cache_release(cache, entry);
	assert_null(get(cache, path, 0));
	assert_int_equal(file_cache_stats(cache).entries, 0);
	file_cache_free(cache);
}

static void test_insert_of_a_cached_path_replaces_its_entry(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, path);
	replace_file(path, NEW_CONTENT);
	cache_file(fixture, cache, path);
	struct file_cache_entry *entry = get(cache, path, 0);
	assert_non_null(entry);
	assert_int_equal(file_cache_file(entry)->representation.size, strlen(NEW_CONTENT));
	assert_segment_holds(entry, NEW_CONTENT);
	file_cache_release(cache, entry);
	assert_int_equal(file_cache_stats(cache).entries, 1);
	file_cache_free(cache);
}

static void test_entries_are_bounded_and_the_newest_is_kept(void **state)
{
	struct fixture *fixture = *state;
	enum { MAX = 3, FILES = 10 };
	struct file_cache *cache = new_cache(MAX, LONG_TIME, LONG_TIME);
	char path[PATH_MAX];
	for (int i = 0; i < FILES; i++) {
		char name[32];
		snprintf(name, sizeof(name), "%02d.mp3", i);
		track_path(fixture, TRACK_ROOT, name, path);
		write_file(path, CONTENT);
		cache_file(fixture, cache, path);
		assert_true(file_cache_stats(cache).entries <= MAX);
	}
	struct cache_stats stats = file_cache_stats(cache);
	assert_int_equal(stats.entries, MAX);
	assert_int_equal(stats.evictions + stats.entries, FILES);
	assert_true(hits(cache, path)); /* the last one inserted */
	/* Exactly MAX of them still hit. */
	int found = 0;
	for (int i = 0; i < FILES; i++) {
		char name[32];
		snprintf(name, sizeof(name), "%02d.mp3", i);
		track_path(fixture, TRACK_ROOT, name, path);
		found += hits(cache, path);
	}
	assert_int_equal(found, MAX);
	file_cache_free(cache);
}

/*
 * Names for count tracks whose paths' hashes agree in their low
 * SAME_SHARD_BITS bits: the shard is chosen by the low bits (lru_shard_for),
 * so they share one for any power-of-two number of shards up to that.
 */
static void paths_in_one_shard(const struct fixture *fixture, char paths[][PATH_MAX],
			       size_t count)
{
	const uint64_t mask = (UINT64_C(1) << SAME_SHARD_BITS) - 1;
	size_t found = 0;
	uint64_t low = 0;
	for (unsigned i = 0; found < count; i++) {
		assert_true(i < (64u << SAME_SHARD_BITS)); /* bounded search */
		char name[32];
		snprintf(name, sizeof(name), "%06u.mp3", i);
		track_path(fixture, TRACK_ROOT, name, paths[found]);
		uint64_t hash = lru_hash(paths[found]);
		if (found == 0)
			low = hash & mask;
		if ((hash & mask) == low)
			found++;
	}
	for (size_t i = 0; i < count; i++)
		write_file(paths[i], CONTENT);
}

static void test_full_shard_evicts_its_least_recently_used_entry(void **state)
{
	struct fixture *fixture = *state;
	char paths[3][PATH_MAX];
	paths_in_one_shard(fixture, paths, 3);
	struct file_cache *cache = new_cache(2, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, paths[0]);
	cache_file(fixture, cache, paths[1]);
	/* A hit makes the first the most recently used: the second goes. */
	assert_true(hits(cache, paths[0]));
	cache_file(fixture, cache, paths[2]);
	assert_false(hits(cache, paths[1]));
	assert_true(hits(cache, paths[0]));
	assert_true(hits(cache, paths[2]));
	struct cache_stats stats = file_cache_stats(cache);
	assert_int_equal(stats.entries, 2);
	assert_int_equal(stats.evictions, 1);
	file_cache_free(cache);
}

static void test_entry_borrowed_while_evicted_stays_usable_until_released(void **state)
{
	struct fixture *fixture = *state;
	char first[PATH_MAX], second[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "first.mp3", first);
	track_path(fixture, TRACK_ROOT, "second.mp3", second);
	write_file(first, CONTENT);
	write_file(second, NEW_CONTENT);
	struct file_cache *cache = new_cache(1, LONG_TIME, LONG_TIME);
	struct file_cache_entry *borrowed = open_and_insert(fixture, cache, first, NULL);
	/* A second file in a cache of one evicts the first, still borrowed. */
	cache_file(fixture, cache, second);
	struct cache_stats stats = file_cache_stats(cache);
	assert_int_equal(stats.entries, 1);
	assert_int_equal(stats.evictions, 1);
	assert_null(get(cache, first, 0));
	/* Its response and its open file are intact until released. */
	assert_int_equal(file_cache_file(borrowed)->representation.size, strlen(CONTENT));
	assert_string_equal(file_cache_file(borrowed)->resolved_path, first);
	assert_segment_holds(borrowed, CONTENT);
	file_cache_release(cache, borrowed);
	assert_true(hits(cache, second));
	file_cache_free(cache);
}

static void test_entry_borrowed_by_get_while_evicted_stays_usable(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, path);
	struct file_cache_entry *borrowed = get(cache, path, 0);
	assert_non_null(borrowed);
	/* Rewritten in place: the next get evicts the entry this caller still holds. */
	write_file(path, NEW_CONTENT);
	assert_null(get(cache, path, 0));
	assert_int_equal(file_cache_stats(cache).entries, 0);
	assert_int_equal(file_cache_file(borrowed)->representation.size, strlen(CONTENT));
	assert_non_null(file_cache_file(borrowed)->segment);
	file_cache_release(cache, borrowed);
	file_cache_free(cache);
}

static void test_segment_queued_in_a_buffer_outlives_the_entry(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	struct file_cache_entry *entry = open_and_insert(fixture, cache, path, NULL);
	const struct cached_file *response = file_cache_file(entry);
	struct evbuffer *buffer = evbuffer_new();
	assert_non_null(buffer);
	assert_int_equal(
		evbuffer_add_file_segment(buffer, response->segment, 0, (ev_off_t)response->representation.size),
		0);
	file_cache_release(cache, entry);
	file_cache_free(cache); /* the entry is gone; the buffer's reference is not */
	size_t size = strlen(CONTENT);
	char bytes[sizeof(CONTENT)];
	assert_int_equal(evbuffer_get_length(buffer), size);
	assert_int_equal(evbuffer_remove(buffer, bytes, size), (int)size);
	assert_memory_equal(bytes, CONTENT, size);
	evbuffer_free(buffer);
}

static void test_expire_keeps_entries_used_within_the_inactive_time(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, path);
	file_cache_expire(cache);
	assert_int_equal(file_cache_stats(cache).entries, 1);
	assert_true(hits(cache, path));
	file_cache_free(cache);
}

static void test_expire_closes_entries_unused_for_the_inactive_time(void **state)
{
	struct fixture *fixture = *state;
	char first[PATH_MAX], second[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "first.mp3", first);
	track_path(fixture, TRACK_ROOT, "second.mp3", second);
	write_file(first, CONTENT);
	write_file(second, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, 1);
	int64_t inserted_at = wait_for_next_second();
	cache_file(fixture, cache, first);
	cache_file(fixture, cache, second);
	file_cache_expire(cache);
	assert_int_equal(file_cache_stats(cache).entries, 2);

	struct timespec begun;
	clock_gettime(CLOCK_MONOTONIC, &begun);
	int64_t emptied_at;
	for (;;) {
		emptied_at = clock_coarse_seconds();
		file_cache_expire(cache);
		if (file_cache_stats(cache).entries == 0)
			break;
		assert_false(waited_too_long(&begun));
		pause_briefly();
	}
	/* Closed once unused for the inactive time, and not later. */
	assert_true(clock_coarse_seconds() - inserted_at >= 1);
	assert_true(emptied_at - inserted_at <= 1);
	assert_null(get(cache, first, 0));
	assert_null(get(cache, second, 0));
	file_cache_free(cache);
}

static void test_expire_spares_an_entry_used_recently(void **state)
{
	struct fixture *fixture = *state;
	char idle[PATH_MAX], used[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "idle.mp3", idle);
	track_path(fixture, TRACK_ROOT, "used.mp3", used);
	write_file(idle, CONTENT);
	write_file(used, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, 1);
	int64_t inserted_at = wait_for_next_second();
	cache_file(fixture, cache, used);
	cache_file(fixture, cache, idle);
	wait_until(inserted_at + 1);
	assert_true(hits(cache, used));
	file_cache_expire(cache);
	assert_int_equal(file_cache_stats(cache).entries, 1);
	assert_true(hits(cache, used));
	assert_null(get(cache, idle, 0));
	file_cache_free(cache);
}

/* Leases: hits of a file this process may lease are checked by the lease, not by fstat. */

/* Whether the kernel grants a read lease on a file in directory, tried without file_cache. */
static int leases_possible_in(const char *directory)
{
	struct statfs filesystem;
	assert_int_equal(statfs(directory, &filesystem), 0);
	switch (filesystem.f_type) {
	case EXT4_SUPER_MAGIC:
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case F2FS_SUPER_MAGIC:
	case TMPFS_MAGIC:
		break;
	default:
		return 0; /* file_lease takes none there, by design */
	}
	char path[PATH_MAX];
	join(path, directory, "lease-probe");
	write_file(path, CONTENT);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	int granted = fcntl(fd, F_SETLEASE, F_RDLCK) == 0;
	if (granted)
		assert_int_equal(fcntl(fd, F_SETLEASE, F_UNLCK), 0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(unlink(path), 0);
	return granted;
}

/* Skips the test where the kernel would not grant this process a lease either. */
static void need_leases(const struct fixture *fixture)
{
	if (!leases_possible_in(fixture->roots.paths[TRACK_ROOT])) {
		print_message("leases are not available here; test skipped\n");
		skip();
	}
}

/*
 * Leases this process holds: the "lock:" lines of its descriptors' fdinfo.
 * Not /proc/locks: the kernel lists it a page per read(), and between pages
 * other processes' locks (SQLite's, on a busy machine) shift the listing, so a
 * line can come twice or not at all (5 leases counted where 3 were held).
 */
static int leases_held(void)
{
	DIR *listing = opendir("/proc/self/fdinfo");
	assert_non_null(listing);
	int count = 0;
	struct dirent *item;
	while ((item = readdir(listing)) != NULL) {
		if (item->d_name[0] == '.')
			continue;
		char line[256];
		int fd = openat(dirfd(listing), item->d_name, O_RDONLY | O_CLOEXEC);
		FILE *info = fd < 0 ? NULL : fdopen(fd, "r");
		if (info == NULL) {
			if (fd >= 0)
				close(fd);
			continue; /* a descriptor closed meanwhile */
		}
		while (fgets(line, sizeof(line), info) != NULL)
			if (strncmp(line, "lock:", 5) == 0 && strstr(line, " LEASE ") != NULL)
				count++;
		fclose(info);
	}
	closedir(listing);
	return count;
}

/* Descriptors this process has open. */
static int descriptors_open(void)
{
	DIR *listing = opendir("/proc/self/fd");
	assert_non_null(listing);
	int count = 0;
	struct dirent *item;
	while ((item = readdir(listing)) != NULL) {
		if (item->d_name[0] != '.')
			count++;
	}
	closedir(listing);
	return count - 1; /* the listing's own */
}

/* Caches path and asks for it once: the first hit is what takes a lease. */
static void cache_file_and_hit(const struct fixture *fixture, struct file_cache *cache,
			       const char *path)
{
	cache_file(fixture, cache, path);
	struct file_cache_entry *entry = get(cache, path, 0);
	assert_non_null(entry);
	file_cache_release(cache, entry);
}

static void test_a_file_cached_but_not_yet_asked_for_again_holds_no_lease(void **state)
{
	struct fixture *fixture = *state;
	need_leases(fixture);
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	int before = leases_held();
	cache_file(fixture, cache, path);
	assert_int_equal(file_cache_leased(cache), 0);
	assert_int_equal(leases_held(), before);
	/* Until then a rewrite is still seen, by fstat. */
	write_file(path, NEW_CONTENT);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_a_file_with_two_names_is_checked_by_fstat_not_leased(void **state)
{
	struct fixture *fixture = *state;
	need_leases(fixture);
	char path[PATH_MAX], other_name[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	track_path(fixture, TRACK_ROOT, "a-link.mp3", other_name);
	write_file(path, CONTENT);
	assert_int_equal(link(path, other_name), 0);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	int before = leases_held();
	cache_file_and_hit(fixture, cache, path);
	assert_int_equal(file_cache_leased(cache), 0);
	assert_int_equal(leases_held(), before);
	/* A rewrite through the other name is still seen at once. */
	write_file(other_name, NEW_CONTENT);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_cached_file_holds_a_lease(void **state)
{
	struct fixture *fixture = *state;
	need_leases(fixture);
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	int before = leases_held();
	cache_file_and_hit(fixture, cache, path);
	assert_int_equal(file_cache_leased(cache), 1);
	assert_int_equal(leases_held(), before + 1);
	assert_true(hits(cache, path));
	assert_int_equal(file_cache_leased(cache), 1);
	file_cache_free(cache);
	assert_int_equal(leases_held(), before);
}

static void test_leased_file_is_a_miss_as_soon_as_a_writer_has_opened_it(void **state)
{
	struct fixture *fixture = *state;
	need_leases(fixture);
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file_and_hit(fixture, cache, path);
	assert_int_equal(file_cache_leased(cache), 1);
	/* Nothing written yet: the open alone, once it returns, has marked the entry. */
	int writer = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(writer >= 0);
	assert_null(get(cache, path, 0));
	assert_int_equal(file_cache_leased(cache), 0);
	assert_int_equal(close(writer), 0);
	file_cache_free(cache);
}

static void test_writer_is_held_back_until_the_lease_is_given_up_and_no_longer(void **state)
{
	struct fixture *fixture = *state;
	need_leases(fixture);
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file_and_hit(fixture, cache, path);
	/* A non-blocking open is turned away while the lease is held... */
	int writer = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	assert_int_equal(writer, -1);
	assert_int_equal(errno, EWOULDBLOCK);
	/* ...and let in once the cache has given it up, well before lease-break-time. */
	struct timespec begun;
	clock_gettime(CLOCK_MONOTONIC, &begun);
	while ((writer = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
		assert_int_equal(errno, EWOULDBLOCK);
		assert_false(waited_too_long(&begun));
		pause_briefly();
	}
	assert_null(get(cache, path, 0));
	assert_int_equal(close(writer), 0);
	file_cache_free(cache);
}

static void test_leased_file_rewritten_in_place_with_a_new_length_is_a_miss(void **state)
{
	struct fixture *fixture = *state;
	need_leases(fixture);
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file_and_hit(fixture, cache, path);
	assert_int_equal(file_cache_leased(cache), 1);
	struct stat before, after;
	assert_int_equal(stat(path, &before), 0);
	write_file(path, NEW_CONTENT);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino);
	assert_null(get(cache, path, 0));
	cache_file_and_hit(fixture, cache, path);
	struct file_cache_entry *entry = get(cache, path, 0);
	assert_non_null(entry);
	assert_int_equal(file_cache_file(entry)->representation.size, strlen(NEW_CONTENT));
	assert_segment_holds(entry, NEW_CONTENT);
	file_cache_release(cache, entry);
	assert_int_equal(file_cache_leased(cache), 1);
	file_cache_free(cache);
}

static void test_leased_file_truncated_by_path_is_a_miss(void **state)
{
	struct fixture *fixture = *state;
	need_leases(fixture);
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file_and_hit(fixture, cache, path);
	assert_int_equal(file_cache_leased(cache), 1);
	assert_int_equal(truncate(path, 3), 0); /* no open: truncate breaks the lease itself */
	assert_null(get(cache, path, 0));
	cache_file_and_hit(fixture, cache, path);
	struct file_cache_entry *entry = get(cache, path, 0);
	assert_non_null(entry);
	assert_int_equal(file_cache_file(entry)->representation.size, 3);
	file_cache_release(cache, entry);
	file_cache_free(cache);
}

static void test_file_truncated_to_nothing_through_a_descriptor_is_a_miss(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file_and_hit(fixture, cache, path);
	int writer = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(writer >= 0);
	assert_int_equal(ftruncate(writer, 0), 0);
	assert_int_equal(close(writer), 0);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_rewrite_through_a_hard_link_is_a_miss(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX], other[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	track_path(fixture, TRACK_ROOT, "other-name.mp3", other);
	write_file(path, CONTENT);
	assert_int_equal(link(path, other), 0);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file_and_hit(fixture, cache, path);
	write_file(other, NEW_CONTENT); /* the same inode under another name */
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_file_open_for_writing_when_cached_is_checked_by_fstat_instead(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	int writer = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(writer >= 0);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file(fixture, cache, path);
	/* No lease while a writer has it open; a write through that writer is still seen. */
	assert_int_equal(file_cache_leased(cache), 0);
	assert_true(hits(cache, path));
	assert_int_equal(write(writer, "more", 4), 4);
	assert_null(get(cache, path, 0));
	assert_int_equal(close(writer), 0);
	file_cache_free(cache);
}

static void test_file_open_for_writing_when_cached_is_leased_at_a_later_path_check(void **state)
{
	struct fixture *fixture = *state;
	need_leases(fixture);
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	int writer = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(writer >= 0);
	struct file_cache *cache = new_cache(MAX_ENTRIES, 0, LONG_TIME); /* path due on every hit */
	cache_file(fixture, cache, path);
	assert_int_equal(file_cache_leased(cache), 0);
	assert_true(hits(cache, path));
	assert_int_equal(file_cache_leased(cache), 0); /* still open for writing */
	assert_int_equal(close(writer), 0);
	assert_true(hits(cache, path));
	assert_int_equal(file_cache_leased(cache), 1);
	/* And from then on the lease tells. */
	write_file(path, NEW_CONTENT);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

/* A reader thread: gets path until told to stop, noting hits begun after the writer opened. */
struct reader {
	struct file_cache *cache;
	const char *path;
	_Atomic int *writer_opened, *stop;
	long hits_before, hits_after, gets;
};

static void *read_until_stopped(void *argument)
{
	struct reader *reader = argument;
	while (!atomic_load(reader->stop) && reader->gets < 10 * 1000 * 1000) {
		int opened = atomic_load(reader->writer_opened);
		struct file_cache_entry *entry = get(reader->cache, reader->path, 0);
		reader->gets++;
		if (entry == NULL)
			continue;
		if (opened)
			reader->hits_after++;
		else
			reader->hits_before++;
		file_cache_release(reader->cache, entry);
	}
	return NULL;
}

static void test_gets_begun_after_a_writer_opened_the_file_all_miss_in_every_thread(void **state)
{
	struct fixture *fixture = *state;
	need_leases(fixture);
	enum { READERS = 3 };
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file_and_hit(fixture, cache, path);
	_Atomic int writer_opened = 0, stop = 0;
	struct reader readers[READERS];
	pthread_t threads[READERS];
	for (int i = 0; i < READERS; i++) {
		readers[i] = (struct reader){.cache = cache,
					     .path = path,
					     .writer_opened = &writer_opened,
					     .stop = &stop};
		assert_int_equal(pthread_create(&threads[i], NULL, read_until_stopped, &readers[i]),
				 0);
	}
	pause_briefly(); /* the readers hit meanwhile */
	int writer = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(writer >= 0);
	atomic_store(&writer_opened, 1);
	pause_briefly();
	atomic_store(&stop, 1);
	long hits_before = 0, hits_after = 0;
	for (int i = 0; i < READERS; i++) {
		assert_int_equal(pthread_join(threads[i], NULL), 0);
		hits_before += readers[i].hits_before;
		hits_after += readers[i].hits_after;
	}
	assert_true(hits_before > 0);
	assert_int_equal(hits_after, 0);
	assert_int_equal(close(writer), 0);
	file_cache_free(cache);
}

static void test_mtime_changed_without_a_write_is_a_miss_when_the_path_is_due(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct timespec mtime = set_mtime(path, (struct timespec){1700000000, 500});
	struct file_cache *cache = new_cache(MAX_ENTRIES, 0, LONG_TIME);
	cache_file_and_hit(fixture, cache, path);
	mtime.tv_sec += 1;
	set_mtime(path, mtime);
	assert_null(get(cache, path, 0));
	file_cache_free(cache);
}

static void test_leased_file_with_only_its_mtime_changed_is_kept_until_the_path_is_due(
	void **state)
{
	struct fixture *fixture = *state;
	need_leases(fixture);
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	struct timespec mtime = set_mtime(path, (struct timespec){1700000000, 500});
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	cache_file_and_hit(fixture, cache, path);
	/* Same bytes, so the old validators still name them: like a rename, seen at the check. */
	mtime.tv_sec += 1;
	set_mtime(path, mtime);
	struct file_cache_entry *entry = get(cache, path, 0);
	assert_non_null(entry);
	assert_segment_holds(entry, CONTENT);
	file_cache_release(cache, entry);
	file_cache_free(cache);
}

static void test_disabled_cache_takes_no_lease(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	write_file(path, CONTENT);
	int before = leases_held();
	struct file_cache *cache = new_cache(0, LONG_TIME, LONG_TIME);
	struct file_cache_entry *entry = open_and_insert(fixture, cache, path, NULL);
	assert_int_equal(leases_held(), before);
	assert_int_equal(file_cache_leased(cache), 0);
	file_cache_release(cache, entry);
	file_cache_free(cache);
}

/* Caches count new files, named from first on. */
static void cache_files(const struct fixture *fixture, struct file_cache *cache, int first,
			int count)
{
	for (int i = first; i < first + count; i++) {
		char name[32], path[PATH_MAX];
		snprintf(name, sizeof(name), "%02d.mp3", i);
		track_path(fixture, TRACK_ROOT, name, path);
		write_file(path, CONTENT);
		cache_file_and_hit(fixture, cache, path);
	}
}

static void test_evicted_entries_leave_no_descriptor_or_lease_behind(void **state)
{
	struct fixture *fixture = *state;
	enum { MAX = 3, FILES = 20 };
	int leases_possible = leases_possible_in(fixture->roots.paths[TRACK_ROOT]);
	int descriptors = descriptors_open(), leases = leases_held();
	struct file_cache *cache = new_cache(MAX, LONG_TIME, LONG_TIME);
	cache_files(fixture, cache, 0, FILES);
	assert_int_equal(file_cache_stats(cache).evictions, FILES - MAX);
	assert_int_equal(descriptors_open(), descriptors + MAX);
	assert_int_equal(leases_held(), leases + (leases_possible ? MAX : 0));
	assert_int_equal(file_cache_leased(cache), leases_possible ? MAX : 0);
	file_cache_free(cache);
	assert_int_equal(descriptors_open(), descriptors);
	assert_int_equal(leases_held(), leases);
}

static void test_expired_entries_leave_no_descriptor_or_lease_behind(void **state)
{
	struct fixture *fixture = *state;
	int descriptors = descriptors_open(), leases = leases_held();
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, 1);
	int64_t inserted_at = wait_for_next_second();
	cache_files(fixture, cache, 0, 5);
	wait_until(inserted_at + 2);
	file_cache_expire(cache);
	assert_int_equal(file_cache_stats(cache).entries, 0);
	assert_int_equal(file_cache_leased(cache), 0);
	assert_int_equal(descriptors_open(), descriptors);
	assert_int_equal(leases_held(), leases);
	file_cache_free(cache);
}

static void test_entry_evicted_while_borrowed_gives_up_its_lease_at_once(void **state)
{
	struct fixture *fixture = *state;
	need_leases(fixture);
	char first[PATH_MAX], second[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "first.mp3", first);
	track_path(fixture, TRACK_ROOT, "second.mp3", second);
	write_file(first, CONTENT);
	write_file(second, CONTENT);
	int descriptors = descriptors_open(), leases = leases_held();
	struct file_cache *cache = new_cache(1, LONG_TIME, LONG_TIME);
	struct file_cache_entry *borrowed = open_and_insert(fixture, cache, first, NULL);
	file_cache_release(cache, get(cache, first, 0)); /* its first hit: leased */
	assert_int_equal(leases_held(), leases + 1);
	cache_file_and_hit(fixture, cache, second); /* evicts the first, still borrowed */
	assert_int_equal(leases_held(), leases + 1);
	assert_int_equal(descriptors_open(), descriptors + 2);
	/* Nobody will ask about it again: a writer of the first file is not held back. */
	int writer = open(first, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	assert_true(writer >= 0);
	assert_int_equal(close(writer), 0);
	file_cache_release(cache, borrowed);
	assert_int_equal(descriptors_open(), descriptors + 1);
	file_cache_free(cache);
	assert_int_equal(descriptors_open(), descriptors);
	assert_int_equal(leases_held(), leases);
}

static void test_stats_count_hits_and_misses_exactly(void **state)
{
	struct fixture *fixture = *state;
	char path[PATH_MAX], other[PATH_MAX];
	track_path(fixture, TRACK_ROOT, "a.mp3", path);
	track_path(fixture, TRACK_ROOT, "b.mp3", other);
	write_file(path, CONTENT);
	struct file_cache *cache = new_cache(MAX_ENTRIES, LONG_TIME, LONG_TIME);
	struct cache_stats stats = file_cache_stats(cache);
	assert_int_equal(stats.hits, 0);
	assert_int_equal(stats.misses, 0);
	assert_int_equal(stats.evictions, 0);
	assert_int_equal(stats.entries, 0);
	assert_null(get(cache, path, 0));
	cache_file(fixture, cache, path);
	assert_true(hits(cache, path));
	assert_true(hits(cache, path));
	assert_true(hits(cache, path));
	assert_null(get(cache, other, 0));
	stats = file_cache_stats(cache);
	assert_int_equal(stats.hits, 3);
	assert_int_equal(stats.misses, 2);
	assert_int_equal(stats.evictions, 0);
	assert_int_equal(stats.entries, 1);
	file_cache_free(cache);
}

#define FILE_CACHE_TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		FILE_CACHE_TEST(test_get_on_an_empty_cache_misses),
		FILE_CACHE_TEST(test_insert_then_get_hits_the_same_entry),
		FILE_CACHE_TEST(test_response_is_that_of_the_file_with_cache_control),
		FILE_CACHE_TEST(test_response_is_that_of_the_file_without_cache_control),
		FILE_CACHE_TEST(test_a_reload_makes_entries_of_older_settings_stale),
		FILE_CACHE_TEST(test_a_request_older_than_the_entry_leaves_it_cached),
		FILE_CACHE_TEST(test_content_type_follows_the_extension),
		FILE_CACHE_TEST(test_inserted_entry_is_usable_before_any_get),
		FILE_CACHE_TEST(test_empty_file_is_cached_with_size_zero),
		FILE_CACHE_TEST(test_file_rewritten_in_place_is_a_miss_on_the_next_get),
		FILE_CACHE_TEST(test_same_size_rewrite_with_another_mtime_second_is_a_miss),
		FILE_CACHE_TEST(test_same_size_rewrite_with_an_mtime_a_nanosecond_on_is_a_miss),
		FILE_CACHE_TEST(test_size_change_is_a_miss_even_with_the_mtime_put_back),
		FILE_CACHE_TEST(test_file_replaced_by_rename_is_kept_until_the_path_is_due),
		FILE_CACHE_TEST(test_file_replaced_by_rename_is_a_miss_when_checked_every_time),
		FILE_CACHE_TEST(test_lookalike_replacement_is_a_miss_when_checked),
		FILE_CACHE_TEST(test_file_replaced_by_rename_is_a_miss_once_the_interval_passes),
		FILE_CACHE_TEST(test_path_is_checked_at_most_once_per_interval),
		FILE_CACHE_TEST(test_deleted_file_is_a_miss_when_checked_every_time),
		FILE_CACHE_TEST(test_deleted_file_is_kept_until_the_path_is_due),
		FILE_CACHE_TEST(test_disabled_cache_gives_a_private_entry_and_never_hits),
		FILE_CACHE_TEST(test_insert_of_a_cached_path_replaces_its_entry),
		FILE_CACHE_TEST(test_entries_are_bounded_and_the_newest_is_kept),
		FILE_CACHE_TEST(test_full_shard_evicts_its_least_recently_used_entry),
		FILE_CACHE_TEST(test_entry_borrowed_while_evicted_stays_usable_until_released),
		FILE_CACHE_TEST(test_entry_borrowed_by_get_while_evicted_stays_usable),
		FILE_CACHE_TEST(test_segment_queued_in_a_buffer_outlives_the_entry),
		FILE_CACHE_TEST(test_expire_keeps_entries_used_within_the_inactive_time),
		FILE_CACHE_TEST(test_expire_closes_entries_unused_for_the_inactive_time),
		FILE_CACHE_TEST(test_expire_spares_an_entry_used_recently),
		FILE_CACHE_TEST(test_a_file_cached_but_not_yet_asked_for_again_holds_no_lease),
		FILE_CACHE_TEST(test_a_file_with_two_names_is_checked_by_fstat_not_leased),
		FILE_CACHE_TEST(test_cached_file_holds_a_lease),
		FILE_CACHE_TEST(test_leased_file_is_a_miss_as_soon_as_a_writer_has_opened_it),
		FILE_CACHE_TEST(test_writer_is_held_back_until_the_lease_is_given_up_and_no_longer),
		FILE_CACHE_TEST(test_leased_file_rewritten_in_place_with_a_new_length_is_a_miss),
		FILE_CACHE_TEST(test_leased_file_truncated_by_path_is_a_miss),
		FILE_CACHE_TEST(test_file_truncated_to_nothing_through_a_descriptor_is_a_miss),
		FILE_CACHE_TEST(test_rewrite_through_a_hard_link_is_a_miss),
		FILE_CACHE_TEST(test_file_open_for_writing_when_cached_is_checked_by_fstat_instead),
		FILE_CACHE_TEST(test_file_open_for_writing_when_cached_is_leased_at_a_later_path_check),
		FILE_CACHE_TEST(
			test_gets_begun_after_a_writer_opened_the_file_all_miss_in_every_thread),
		FILE_CACHE_TEST(test_mtime_changed_without_a_write_is_a_miss_when_the_path_is_due),
		FILE_CACHE_TEST(test_leased_file_with_only_its_mtime_changed_is_kept_until_the_path_is_due),
		FILE_CACHE_TEST(test_disabled_cache_takes_no_lease),
		FILE_CACHE_TEST(test_evicted_entries_leave_no_descriptor_or_lease_behind),
		FILE_CACHE_TEST(test_expired_entries_leave_no_descriptor_or_lease_behind),
		FILE_CACHE_TEST(test_entry_evicted_while_borrowed_gives_up_its_lease_at_once),
		FILE_CACHE_TEST(test_stats_count_hits_and_misses_exactly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
