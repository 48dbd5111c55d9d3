/*
 * Unit tests for server/db/lookup_cache.h: mid -> document answers (hit, miss,
 * and "no such document"; errors never kept), a document with an
 * unterminated text not kept, the document's ETag kept beside the path and
 * the GridFS file, mid -> GridFS file answers (every
 * field of struct gridfs_entry back exactly, under the TTL of found paths,
 * evicted like any entry, copied out consistently under concurrent puts), a cache
 * disabled by its settings, entries replaced by a later put, both TTLs
 * (against the cache's own clock, seconds of CLOCK_MONOTONIC_COARSE), the
 * bound on entries, and the counters.
 */
#include <pthread.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "db/lookup_cache.h"
#include "base/clock.h"
#include "base/lru.h"

#define MID "65f0c0ffee0000000000abcd"
#define OTHER_MID "65f0c0ffee0000000000abce"
#define PATH "/music/Artist/Album/01 Track.mp3"
#define OTHER_PATH "/music/Artist/Album/02 Other.flac"
#define PATH_SIZE 4096
#define TTL 30
#define NEGATIVE_TTL 5
#define POLL_NANOSECONDS (20 * 1000 * 1000)
#define WAIT_LIMIT_SECONDS 3
#define SAME_SHARD_BITS 16

/* What the cache answers for a mid, as these tests compare it. */
enum cached { CACHE_MISS, CACHE_PATH, CACHE_NEGATIVE, CACHE_GRIDFS };

/* A document (malloc'd, the caller frees it) of path and ETag, each NULL for none. */
static struct track_document *document_of(const char *path, const char *etag)
{
	struct track_document *document = calloc(1, sizeof(*document));
	assert_non_null(document);
	if (path != NULL)
		snprintf(document->path, sizeof(document->path), "%s", path);
	if (etag != NULL)
		snprintf(document->fields.etag, sizeof(document->fields.etag), "%s", etag);
	return document;
}

/* Keeps mid -> path with its document's ETag (NULL: none), or no such document (path NULL). */
static void put_tagged(struct lookup_cache *cache, const char *mid, const char *path,
		       const char *etag)
{
	if (path == NULL) {
		lookup_cache_put(cache, mid, LOOKUP_NOT_FOUND, NULL);
		return;
	}
	struct track_document *document = document_of(path, etag);
	lookup_cache_put(cache, mid, LOOKUP_FOUND, document);
	free(document);
}

static void put_path(struct lookup_cache *cache, const char *mid, const char *path)
{
	put_tagged(cache, mid, path, NULL);
}

/* Keeps mid -> a GridFS file. */
static void put_gridfs(struct lookup_cache *cache, const char *mid, const struct gridfs_entry *file)
{
	struct track_document *document = document_of(NULL, NULL);
	document->gridfs = *file;
	lookup_cache_put(cache, mid, LOOKUP_GRIDFS, document);
	free(document);
}

/*
 * What the cache answers for mid, the path (and the document's ETag, when
 * etag_out is not NULL) or the GridFS file (when gridfs_out is not NULL)
 * copied out.
 */
static enum cached get_track_into(struct lookup_cache *cache, const char *mid, char *path_out,
				  size_t path_size, char etag_out[ETAG_MAX],
				  struct gridfs_entry *gridfs_out)
{
	struct track_document *document = document_of(NULL, NULL);
	enum lookup_status found = LOOKUP_FAILED;
	enum cached result = CACHE_MISS;
	if (lookup_cache_get(cache, mid, &found, document)) {
		switch (found) {
		case LOOKUP_FOUND:
			assert_true(strlen(document->path) < path_size);
			strcpy(path_out, document->path);
			if (etag_out != NULL)
				strcpy(etag_out, document->fields.etag);
			result = CACHE_PATH;
			break;
		case LOOKUP_GRIDFS:
			if (gridfs_out != NULL)
				*gridfs_out = document->gridfs;
			result = CACHE_GRIDFS;
			break;
		case LOOKUP_NOT_FOUND:
			result = CACHE_NEGATIVE;
			break;
		default:
			fail_msg("%s: the cache gave back status %d", mid, found);
		}
	}
	free(document);
	return result;
}

/* The ObjectId-shaped mid number i: 24 hexadecimal digits. */
static void mid_of(char out[25], unsigned i)
{
	snprintf(out, 25, "65f0c0ffee00000000%06x", i);
}

static void pause_briefly(void)
{
	struct timespec pause = {0, POLL_NANOSECONDS};
	nanosleep(&pause, NULL);
}

/*
 * Waits until the cache's clock has just ticked, so the second that follows
 * is almost all ahead of the caller. Bounded.
 */
static int64_t wait_for_next_second(void)
{
	int64_t start = clock_coarse_seconds();
	struct timespec begun;
	clock_gettime(CLOCK_MONOTONIC, &begun);
	for (;;) {
		struct timespec pause = {0, 1000 * 1000};
		nanosleep(&pause, NULL);
		int64_t now = clock_coarse_seconds();
		if (now != start)
			return now;
		struct timespec current;
		clock_gettime(CLOCK_MONOTONIC, &current);
		assert_true(current.tv_sec - begun.tv_sec < WAIT_LIMIT_SECONDS);
	}
}

/*
 * Polls get until it answers something other than expected; returns that
 * answer, and in *seen_at the clock's second just before the get that gave it.
 * Bounded.
 */
static enum cached wait_for_change(struct lookup_cache *cache, const char *mid,
						enum cached expected,
						int64_t *seen_at)
{
	char path[PATH_SIZE], etag[ETAG_MAX];
	struct gridfs_entry file;
	struct timespec begun;
	clock_gettime(CLOCK_MONOTONIC, &begun);
	for (;;) {
		*seen_at = clock_coarse_seconds();
		enum cached result =
			get_track_into(cache, mid, path, sizeof(path), etag, &file);
		if (result != expected)
			return result;
		struct timespec current;
		clock_gettime(CLOCK_MONOTONIC, &current);
		if (current.tv_sec - begun.tv_sec >= WAIT_LIMIT_SECONDS)
			return result;
		pause_briefly();
	}
}

/* lookup_cache_get_track for a path alone (a GridFS entry misses). */
static enum cached get_path(struct lookup_cache *cache, const char *mid,
					 char *path_out, size_t path_size)
{
	return get_track_into(cache, mid, path_out, path_size, NULL, NULL);
}

/* lookup_cache_get_track for a path and its ETag. */
static enum cached get_tagged(struct lookup_cache *cache, const char *mid,
					   char *path_out, size_t path_size, char etag_out[ETAG_MAX])
{
	return get_track_into(cache, mid, path_out, path_size, etag_out, NULL);
}

static struct lookup_cache *new_cache(size_t max_entries, unsigned ttl, unsigned negative_ttl)
{
	struct lookup_cache *cache = lookup_cache_new(max_entries, ttl, negative_ttl);
	assert_non_null(cache);
	return cache;
}

static void test_get_on_an_empty_cache_misses(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char path[PATH_SIZE];
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_MISS);
	lookup_cache_free(cache);
}

static void test_put_then_get_hits_and_copies_the_path(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char path[PATH_SIZE];
	memset(path, 'X', sizeof(path));
	put_path(cache, MID, PATH);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, PATH);
	/* And again: a hit does not use the entry up. */
	memset(path, 'X', sizeof(path));
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, PATH);
	lookup_cache_free(cache);
}

#define DOCUMENT_ETAG "\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\""

static void test_a_tagged_entry_gives_back_the_path_and_the_document_etag(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char path[PATH_SIZE], etag[ETAG_MAX];
	put_tagged(cache, MID, PATH, DOCUMENT_ETAG);
	put_tagged(cache, OTHER_MID, OTHER_PATH, "");
	assert_int_equal(get_tagged(cache, MID, path, sizeof(path), etag),
			 CACHE_PATH);
	assert_string_equal(path, PATH);
	assert_string_equal(etag, DOCUMENT_ETAG);
	memset(etag, 'X', sizeof(etag));
	assert_int_equal(get_tagged(cache, OTHER_MID, path, sizeof(path), etag),
			 CACHE_PATH);
	assert_string_equal(etag, "");
	/* A later put of the same id replaces the ETag with the path. */
	put_path(cache, MID, OTHER_PATH);
	assert_int_equal(get_tagged(cache, MID, path, sizeof(path), etag),
			 CACHE_PATH);
	assert_string_equal(path, OTHER_PATH);
	assert_string_equal(etag, "");
	lookup_cache_free(cache);
}

static void test_a_negative_entry_keeps_no_etag_and_an_unterminated_one_is_not_kept(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char path[PATH_SIZE], etag[ETAG_MAX];
	put_tagged(cache, MID, NULL, DOCUMENT_ETAG);
	assert_int_equal(get_tagged(cache, MID, path, sizeof(path), etag), CACHE_NEGATIVE);
	struct track_document *document = document_of(PATH, NULL);
	memset(document->fields.etag, 'a', sizeof(document->fields.etag));
	lookup_cache_put(cache, OTHER_MID, LOOKUP_FOUND, document);
	assert_int_equal(get_tagged(cache, OTHER_MID, path, sizeof(path), etag), CACHE_MISS);
	free(document);
	lookup_cache_free(cache);
}

static void test_a_path_that_fills_its_array_is_not_kept(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char path[PATH_SIZE];
	struct track_document *document = document_of(PATH, NULL);
	memset(document->path, '/', sizeof(document->path)); /* no NUL: no file has such a path */
	lookup_cache_put(cache, MID, LOOKUP_FOUND, document);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_MISS);
	document->path[PATH_MAX - 1] = '\0'; /* the longest path a file can have */
	lookup_cache_put(cache, OTHER_MID, LOOKUP_FOUND, document);
	char *longest = malloc(PATH_MAX);
	assert_non_null(longest);
	assert_int_equal(get_path(cache, OTHER_MID, longest, PATH_MAX), CACHE_PATH);
	assert_int_equal(strlen(longest), PATH_MAX - 1);
	assert_int_equal(lookup_cache_stats(cache).entries, 1);
	free(longest);
	free(document);
	lookup_cache_free(cache);
}

static void test_an_error_is_never_kept(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	struct track_document *document = document_of(PATH, NULL);
	const enum lookup_status errors[] = {LOOKUP_NO_PATH, LOOKUP_UNAVAILABLE, LOOKUP_FAILED,
					     LOOKUP_BAD_DATA};
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		lookup_cache_put(cache, MID, errors[i], document);
	assert_int_equal(lookup_cache_stats(cache).entries, 0);
	/* And an error put after a found document leaves that document as it was. */
	lookup_cache_put(cache, MID, LOOKUP_FOUND, document);
	lookup_cache_put(cache, MID, LOOKUP_UNAVAILABLE, NULL);
	char path[PATH_SIZE];
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, PATH);
	free(document);
	lookup_cache_free(cache);
}

static void test_put_keeps_its_own_copy_of_the_path(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char given[] = PATH;
	char path[PATH_SIZE];
	put_path(cache, MID, given);
	memset(given, 'Y', sizeof(given) - 1);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, PATH);
	lookup_cache_free(cache);
}

static void test_distinct_mids_keep_their_own_paths(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char path[PATH_SIZE];
	put_path(cache, MID, PATH);
	put_path(cache, OTHER_MID, OTHER_PATH);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, PATH);
	assert_int_equal(get_path(cache, OTHER_MID, path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, OTHER_PATH);
	assert_int_equal(get_path(cache, "65f0c0ffee0000000000abcf", path, sizeof(path)),
			 CACHE_MISS);
	lookup_cache_free(cache);
}

static void test_negative_entry_answers_negative(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char path[PATH_SIZE];
	put_path(cache, MID, NULL);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_NEGATIVE);
	assert_int_equal(get_path(cache, OTHER_MID, path, sizeof(path)), CACHE_MISS);
	lookup_cache_free(cache);
}

static void test_negative_ttl_zero_keeps_no_negative_entry(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, 0);
	char path[PATH_SIZE];
	put_path(cache, MID, NULL);
	assert_int_equal(lookup_cache_stats(cache).entries, 0);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_MISS);
	/* Paths are still kept. */
	put_path(cache, OTHER_MID, PATH);
	assert_int_equal(get_path(cache, OTHER_MID, path, sizeof(path)), CACHE_PATH);
	lookup_cache_free(cache);
}

/* Puts a path and a negative entry, then expects both to miss and nothing to be kept. */
static void check_disabled(size_t max_entries, unsigned ttl, unsigned negative_ttl)
{
	struct lookup_cache *cache = new_cache(max_entries, ttl, negative_ttl);
	char path[PATH_SIZE];
	put_path(cache, MID, PATH);
	put_path(cache, OTHER_MID, NULL);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_MISS);
	assert_int_equal(get_path(cache, OTHER_MID, path, sizeof(path)), CACHE_MISS);
	struct cache_stats stats = lookup_cache_stats(cache);
	assert_int_equal(stats.entries, 0);
	assert_int_equal(stats.hits, 0);
	lookup_cache_free(cache);
}

static void test_zero_max_entries_disables_the_cache(void **state)
{
	(void)state;
	check_disabled(0, TTL, NEGATIVE_TTL);
}

static void test_zero_ttl_disables_the_cache(void **state)
{
	(void)state;
	check_disabled(10, 0, NEGATIVE_TTL);
}

static void test_put_replaces_the_path_of_an_existing_entry(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char path[PATH_SIZE];
	put_path(cache, MID, PATH);
	put_path(cache, MID, OTHER_PATH);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, OTHER_PATH);
	struct cache_stats stats = lookup_cache_stats(cache);
	assert_int_equal(stats.entries, 1);
	assert_int_equal(stats.evictions, 0);
	lookup_cache_free(cache);
}

static void test_put_replaces_a_negative_entry_and_is_replaced_by_one(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char path[PATH_SIZE];
	put_path(cache, MID, NULL);
	put_path(cache, MID, PATH);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, PATH);
	put_path(cache, MID, NULL);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_NEGATIVE);
	assert_int_equal(lookup_cache_stats(cache).entries, 1);
	lookup_cache_free(cache);
}

static void test_clock_is_the_coarse_monotonic_clock_in_seconds(void **state)
{
	(void)state;
	struct timespec coarse;
	int64_t before = clock_coarse_seconds();
	clock_gettime(CLOCK_MONOTONIC_COARSE, &coarse);
	int64_t after = clock_coarse_seconds();
	assert_true(before <= (int64_t)coarse.tv_sec);
	assert_true((int64_t)coarse.tv_sec <= after);
	assert_true(after - before <= 1);
}

static void test_entry_hits_until_its_ttl_passes_then_misses(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, 1, NEGATIVE_TTL);
	char path[PATH_SIZE];
	int64_t put_at = wait_for_next_second();
	put_path(cache, MID, PATH);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_PATH);
	int64_t missed_at;
	assert_int_equal(wait_for_change(cache, MID, CACHE_PATH, &missed_at),
			 CACHE_MISS);
	/* Gone once the clock is one second on, and not before. */
	assert_true(clock_coarse_seconds() - put_at >= 1);
	assert_true(missed_at - put_at <= 1);
	/* Once expired it stays gone. */
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_MISS);
	lookup_cache_free(cache);
}

static void test_new_ttls_apply_to_entries_already_kept(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char path[PATH_SIZE];
	int64_t put_at = wait_for_next_second();
	put_path(cache, MID, PATH);
	put_path(cache, OTHER_MID, NULL);
	/* A reload shortens both: entries count from their put, so they go within a second. */
	lookup_cache_set_ttl(cache, 1, 1);
	int64_t missed_at;
	assert_int_equal(wait_for_change(cache, MID, CACHE_PATH, &missed_at),
			 CACHE_MISS);
	assert_true(missed_at - put_at <= 1);
	assert_int_equal(get_path(cache, OTHER_MID, path, sizeof(path)), CACHE_MISS);
	/* A TTL of 0 turns the cache off; a longer one turns it back on. */
	lookup_cache_set_ttl(cache, 0, NEGATIVE_TTL);
	put_path(cache, MID, PATH);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_MISS);
	lookup_cache_set_ttl(cache, TTL, NEGATIVE_TTL);
	put_path(cache, MID, PATH);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_PATH);
	lookup_cache_free(cache);
}

static void test_negative_entry_expires_after_the_negative_ttl(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, 1);
	char path[PATH_SIZE];
	int64_t put_at = wait_for_next_second();
	put_path(cache, MID, NULL);
	put_path(cache, OTHER_MID, PATH);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_NEGATIVE);
	int64_t missed_at;
	assert_int_equal(wait_for_change(cache, MID, CACHE_NEGATIVE, &missed_at),
			 CACHE_MISS);
	assert_true(clock_coarse_seconds() - put_at >= 1);
	assert_true(missed_at - put_at <= 1);
	/* The path put at the same moment lives by the longer TTL. */
	assert_int_equal(get_path(cache, OTHER_MID, path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, PATH);
	lookup_cache_free(cache);
}

static void test_entries_are_bounded_and_the_newest_is_kept(void **state)
{
	(void)state;
	enum { MAX = 10, PUTS = 100 };
	struct lookup_cache *cache = new_cache(MAX, TTL, NEGATIVE_TTL);
	char mid[25], expected[64], path[PATH_SIZE];
	for (unsigned i = 0; i < PUTS; i++) {
		mid_of(mid, i);
		snprintf(expected, sizeof(expected), "/music/%u.mp3", i);
		put_path(cache, mid, expected);
		assert_true(lookup_cache_stats(cache).entries <= MAX);
	}
	struct cache_stats stats = lookup_cache_stats(cache);
	assert_int_equal(stats.entries, MAX);
	assert_int_equal(stats.evictions + stats.entries, PUTS);
	mid_of(mid, PUTS - 1);
	assert_int_equal(get_path(cache, mid, path, sizeof(path)), CACHE_PATH);
	snprintf(expected, sizeof(expected), "/music/%u.mp3", PUTS - 1);
	assert_string_equal(path, expected);
	/* Exactly MAX of the mids still hit, each with its own path. */
	unsigned hits = 0;
	for (unsigned i = 0; i < PUTS; i++) {
		mid_of(mid, i);
		if (get_path(cache, mid, path, sizeof(path)) == CACHE_PATH) {
			snprintf(expected, sizeof(expected), "/music/%u.mp3", i);
			assert_string_equal(path, expected);
			hits++;
		}
	}
	assert_int_equal(hits, MAX);
	lookup_cache_free(cache);
}

static void test_negative_entries_count_against_the_bound(void **state)
{
	(void)state;
	enum { MAX = 10, PUTS = 100 };
	struct lookup_cache *cache = new_cache(MAX, TTL, NEGATIVE_TTL);
	char mid[25];
	for (unsigned i = 0; i < PUTS; i++) {
		mid_of(mid, i);
		put_path(cache, mid, i % 2 ? NULL : "/music/a.mp3");
	}
	struct cache_stats stats = lookup_cache_stats(cache);
	assert_int_equal(stats.entries, MAX);
	assert_int_equal(stats.evictions + stats.entries, PUTS);
	lookup_cache_free(cache);
}

/*
 * count mids whose hashes agree in their low SAME_SHARD_BITS bits: the shard
 * is chosen by the low bits (lru_shard_for), so they share one for any
 * power-of-two number of shards up to 2^SAME_SHARD_BITS.
 */
static void mids_in_one_shard(char mids[][25], size_t count)
{
	const uint64_t mask = (UINT64_C(1) << SAME_SHARD_BITS) - 1;
	size_t found = 0;
	uint64_t low = 0;
	for (unsigned i = 0; found < count; i++) {
		assert_true(i < (64u << SAME_SHARD_BITS)); /* bounded search */
		mid_of(mids[found], i);
		uint64_t hash = lru_hash(mids[found]);
		if (found == 0)
			low = hash & mask;
		if ((hash & mask) == low)
			found++;
	}
}

static void test_full_shard_evicts_its_least_recently_used_entry(void **state)
{
	(void)state;
	char mids[3][25], path[PATH_SIZE];
	mids_in_one_shard(mids, 3);
	struct lookup_cache *cache = new_cache(2, TTL, NEGATIVE_TTL);
	put_path(cache, mids[0], "/music/0.mp3");
	put_path(cache, mids[1], "/music/1.mp3");
	/* A hit makes the first the most recently used: the second goes. */
	assert_int_equal(get_path(cache, mids[0], path, sizeof(path)), CACHE_PATH);
	put_path(cache, mids[2], "/music/2.mp3");
	assert_int_equal(get_path(cache, mids[1], path, sizeof(path)), CACHE_MISS);
	assert_int_equal(get_path(cache, mids[0], path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, "/music/0.mp3");
	assert_int_equal(get_path(cache, mids[2], path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, "/music/2.mp3");
	assert_int_equal(lookup_cache_stats(cache).evictions, 1);
	lookup_cache_free(cache);
}

static void test_full_shard_without_hits_evicts_the_oldest_put(void **state)
{
	(void)state;
	char mids[3][25], path[PATH_SIZE];
	mids_in_one_shard(mids, 3);
	struct lookup_cache *cache = new_cache(2, TTL, NEGATIVE_TTL);
	put_path(cache, mids[0], "/music/0.mp3");
	put_path(cache, mids[1], "/music/1.mp3");
	put_path(cache, mids[2], "/music/2.mp3");
	assert_int_equal(get_path(cache, mids[0], path, sizeof(path)), CACHE_MISS);
	assert_int_equal(get_path(cache, mids[1], path, sizeof(path)), CACHE_PATH);
	assert_int_equal(get_path(cache, mids[2], path, sizeof(path)), CACHE_PATH);
	lookup_cache_free(cache);
}

/* One thread putting its own range of mids. */
struct putter {
	struct lookup_cache *cache;
	pthread_barrier_t *start;
	unsigned first, count;
};

static void *put_range(void *argument)
{
	struct putter *putter = argument;
	char mid[25];
	pthread_barrier_wait(putter->start);
	for (unsigned i = putter->first; i < putter->first + putter->count; i++) {
		mid_of(mid, i);
		put_path(putter->cache, mid, "/music/a.mp3");
	}
	return NULL;
}

static void test_puts_from_many_threads_never_pass_the_bound(void **state)
{
	(void)state;
	enum { THREADS = 8, PUTS = 5000, MAX = 50 };
	struct lookup_cache *cache = new_cache(MAX, TTL, NEGATIVE_TTL);
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, THREADS);
	struct putter putters[THREADS];
	pthread_t threads[THREADS];
	for (unsigned i = 0; i < THREADS; i++) {
		putters[i] = (struct putter){cache, &start, i * PUTS, PUTS};
		assert_int_equal(pthread_create(&threads[i], NULL, put_range, &putters[i]), 0);
	}
	for (unsigned i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(threads[i], NULL), 0);
	pthread_barrier_destroy(&start);
	/* Every put either holds a slot or was evicted (or, with every shard busy, not kept). */
	struct cache_stats stats = lookup_cache_stats(cache);
	assert_true(stats.entries <= MAX);
	assert_int_equal(stats.evictions + stats.entries, THREADS * PUTS);
	lookup_cache_free(cache);
}

static void test_stats_count_hits_and_misses_exactly(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	char path[PATH_SIZE];
	struct cache_stats stats = lookup_cache_stats(cache);
	assert_int_equal(stats.hits, 0);
	assert_int_equal(stats.misses, 0);
	assert_int_equal(stats.evictions, 0);
	assert_int_equal(stats.entries, 0);

	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_MISS);
	put_path(cache, MID, PATH);
	put_path(cache, OTHER_MID, OTHER_PATH);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(get_path(cache, MID, path, sizeof(path)),
				 CACHE_PATH);
	}
	assert_int_equal(get_path(cache, OTHER_MID, path, sizeof(path)), CACHE_PATH);
	assert_int_equal(get_path(cache, "65f0c0ffee0000000000ffff", path, sizeof(path)),
			 CACHE_MISS);

	stats = lookup_cache_stats(cache);
	assert_int_equal(stats.hits, 4);
	assert_int_equal(stats.misses, 2);
	assert_int_equal(stats.evictions, 0);
	assert_int_equal(stats.entries, 2);
	lookup_cache_free(cache);
}

/* A GridFS file whose every field is distinct: number i's. */
static struct gridfs_entry gridfs_entry_of(unsigned i)
{
	struct gridfs_entry file = {0};
	snprintf(file.id, sizeof(file.id), "66a0f11e5000000000%06x", i);
	file.length = UINT64_C(4194304) + i;
	file.chunk_size = 261120 + i;
	file.upload_date_ms = INT64_C(1764590400123) + i;
	snprintf(file.content_type, sizeof(file.content_type), "audio/x-test-%u", i);
	snprintf(file.filename, sizeof(file.filename), "%u Track.ogg", i);
	return file;
}

/* Every field the same, and nothing past each text's terminator read. */
static void assert_same_file(const struct gridfs_entry *got, const struct gridfs_entry *want)
{
	assert_string_equal(got->id, want->id);
	assert_true(got->length == want->length);
	assert_int_equal(got->chunk_size, want->chunk_size);
	assert_true(got->upload_date_ms == want->upload_date_ms);
	assert_string_equal(got->content_type, want->content_type);
	assert_string_equal(got->filename, want->filename);
}

static enum cached get_track(struct lookup_cache *cache, const char *mid,
					  struct gridfs_entry *file)
{
	char path[PATH_SIZE], etag[ETAG_MAX];
	return get_track_into(cache, mid, path, sizeof(path), etag, file);
}

static void test_a_gridfs_entry_gives_back_every_field_of_the_file(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	struct gridfs_entry want = gridfs_entry_of(7), got;
	char path[PATH_SIZE], etag[ETAG_MAX];
	put_gridfs(cache, MID, &want);
	memset(&got, 'X', sizeof(got));
	memcpy(path, "untouched", sizeof("untouched"));
	memcpy(etag, "untouched", sizeof("untouched"));
	assert_int_equal(get_track_into(cache, MID, path, sizeof(path), etag, &got),
			 CACHE_GRIDFS);
	assert_same_file(&got, &want);
	assert_string_equal(path, "untouched");
	assert_string_equal(etag, "untouched");
	/* And again: a hit does not use the entry up. */
	memset(&got, 'X', sizeof(got));
	assert_int_equal(get_track(cache, MID, &got), CACHE_GRIDFS);
	assert_same_file(&got, &want);
	lookup_cache_free(cache);
}

static void test_a_gridfs_entry_keeps_empty_and_longest_texts_exactly(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	struct gridfs_entry empty = gridfs_entry_of(1), longest = gridfs_entry_of(2), got;
	empty.content_type[0] = '\0';
	empty.filename[0] = '\0';
	memset(longest.content_type, 't', GRIDFS_TEXT_MAX - 1);
	longest.content_type[GRIDFS_TEXT_MAX - 1] = '\0';
	memset(longest.filename, 'n', GRIDFS_TEXT_MAX - 1);
	longest.filename[GRIDFS_TEXT_MAX - 1] = '\0';
	put_gridfs(cache, MID, &empty);
	put_gridfs(cache, OTHER_MID, &longest);
	memset(&got, 'X', sizeof(got));
	assert_int_equal(get_track(cache, MID, &got), CACHE_GRIDFS);
	assert_same_file(&got, &empty);
	memset(&got, 'X', sizeof(got));
	assert_int_equal(get_track(cache, OTHER_MID, &got), CACHE_GRIDFS);
	assert_same_file(&got, &longest);
	lookup_cache_free(cache);
}

static void test_a_gridfs_file_with_an_unterminated_text_is_not_kept(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	struct gridfs_entry bad_type = gridfs_entry_of(1), bad_name = gridfs_entry_of(2), got;
	memset(bad_type.content_type, 't', sizeof(bad_type.content_type));
	memset(bad_name.filename, 'n', sizeof(bad_name.filename));
	put_gridfs(cache, MID, &bad_type);
	put_gridfs(cache, OTHER_MID, &bad_name);
	assert_int_equal(get_track(cache, MID, &got), CACHE_MISS);
	assert_int_equal(get_track(cache, OTHER_MID, &got), CACHE_MISS);
	assert_int_equal(lookup_cache_stats(cache).entries, 0);
	lookup_cache_free(cache);
}

static void test_put_keeps_its_own_copy_of_the_gridfs_file(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	struct gridfs_entry given = gridfs_entry_of(3), want = gridfs_entry_of(3), got;
	put_gridfs(cache, MID, &given);
	memset(&given, 'Y', sizeof(given));
	assert_int_equal(get_track(cache, MID, &got), CACHE_GRIDFS);
	assert_same_file(&got, &want);
	lookup_cache_free(cache);
}

static void test_a_disk_entry_through_get_track_gives_the_path_and_etag(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	struct gridfs_entry got = gridfs_entry_of(9), untouched = gridfs_entry_of(9);
	char path[PATH_SIZE], etag[ETAG_MAX];
	put_tagged(cache, MID, PATH, DOCUMENT_ETAG);
	put_path(cache, OTHER_MID, NULL);
	assert_int_equal(get_track_into(cache, MID, path, sizeof(path), etag, &got),
			 CACHE_PATH);
	assert_string_equal(path, PATH);
	assert_string_equal(etag, DOCUMENT_ETAG);
	assert_same_file(&got, &untouched);
	assert_int_equal(get_track_into(cache, OTHER_MID, path, sizeof(path), etag, &got),
			 CACHE_NEGATIVE);
	lookup_cache_free(cache);
}

static void test_puts_replace_a_gridfs_entry_and_are_replaced_by_one(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	struct gridfs_entry first = gridfs_entry_of(1), second = gridfs_entry_of(2), got;
	char path[PATH_SIZE];
	put_path(cache, MID, PATH);
	put_gridfs(cache, MID, &first);
	assert_int_equal(get_track(cache, MID, &got), CACHE_GRIDFS);
	assert_same_file(&got, &first);
	put_gridfs(cache, MID, &second);
	assert_int_equal(get_track(cache, MID, &got), CACHE_GRIDFS);
	assert_same_file(&got, &second);
	put_path(cache, MID, OTHER_PATH);
	assert_int_equal(get_path(cache, MID, path, sizeof(path)), CACHE_PATH);
	assert_string_equal(path, OTHER_PATH);
	put_gridfs(cache, MID, &first);
	put_path(cache, MID, NULL);
	assert_int_equal(get_track(cache, MID, &got), CACHE_NEGATIVE);
	struct cache_stats stats = lookup_cache_stats(cache);
	assert_int_equal(stats.entries, 1);
	assert_int_equal(stats.evictions, 0);
	lookup_cache_free(cache);
}

static void test_a_disabled_cache_keeps_no_gridfs_entry(void **state)
{
	(void)state;
	struct gridfs_entry file = gridfs_entry_of(5), got;
	struct lookup_cache *off = new_cache(0, TTL, NEGATIVE_TTL);
	struct lookup_cache *zero_ttl = new_cache(10, 0, NEGATIVE_TTL);
	put_gridfs(off, MID, &file);
	put_gridfs(zero_ttl, MID, &file);
	assert_int_equal(get_track(off, MID, &got), CACHE_MISS);
	assert_int_equal(get_track(zero_ttl, MID, &got), CACHE_MISS);
	assert_int_equal(lookup_cache_stats(off).entries, 0);
	assert_int_equal(lookup_cache_stats(zero_ttl).entries, 0);
	lookup_cache_free(off);
	lookup_cache_free(zero_ttl);
}

static void test_a_gridfs_entry_lives_by_the_ttl_of_found_paths(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, 1, NEGATIVE_TTL);
	struct gridfs_entry file = gridfs_entry_of(6), got;
	int64_t put_at = wait_for_next_second();
	put_gridfs(cache, MID, &file);
	assert_int_equal(get_track(cache, MID, &got), CACHE_GRIDFS);
	int64_t missed_at;
	assert_int_equal(wait_for_change(cache, MID, CACHE_GRIDFS, &missed_at),
			 CACHE_MISS);
	assert_true(clock_coarse_seconds() - put_at >= 1);
	assert_true(missed_at - put_at <= 1);
	assert_int_equal(lookup_cache_stats(cache).entries, 0);
	lookup_cache_free(cache);
}

static void test_a_gridfs_entry_outlives_the_negative_ttl(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, 1);
	struct gridfs_entry file = gridfs_entry_of(8), got;
	wait_for_next_second();
	put_gridfs(cache, MID, &file);
	put_path(cache, OTHER_MID, NULL);
	int64_t missed_at;
	assert_int_equal(wait_for_change(cache, OTHER_MID, CACHE_NEGATIVE, &missed_at),
			 CACHE_MISS);
	/* The negative entry put with it is gone; the file is not. */
	assert_int_equal(get_track(cache, MID, &got), CACHE_GRIDFS);
	assert_same_file(&got, &file);
	lookup_cache_free(cache);
}

static void test_gridfs_entries_are_bounded_and_evicted_like_any(void **state)
{
	(void)state;
	enum { MAX = 10, PUTS = 100 };
	struct lookup_cache *cache = new_cache(MAX, TTL, NEGATIVE_TTL);
	char mid[25];
	struct gridfs_entry got;
	for (unsigned i = 0; i < PUTS; i++) {
		struct gridfs_entry file = gridfs_entry_of(i);
		mid_of(mid, i);
		if (i % 3 == 1)
			put_path(cache, mid, "/music/a.mp3");
		else
			put_gridfs(cache, mid, &file);
		assert_true(lookup_cache_stats(cache).entries <= MAX);
	}
	struct cache_stats stats = lookup_cache_stats(cache);
	assert_int_equal(stats.entries, MAX);
	assert_int_equal(stats.evictions + stats.entries, PUTS);
	/* The newest is kept, and every GridFS entry kept is its own mid's file. */
	mid_of(mid, PUTS - 1);
	assert_int_equal(get_track(cache, mid, &got), CACHE_GRIDFS);
	unsigned kept = 0;
	for (unsigned i = 0; i < PUTS; i++) {
		mid_of(mid, i);
		enum cached result = get_track(cache, mid, &got);
		if (result == CACHE_GRIDFS) {
			struct gridfs_entry want = gridfs_entry_of(i);
			assert_int_not_equal(i % 3, 1);
			assert_same_file(&got, &want);
		}
		if (result != CACHE_MISS)
			kept++;
	}
	assert_int_equal(kept, MAX);
	lookup_cache_free(cache);
}

static void test_full_shard_evicts_its_least_recently_used_gridfs_entry(void **state)
{
	(void)state;
	char mids[3][25];
	struct gridfs_entry files[3] = {gridfs_entry_of(0), gridfs_entry_of(1), gridfs_entry_of(2)};
	struct gridfs_entry got;
	mids_in_one_shard(mids, 3);
	struct lookup_cache *cache = new_cache(2, TTL, NEGATIVE_TTL);
	put_gridfs(cache, mids[0], &files[0]);
	put_gridfs(cache, mids[1], &files[1]);
	/* A hit makes the first the most recently used: the second goes. */
	assert_int_equal(get_track(cache, mids[0], &got), CACHE_GRIDFS);
	put_gridfs(cache, mids[2], &files[2]);
	assert_int_equal(get_track(cache, mids[1], &got), CACHE_MISS);
	assert_int_equal(get_track(cache, mids[0], &got), CACHE_GRIDFS);
	assert_same_file(&got, &files[0]);
	assert_int_equal(get_track(cache, mids[2], &got), CACHE_GRIDFS);
	assert_same_file(&got, &files[2]);
	assert_int_equal(lookup_cache_stats(cache).evictions, 1);
	lookup_cache_free(cache);
}

static void test_gridfs_hits_count_as_hits(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	struct gridfs_entry file = gridfs_entry_of(1), got;
	assert_int_equal(get_track(cache, MID, &got), CACHE_MISS);
	put_gridfs(cache, MID, &file);
	for (int i = 0; i < 3; i++)
		assert_int_equal(get_track(cache, MID, &got), CACHE_GRIDFS);
	struct cache_stats stats = lookup_cache_stats(cache);
	assert_int_equal(stats.hits, 3);
	assert_int_equal(stats.misses, 1);
	assert_int_equal(stats.entries, 1);
	lookup_cache_free(cache);
}

static void test_a_gridfs_entry_keeps_the_document_fields_too(void **state)
{
	(void)state;
	struct lookup_cache *cache = new_cache(10, TTL, NEGATIVE_TTL);
	struct track_document *document = document_of(NULL, DOCUMENT_ETAG);
	struct track_document *got = document_of(NULL, NULL);
	document->gridfs = gridfs_entry_of(5);
	lookup_cache_put(cache, MID, LOOKUP_GRIDFS, document);
	enum lookup_status found;
	assert_true(lookup_cache_get(cache, MID, &found, got));
	assert_int_equal(found, LOOKUP_GRIDFS);
	assert_same_file(&got->gridfs, &document->gridfs);
	assert_string_equal(got->fields.etag, DOCUMENT_ETAG);
	free(got);
	free(document);
	lookup_cache_free(cache);
}

/*
 * Threads replacing a few mids' entries (a path, then mid's GridFS file, by
 * turns) while others read them: every read is a whole entry of that mid,
 * never a mix (and TSan sees every access under the shard's lock).
 */
enum { SHARED_MIDS = 4, CHURN_ROUNDS = 3000 };

struct churner {
	struct lookup_cache *cache;
	pthread_barrier_t *start;
	int reader;
	unsigned gridfs_reads; /* a reader's: how many reads found a file */
};

static void *churn(void *argument)
{
	struct churner *churner = argument;
	char mid[25], path[PATH_SIZE], etag[ETAG_MAX], want_path[64];
	pthread_barrier_wait(churner->start);
	for (unsigned round = 0; round < CHURN_ROUNDS; round++) {
		unsigned i = round % SHARED_MIDS;
		struct gridfs_entry want = gridfs_entry_of(i), got;
		mid_of(mid, i);
		snprintf(want_path, sizeof(want_path), "/music/%u.mp3", i);
		if (!churner->reader) {
			if (round % 2)
				put_gridfs(churner->cache, mid, &want);
			else
				put_path(churner->cache, mid, want_path);
			continue;
		}
		switch (get_track_into(churner->cache, mid, path, sizeof(path), etag, &got)) {
		case CACHE_GRIDFS:
			assert_same_file(&got, &want);
			churner->gridfs_reads++;
			break;
		case CACHE_PATH:
			assert_string_equal(path, want_path);
			break;
		case CACHE_MISS:
		case CACHE_NEGATIVE:
			break;
		}
	}
	return NULL;
}

static void test_gridfs_entries_read_while_replaced_are_whole(void **state)
{
	(void)state;
	enum { WRITERS = 2, READERS = 4, THREADS = WRITERS + READERS };
	struct lookup_cache *cache = new_cache(100, TTL, NEGATIVE_TTL);
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, THREADS);
	struct churner churners[THREADS];
	pthread_t threads[THREADS];
	/* Every mid holds a file before the readers start. */
	for (unsigned i = 0; i < SHARED_MIDS; i++) {
		char mid[25];
		struct gridfs_entry file = gridfs_entry_of(i);
		mid_of(mid, i);
		put_gridfs(cache, mid, &file);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		churners[i] = (struct churner){cache, &start, i >= WRITERS, 0};
		assert_int_equal(pthread_create(&threads[i], NULL, churn, &churners[i]), 0);
	}
	unsigned gridfs_reads = 0;
	for (unsigned i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(threads[i], NULL), 0);
		gridfs_reads += churners[i].gridfs_reads;
	}
	pthread_barrier_destroy(&start);
	assert_true(gridfs_reads > 0);
	assert_int_equal(lookup_cache_stats(cache).entries, SHARED_MIDS);
	lookup_cache_free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_on_an_empty_cache_misses),
		cmocka_unit_test(test_put_then_get_hits_and_copies_the_path),
		cmocka_unit_test(test_a_path_that_fills_its_array_is_not_kept),
		cmocka_unit_test(test_put_keeps_its_own_copy_of_the_path),
		cmocka_unit_test(test_a_tagged_entry_gives_back_the_path_and_the_document_etag),
		cmocka_unit_test(test_a_negative_entry_keeps_no_etag_and_an_unterminated_one_is_not_kept),
		cmocka_unit_test(test_an_error_is_never_kept),
		cmocka_unit_test(test_distinct_mids_keep_their_own_paths),
		cmocka_unit_test(test_negative_entry_answers_negative),
		cmocka_unit_test(test_negative_ttl_zero_keeps_no_negative_entry),
		cmocka_unit_test(test_zero_max_entries_disables_the_cache),
		cmocka_unit_test(test_zero_ttl_disables_the_cache),
		cmocka_unit_test(test_put_replaces_the_path_of_an_existing_entry),
		cmocka_unit_test(test_put_replaces_a_negative_entry_and_is_replaced_by_one),
		cmocka_unit_test(test_clock_is_the_coarse_monotonic_clock_in_seconds),
		cmocka_unit_test(test_entry_hits_until_its_ttl_passes_then_misses),
		cmocka_unit_test(test_negative_entry_expires_after_the_negative_ttl),
		cmocka_unit_test(test_new_ttls_apply_to_entries_already_kept),
		cmocka_unit_test(test_entries_are_bounded_and_the_newest_is_kept),
		cmocka_unit_test(test_negative_entries_count_against_the_bound),
		cmocka_unit_test(test_full_shard_evicts_its_least_recently_used_entry),
		cmocka_unit_test(test_full_shard_without_hits_evicts_the_oldest_put),
		cmocka_unit_test(test_puts_from_many_threads_never_pass_the_bound),
		cmocka_unit_test(test_stats_count_hits_and_misses_exactly),
		cmocka_unit_test(test_a_gridfs_entry_gives_back_every_field_of_the_file),
		cmocka_unit_test(test_a_gridfs_entry_keeps_empty_and_longest_texts_exactly),
		cmocka_unit_test(test_a_gridfs_file_with_an_unterminated_text_is_not_kept),
		cmocka_unit_test(test_put_keeps_its_own_copy_of_the_gridfs_file),
		cmocka_unit_test(test_a_disk_entry_through_get_track_gives_the_path_and_etag),
		cmocka_unit_test(test_puts_replace_a_gridfs_entry_and_are_replaced_by_one),
		cmocka_unit_test(test_a_disabled_cache_keeps_no_gridfs_entry),
		cmocka_unit_test(test_a_gridfs_entry_lives_by_the_ttl_of_found_paths),
		cmocka_unit_test(test_a_gridfs_entry_outlives_the_negative_ttl),
		cmocka_unit_test(test_gridfs_entries_are_bounded_and_evicted_like_any),
		cmocka_unit_test(test_full_shard_evicts_its_least_recently_used_gridfs_entry),
		cmocka_unit_test(test_gridfs_hits_count_as_hits),
		cmocka_unit_test(test_a_gridfs_entry_keeps_the_document_fields_too),
		cmocka_unit_test(test_gridfs_entries_read_while_replaced_are_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
