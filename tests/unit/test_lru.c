/*
 * Unit tests for server/base/lru.h: the hash keys are computed with, the table's
 * lookups and its least-recently-used order (insert, touch, remove from any
 * position, chains of entries in one bucket), and the shards: one bound over
 * every shard, slots given back by removal, eviction from another shard, the
 * bounded insert both caches use (replacing a key, making room here or
 * elsewhere, refusing when no room can be made, many threads at once), the
 * summed counters, and destruction handing every entry to its release.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/lru.h"

#define KEY_MAX 32
#define HASH_SAMPLE 10000
#define SHARD_COUNT 4

/* A caller's entry, as the caches make them: a node embedded in the caller's struct. */
struct item {
	struct lru_node node;
	char key[KEY_MAX];
	int released; /* times passed to a release callback */
	struct lru_shard *released_from;
};

static void item_init(struct item *item, const char *key)
{
	memset(item, 0, sizeof(*item));
	snprintf(item->key, sizeof(item->key), "%s", key);
	item->node.key = item->key;
	item->node.hash = lru_hash(item->key);
}

static struct item *find(struct lru_table *table, const char *key)
{
	struct lru_node *node = lru_find(table, key, lru_hash(key));
	return node ? lru_entry(node, struct item, node) : NULL;
}

/* The keys oldest first, "a b c", read by removing the oldest entry until the table is empty. */
static void drain_order(struct lru_table *table, char *out, size_t out_size)
{
	size_t used = 0;
	out[0] = '\0';
	struct lru_node *node;
	while ((node = lru_oldest(table)) != NULL) {
		lru_remove(table, node);
		const char *key = lru_entry(node, struct item, node)->key;
		used += (size_t)snprintf(out + used, out_size - used, "%s%s", used ? " " : "", key);
		assert_true(used < out_size);
	}
}

/* A table holding keys inserted in the order given, oldest first. */
static void table_with(struct lru_table *table, size_t buckets, struct item *items,
		       const char *const *keys, size_t count)
{
	assert_int_equal(lru_init(table, buckets), 0);
	for (size_t i = 0; i < count; i++) {
		item_init(&items[i], keys[i]);
		lru_insert(table, &items[i].node);
	}
}

static int compare_hashes(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void test_hash_is_the_same_for_equal_keys_in_different_buffers(void **state)
{
	(void)state;
	char first[] = "/music/Artist/Album/01 Track.mp3";
	char *second = strdup(first);
	assert_non_null(second);
	assert_true(lru_hash(first) == lru_hash(second));
	assert_true(lru_hash(first) == lru_hash(first));
	free(second);
}

static void test_hash_differs_for_distinct_keys(void **state)
{
	(void)state;
	uint64_t *hashes = malloc(HASH_SAMPLE * sizeof(*hashes));
	assert_non_null(hashes);
	for (size_t i = 0; i < HASH_SAMPLE; i++) {
		char key[KEY_MAX];
		/* Keys that differ in a character or two, as ObjectIds of one library do. */
		snprintf(key, sizeof(key), "65f0c0ffee00000000%06zx", i);
		hashes[i] = lru_hash(key);
	}
	qsort(hashes, HASH_SAMPLE, sizeof(*hashes), compare_hashes);
	for (size_t i = 1; i < HASH_SAMPLE; i++)
		assert_true(hashes[i - 1] != hashes[i]);
	free(hashes);
	assert_true(lru_hash("") != lru_hash("a"));
	assert_true(lru_hash("ab") != lru_hash("ba"));
}

static void test_empty_table_finds_nothing_and_has_no_oldest(void **state)
{
	(void)state;
	struct lru_table table;
	assert_int_equal(lru_init(&table, 8), 0);
	assert_null(lru_find(&table, "a", lru_hash("a")));
	assert_null(lru_oldest(&table));
	assert_int_equal(table.count, 0);
	lru_destroy(&table);
}

static void test_zero_buckets_still_makes_a_usable_table(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[2];
	table_with(&table, 0, items, (const char *const[]){"a", "b"}, 2);
	assert_ptr_equal(find(&table, "a"), &items[0]);
	assert_ptr_equal(find(&table, "b"), &items[1]);
	lru_destroy(&table);
}

static void test_inserted_entries_are_found_by_key(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[3];
	table_with(&table, 8, items, (const char *const[]){"a", "b", "c"}, 3);
	assert_ptr_equal(find(&table, "a"), &items[0]);
	assert_ptr_equal(find(&table, "b"), &items[1]);
	assert_ptr_equal(find(&table, "c"), &items[2]);
	assert_null(find(&table, "d"));
	assert_int_equal(table.count, 3);
	lru_destroy(&table);
}

static void test_order_is_the_order_of_insertion(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[4];
	char order[64];
	table_with(&table, 8, items, (const char *const[]){"a", "b", "c", "d"}, 4);
	assert_ptr_equal(lru_oldest(&table), &items[0].node);
	drain_order(&table, order, sizeof(order));
	assert_string_equal(order, "a b c d");
	assert_int_equal(table.count, 0);
	lru_destroy(&table);
}

static void test_find_does_not_change_the_order(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[3];
	char order[64];
	table_with(&table, 8, items, (const char *const[]){"a", "b", "c"}, 3);
	assert_non_null(find(&table, "a"));
	assert_non_null(find(&table, "b"));
	drain_order(&table, order, sizeof(order));
	assert_string_equal(order, "a b c");
	lru_destroy(&table);
}

static void test_touch_of_the_oldest_makes_it_the_newest(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[3];
	char order[64];
	table_with(&table, 8, items, (const char *const[]){"a", "b", "c"}, 3);
	lru_touch(&table, &items[0].node);
	assert_ptr_equal(lru_oldest(&table), &items[1].node);
	drain_order(&table, order, sizeof(order));
	assert_string_equal(order, "b c a");
	lru_destroy(&table);
}

static void test_touch_of_a_middle_entry_makes_it_the_newest(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[3];
	char order[64];
	table_with(&table, 8, items, (const char *const[]){"a", "b", "c"}, 3);
	lru_touch(&table, &items[1].node);
	drain_order(&table, order, sizeof(order));
	assert_string_equal(order, "a c b");
	lru_destroy(&table);
}

static void test_touch_of_the_newest_changes_nothing(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[3];
	char order[64];
	table_with(&table, 8, items, (const char *const[]){"a", "b", "c"}, 3);
	lru_touch(&table, &items[2].node);
	drain_order(&table, order, sizeof(order));
	assert_string_equal(order, "a b c");
	lru_destroy(&table);
}

static void test_touch_of_the_only_entry_keeps_it_oldest(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[1];
	table_with(&table, 8, items, (const char *const[]){"a"}, 1);
	lru_touch(&table, &items[0].node);
	assert_ptr_equal(lru_oldest(&table), &items[0].node);
	assert_ptr_equal(find(&table, "a"), &items[0]);
	lru_destroy(&table);
}

static void test_repeated_touches_give_the_order_of_last_use(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[4];
	char order[64];
	table_with(&table, 8, items, (const char *const[]){"a", "b", "c", "d"}, 4);
	lru_touch(&table, &items[2].node); /* a b d c */
	lru_touch(&table, &items[0].node); /* b d c a */
	lru_touch(&table, &items[3].node); /* b c a d */
	lru_touch(&table, &items[1].node); /* c a d b */
	drain_order(&table, order, sizeof(order));
	assert_string_equal(order, "c a d b");
	lru_destroy(&table);
}

/* Removes keys[victim] from a table of a b c, then checks what is left. */
static void check_remove(size_t buckets, size_t victim, const char *left)
{
	struct lru_table table;
	struct item items[3];
	const char *const keys[] = {"a", "b", "c"};
	char order[64];
	table_with(&table, buckets, items, keys, 3);
	lru_remove(&table, &items[victim].node);
	assert_int_equal(table.count, 2);
	assert_null(find(&table, keys[victim]));
	for (size_t i = 0; i < 3; i++) {
		if (i != victim)
			assert_ptr_equal(find(&table, keys[i]), &items[i]);
	}
	drain_order(&table, order, sizeof(order));
	assert_string_equal(order, left);
	lru_destroy(&table);
}

static void test_remove_of_the_oldest(void **state)
{
	(void)state;
	check_remove(8, 0, "b c");
	check_remove(1, 0, "b c");
}

static void test_remove_of_a_middle_entry(void **state)
{
	(void)state;
	check_remove(8, 1, "a c");
	check_remove(1, 1, "a c");
}

static void test_remove_of_the_newest(void **state)
{
	(void)state;
	check_remove(8, 2, "a b");
	check_remove(1, 2, "a b");
}

static void test_remove_of_the_only_entry_empties_the_table(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[1];
	table_with(&table, 8, items, (const char *const[]){"a"}, 1);
	lru_remove(&table, &items[0].node);
	assert_null(find(&table, "a"));
	assert_null(lru_oldest(&table));
	assert_int_equal(table.count, 0);
	/* And it is usable again. */
	lru_insert(&table, &items[0].node);
	assert_ptr_equal(find(&table, "a"), &items[0]);
	assert_ptr_equal(lru_oldest(&table), &items[0].node);
	lru_destroy(&table);
}

static void test_removed_then_reinserted_entry_is_the_newest(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[3];
	char order[64];
	table_with(&table, 8, items, (const char *const[]){"a", "b", "c"}, 3);
	lru_remove(&table, &items[0].node);
	lru_insert(&table, &items[0].node);
	assert_ptr_equal(find(&table, "a"), &items[0]);
	drain_order(&table, order, sizeof(order));
	assert_string_equal(order, "b c a");
	lru_destroy(&table);
}

/* Entries whose keys collide: one chain in the table's only bucket, all with one hash. */
static void table_of_collisions(struct lru_table *table, struct item *items, uint64_t hash)
{
	const char *const keys[] = {"x", "y", "z"};
	assert_int_equal(lru_init(table, 1), 0);
	for (size_t i = 0; i < 3; i++) {
		item_init(&items[i], keys[i]);
		items[i].node.hash = hash;
		lru_insert(table, &items[i].node);
	}
}

static void test_same_hash_different_keys_are_both_found(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[3];
	table_of_collisions(&table, items, 42);
	assert_ptr_equal(lru_find(&table, "x", 42), &items[0].node);
	assert_ptr_equal(lru_find(&table, "y", 42), &items[1].node);
	assert_ptr_equal(lru_find(&table, "z", 42), &items[2].node);
	assert_null(lru_find(&table, "w", 42));
	/* A key is found only with its own hash. */
	assert_null(lru_find(&table, "x", 43));
	lru_destroy(&table);
}

static void test_colliding_entries_removed_one_by_one_leave_the_others_found(void **state)
{
	(void)state;
	struct lru_table table;
	struct item items[3];
	const uint64_t hash = 42;
	table_of_collisions(&table, items, hash);
	lru_remove(&table, &items[1].node);
	assert_null(lru_find(&table, "y", hash));
	assert_ptr_equal(lru_find(&table, "x", hash), &items[0].node);
	assert_ptr_equal(lru_find(&table, "z", hash), &items[2].node);
	lru_remove(&table, &items[2].node);
	assert_null(lru_find(&table, "z", hash));
	assert_ptr_equal(lru_find(&table, "x", hash), &items[0].node);
	lru_remove(&table, &items[0].node);
	assert_null(lru_find(&table, "x", hash));
	assert_null(lru_oldest(&table));
	assert_int_equal(table.count, 0);
	lru_destroy(&table);
}

static void test_one_bucket_holds_many_keys_each_found(void **state)
{
	(void)state;
	enum { COUNT = 100 };
	struct lru_table table;
	struct item *items = calloc(COUNT, sizeof(*items));
	assert_non_null(items);
	assert_int_equal(lru_init(&table, 1), 0);
	for (size_t i = 0; i < COUNT; i++) {
		char key[KEY_MAX];
		snprintf(key, sizeof(key), "/music/%03zu.mp3", i);
		item_init(&items[i], key);
		lru_insert(&table, &items[i].node);
	}
	/* Remove every third; the rest stay found, the removed are gone. */
	for (size_t i = 0; i < COUNT; i += 3)
		lru_remove(&table, &items[i].node);
	for (size_t i = 0; i < COUNT; i++) {
		if (i % 3 == 0)
			assert_null(find(&table, items[i].key));
		else
			assert_ptr_equal(find(&table, items[i].key), &items[i]);
	}
	assert_int_equal(table.count, COUNT - (COUNT + 2) / 3);
	assert_ptr_equal(lru_oldest(&table), &items[1].node);
	lru_destroy(&table);
	free(items);
}

/* Shards: entries go in the shard a test names, not the one their hash picks. */

static void release_item(struct lru_shard *shard, struct lru_node *node)
{
	lru_remove(&shard->table, node);
	struct item *item = lru_entry(node, struct item, node);
	item->released++;
	item->released_from = shard;
}

static void shard_insert(struct lru_shard *shard, struct item *item, const char *key)
{
	item_init(item, key);
	assert_int_equal(lru_shard_take_slot(shard), 1);
	lru_insert(&shard->table, &item->node);
}

static void test_slots_are_bounded_over_all_shards_together(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries = 99;
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 3, &entries), 0);
	assert_int_equal(entries, 0);
	assert_int_equal(lru_shard_take_slot(&shards[0]), 1);
	assert_int_equal(lru_shard_take_slot(&shards[1]), 1);
	assert_int_equal(lru_shard_take_slot(&shards[2]), 1);
	assert_int_equal(entries, 3);
	/* Full: neither a shard that has taken nothing nor one that has may take more. */
	assert_int_equal(lru_shard_take_slot(&shards[3]), 0);
	assert_int_equal(lru_shard_take_slot(&shards[0]), 0);
	assert_int_equal(entries, 3);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

static void test_one_shard_may_take_every_slot(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 5, &entries), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(lru_shard_take_slot(&shards[2]), 1);
	assert_int_equal(lru_shard_take_slot(&shards[2]), 0);
	assert_int_equal(lru_shard_take_slot(&shards[1]), 0);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

static void test_bound_of_zero_takes_no_slot(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 0, &entries), 0);
	for (size_t i = 0; i < SHARD_COUNT; i++)
		assert_int_equal(lru_shard_take_slot(&shards[i]), 0);
	assert_int_equal(entries, 0);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

static void test_remove_gives_its_slot_back_to_any_shard(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[3];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 3, &entries), 0);
	shard_insert(&shards[0], &items[0], "a");
	shard_insert(&shards[1], &items[1], "b");
	shard_insert(&shards[1], &items[2], "c");
	assert_int_equal(lru_shard_take_slot(&shards[3]), 0);
	lru_remove(&shards[1].table, &items[1].node);
	assert_int_equal(entries, 2);
	assert_int_equal(lru_shard_take_slot(&shards[3]), 1);
	lru_insert(&shards[3].table, &items[1].node);
	assert_int_equal(entries, 3);
	assert_int_equal(lru_shard_take_slot(&shards[0]), 0);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
	assert_int_equal(entries, 0);
}

static void test_evict_elsewhere_releases_the_oldest_entry_of_another_shard(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[2];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 2, &entries), 0);
	shard_insert(&shards[2], &items[0], "older");
	shard_insert(&shards[2], &items[1], "newer");
	struct lru_shard *self = &shards[0];
	pthread_mutex_lock(&self->lock);
	assert_int_equal(lru_shard_take_slot(self), 0);
	assert_int_equal(lru_shards_evict_elsewhere(shards, SHARD_COUNT, self, release_item), 1);
	assert_int_equal(items[0].released, 1);
	assert_ptr_equal(items[0].released_from, &shards[2]);
	assert_int_equal(items[1].released, 0);
	assert_null(lru_find(&shards[2].table, "older", lru_hash("older")));
	assert_ptr_equal(lru_find(&shards[2].table, "newer", lru_hash("newer")), &items[1].node);
	assert_int_equal(shards[2].stats.evictions, 1);
	assert_int_equal(self->stats.evictions, 0);
	assert_int_equal(entries, 1);
	/* The slot it freed is this shard's to take. */
	assert_int_equal(lru_shard_take_slot(self), 1);
	pthread_mutex_unlock(&self->lock);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

static void test_evict_elsewhere_never_takes_from_its_own_shard(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[2];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 2, &entries), 0);
	struct lru_shard *self = &shards[1];
	shard_insert(self, &items[0], "a");
	shard_insert(self, &items[1], "b");
	pthread_mutex_lock(&self->lock);
	assert_int_equal(lru_shards_evict_elsewhere(shards, SHARD_COUNT, self, release_item), 0);
	pthread_mutex_unlock(&self->lock);
	assert_int_equal(items[0].released, 0);
	assert_int_equal(items[1].released, 0);
	assert_int_equal(self->table.count, 2);
	for (size_t i = 0; i < SHARD_COUNT; i++)
		assert_int_equal(shards[i].stats.evictions, 0);
	assert_int_equal(entries, 2);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

static void test_evict_elsewhere_with_every_shard_empty_returns_zero(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 2, &entries), 0);
	pthread_mutex_lock(&shards[3].lock);
	assert_int_equal(
		lru_shards_evict_elsewhere(shards, SHARD_COUNT, &shards[3], release_item), 0);
	pthread_mutex_unlock(&shards[3].lock);
	struct cache_stats stats = lru_shards_stats(shards, SHARD_COUNT);
	assert_int_equal(stats.evictions, 0);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

/* Holds a shard's lock from another thread until told to let go. */
struct holder {
	pthread_mutex_t *lock;
	pthread_barrier_t locked, done;
};

static void *hold_lock(void *argument)
{
	struct holder *holder = argument;
	pthread_mutex_lock(holder->lock);
	pthread_barrier_wait(&holder->locked);
	pthread_barrier_wait(&holder->done);
	pthread_mutex_unlock(holder->lock);
	return NULL;
}

static void test_evict_elsewhere_passes_over_a_shard_locked_by_another_thread(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[2];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 2, &entries), 0);
	shard_insert(&shards[1], &items[0], "busy");
	shard_insert(&shards[2], &items[1], "free");

	struct holder holder = {.lock = &shards[1].lock};
	pthread_barrier_init(&holder.locked, NULL, 2);
	pthread_barrier_init(&holder.done, NULL, 2);
	pthread_t thread;
	assert_int_equal(pthread_create(&thread, NULL, hold_lock, &holder), 0);
	pthread_barrier_wait(&holder.locked);

	pthread_mutex_lock(&shards[0].lock);
	/* Shard 1 is busy, so the entry of shard 2 goes, though shard 1's is older. */
	assert_int_equal(lru_shards_evict_elsewhere(shards, SHARD_COUNT, &shards[0], release_item),
			 1);
	assert_int_equal(items[0].released, 0);
	assert_int_equal(items[1].released, 1);
	assert_ptr_equal(items[1].released_from, &shards[2]);
	/* Now only the busy shard has an entry: nothing can be evicted. */
	assert_int_equal(lru_shards_evict_elsewhere(shards, SHARD_COUNT, &shards[0], release_item),
			 0);
	assert_int_equal(items[0].released, 0);
	pthread_mutex_unlock(&shards[0].lock);

	pthread_barrier_wait(&holder.done);
	assert_int_equal(pthread_join(thread, NULL), 0);
	pthread_barrier_destroy(&holder.locked);
	pthread_barrier_destroy(&holder.done);
	assert_int_equal(shards[1].stats.evictions, 0);
	assert_int_equal(shards[2].stats.evictions, 1);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

/* One thread taking slots from its own shard until the cache is full. */
struct taker {
	struct lru_shard *shard;
	pthread_barrier_t *start;
	size_t taken;
};

static void *take_until_full(void *argument)
{
	struct taker *taker = argument;
	pthread_barrier_wait(taker->start);
	while (lru_shard_take_slot(taker->shard))
		taker->taken++;
	return NULL;
}

static void test_shards_taking_slots_at_once_never_pass_the_bound(void **state)
{
	(void)state;
	enum { SHARDS = 8, MAX = 100000, ROUNDS = 20 };
	for (int round = 0; round < ROUNDS; round++) {
		struct lru_shard shards[SHARDS];
		_Atomic size_t entries;
		assert_int_equal(lru_shards_init(shards, SHARDS, MAX, &entries), 0);
		pthread_barrier_t start;
		pthread_barrier_init(&start, NULL, SHARDS);
		struct taker takers[SHARDS];
		pthread_t threads[SHARDS];
		for (size_t i = 0; i < SHARDS; i++) {
			takers[i] = (struct taker){.shard = &shards[i], .start = &start};
			assert_int_equal(
				pthread_create(&threads[i], NULL, take_until_full, &takers[i]), 0);
		}
		size_t total = 0;
		for (size_t i = 0; i < SHARDS; i++) {
			assert_int_equal(pthread_join(threads[i], NULL), 0);
			total += takers[i].taken;
		}
		pthread_barrier_destroy(&start);
		assert_int_equal(total, MAX);
		assert_int_equal(entries, MAX);
		lru_shards_destroy(shards, SHARDS, release_item);
	}
}

/* lru_shard_insert_bounded, as the caches call it: item into shard, its lock held. */
static int insert_bounded(struct lru_shard *shards, struct lru_shard *shard, struct item *item,
			  const char *key)
{
	item_init(item, key);
	pthread_mutex_lock(&shard->lock);
	int inserted =
		lru_shard_insert_bounded(shards, SHARD_COUNT, shard, &item->node, release_item);
	pthread_mutex_unlock(&shard->lock);
	return inserted;
}

static void test_bounded_insert_with_room_adds_the_newest_entry_and_evicts_nothing(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[2];
	char order[64];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 3, &entries), 0);
	assert_int_equal(insert_bounded(shards, &shards[1], &items[0], "a"), 1);
	assert_int_equal(insert_bounded(shards, &shards[1], &items[1], "b"), 1);
	assert_int_equal(entries, 2);
	assert_int_equal(items[0].released + items[1].released, 0);
	assert_int_equal(lru_shards_stats(shards, SHARD_COUNT).evictions, 0);
	drain_order(&shards[1].table, order, sizeof(order));
	assert_string_equal(order, "a b");
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

static void test_bounded_insert_of_a_present_key_releases_the_old_entry_uncounted(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[3];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 2, &entries), 0);
	assert_int_equal(insert_bounded(shards, &shards[0], &items[0], "a"), 1);
	assert_int_equal(insert_bounded(shards, &shards[0], &items[1], "b"), 1);
	/* The cache is full, but the old "a" makes the room: "b" stays. */
	assert_int_equal(insert_bounded(shards, &shards[0], &items[2], "a"), 1);
	assert_int_equal(items[0].released, 1);
	assert_int_equal(items[1].released, 0);
	assert_ptr_equal(find(&shards[0].table, "a"), &items[2]);
	assert_ptr_equal(find(&shards[0].table, "b"), &items[1]);
	assert_int_equal(entries, 2);
	assert_int_equal(lru_shards_stats(shards, SHARD_COUNT).evictions, 0);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

static void test_bounded_insert_into_a_full_cache_evicts_its_shards_oldest_entry(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[4];
	char order[64];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 3, &entries), 0);
	assert_int_equal(insert_bounded(shards, &shards[2], &items[0], "old"), 1);
	assert_int_equal(insert_bounded(shards, &shards[3], &items[1], "other"), 1);
	assert_int_equal(insert_bounded(shards, &shards[2], &items[2], "mid"), 1);
	/* Full: the shard's own oldest goes, though another shard holds an entry too. */
	assert_int_equal(insert_bounded(shards, &shards[2], &items[3], "new"), 1);
	assert_int_equal(items[0].released, 1);
	assert_ptr_equal(items[0].released_from, &shards[2]);
	assert_int_equal(items[1].released + items[2].released, 0);
	assert_int_equal(shards[2].stats.evictions, 1);
	assert_int_equal(shards[3].stats.evictions, 0);
	assert_int_equal(entries, 3);
	drain_order(&shards[2].table, order, sizeof(order));
	assert_string_equal(order, "mid new");
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

static void test_bounded_insert_into_an_empty_shard_evicts_another_shards_oldest(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[3];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 2, &entries), 0);
	assert_int_equal(insert_bounded(shards, &shards[1], &items[0], "older"), 1);
	assert_int_equal(insert_bounded(shards, &shards[1], &items[1], "newer"), 1);
	assert_int_equal(insert_bounded(shards, &shards[0], &items[2], "fresh"), 1);
	assert_int_equal(items[0].released, 1);
	assert_ptr_equal(items[0].released_from, &shards[1]);
	assert_int_equal(items[1].released, 0);
	assert_ptr_equal(find(&shards[0].table, "fresh"), &items[2]);
	assert_int_equal(shards[1].stats.evictions, 1);
	assert_int_equal(shards[0].stats.evictions, 0);
	assert_int_equal(entries, 2);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

static void test_bounded_insert_with_every_other_shard_busy_is_refused_and_counted(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[2];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 1, &entries), 0);
	assert_int_equal(insert_bounded(shards, &shards[1], &items[0], "held"), 1);

	struct holder holder = {.lock = &shards[1].lock};
	pthread_barrier_init(&holder.locked, NULL, 2);
	pthread_barrier_init(&holder.done, NULL, 2);
	pthread_t thread;
	assert_int_equal(pthread_create(&thread, NULL, hold_lock, &holder), 0);
	pthread_barrier_wait(&holder.locked);
	/* The only entry is in a shard another thread holds: no room can be made. */
	assert_int_equal(insert_bounded(shards, &shards[0], &items[1], "refused"), 0);
	pthread_barrier_wait(&holder.done);
	assert_int_equal(pthread_join(thread, NULL), 0);
	pthread_barrier_destroy(&holder.locked);
	pthread_barrier_destroy(&holder.done);

	assert_null(find(&shards[0].table, "refused"));
	assert_int_equal(shards[0].table.count, 0);
	assert_int_equal(items[0].released + items[1].released, 0);
	assert_ptr_equal(find(&shards[1].table, "held"), &items[0]);
	assert_int_equal(shards[0].stats.evictions, 1);
	assert_int_equal(shards[1].stats.evictions, 0);
	assert_int_equal(entries, 1);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

static void test_bounded_insert_into_a_cache_bounded_at_zero_is_refused(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[1];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 0, &entries), 0);
	assert_int_equal(insert_bounded(shards, &shards[2], &items[0], "a"), 0);
	assert_null(find(&shards[2].table, "a"));
	assert_int_equal(entries, 0);
	assert_int_equal(shards[2].stats.evictions, 1);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

/* One thread's bounded inserts, each into the next shard in turn, as workers' puts spread. */
struct inserter {
	struct lru_shard *shards;
	size_t first_shard;
	struct item *items;
	size_t count;
	int *refused; /* per item: 1 if its insert was refused */
	pthread_barrier_t *start;
};

static void *insert_all(void *argument)
{
	struct inserter *inserter = argument;
	pthread_barrier_wait(inserter->start);
	for (size_t i = 0; i < inserter->count; i++) {
		struct lru_shard *shard =
			&inserter->shards[(inserter->first_shard + i) % SHARD_COUNT];
		pthread_mutex_lock(&shard->lock);
		int inserted = lru_shard_insert_bounded(inserter->shards, SHARD_COUNT, shard,
							&inserter->items[i].node, release_item);
		pthread_mutex_unlock(&shard->lock);
		inserter->refused[i] = !inserted;
	}
	return NULL;
}

static void test_bounded_inserts_from_many_threads_keep_the_bound_and_account_for_all(void **state)
{
	(void)state;
	enum { THREADS = 4, PER_THREAD = 5000, MAX = 7, TOTAL = THREADS * PER_THREAD };
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, MAX, &entries), 0);
	struct item *items = calloc(TOTAL, sizeof(*items));
	int *refused = calloc(TOTAL, sizeof(*refused));
	assert_non_null(items);
	assert_non_null(refused);
	for (size_t i = 0; i < TOTAL; i++) {
		char key[KEY_MAX];
		snprintf(key, sizeof(key), "k%zu", i);
		item_init(&items[i], key);
	}
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, THREADS);
	struct inserter inserters[THREADS];
	pthread_t threads[THREADS];
	for (size_t t = 0; t < THREADS; t++) {
		inserters[t] = (struct inserter){.shards = shards,
						 .first_shard = t,
						 .items = items + t * PER_THREAD,
						 .count = PER_THREAD,
						 .refused = refused + t * PER_THREAD,
						 .start = &start};
		assert_int_equal(pthread_create(&threads[t], NULL, insert_all, &inserters[t]), 0);
	}
	for (size_t t = 0; t < THREADS; t++)
		assert_int_equal(pthread_join(threads[t], NULL), 0);
	pthread_barrier_destroy(&start);

	/* Each item is exactly one of: still in a table, released once, or refused. */
	size_t in_tables = 0, released = 0, refusals = 0;
	for (size_t i = 0; i < TOTAL; i++) {
		assert_true(items[i].released <= 1);
		assert_false(refused[i] && items[i].released);
		released += (size_t)items[i].released;
		refusals += (size_t)refused[i];
	}
	for (size_t s = 0; s < SHARD_COUNT; s++)
		in_tables += shards[s].table.count;
	assert_int_equal(in_tables, MAX);
	assert_int_equal(entries, MAX);
	assert_int_equal(in_tables + released + refusals, TOTAL);
	struct cache_stats stats = lru_shards_stats(shards, SHARD_COUNT);
	assert_int_equal(stats.evictions, released + refusals);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
	free(refused);
	free(items);
}

static void test_stats_are_summed_over_the_shards(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[3];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 10, &entries), 0);
	struct cache_stats stats = lru_shards_stats(shards, SHARD_COUNT);
	assert_int_equal(stats.hits, 0);
	assert_int_equal(stats.misses, 0);
	assert_int_equal(stats.evictions, 0);
	assert_int_equal(stats.entries, 0);
	shard_insert(&shards[0], &items[0], "a");
	shard_insert(&shards[3], &items[1], "b");
	shard_insert(&shards[3], &items[2], "c");
	for (size_t i = 0; i < SHARD_COUNT; i++) {
		shards[i].stats.hits = 1 + i;	      /* 1+2+3+4 = 10 */
		shards[i].stats.misses = 100 * (i + 1); /* 1000 */
		shards[i].stats.evictions = 7;	      /* 28 */
	}
	stats = lru_shards_stats(shards, SHARD_COUNT);
	assert_int_equal(stats.hits, 10);
	assert_int_equal(stats.misses, 1000);
	assert_int_equal(stats.evictions, 28);
	assert_int_equal(stats.entries, 3);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

static void test_destroy_passes_every_entry_to_release(void **state)
{
	(void)state;
	enum { COUNT = 10 };
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	struct item items[COUNT];
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, COUNT, &entries), 0);
	for (size_t i = 0; i < COUNT; i++) {
		char key[KEY_MAX];
		snprintf(key, sizeof(key), "k%zu", i);
		shard_insert(&shards[i % 3], &items[i], key); /* shard 3 stays empty */
	}
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
	for (size_t i = 0; i < COUNT; i++) {
		assert_int_equal(items[i].released, 1);
		assert_ptr_equal(items[i].released_from, &shards[i % 3]);
	}
	assert_int_equal(entries, 0);
}

static void test_shard_for_is_fixed_per_hash_and_reaches_every_shard(void **state)
{
	(void)state;
	struct lru_shard shards[SHARD_COUNT];
	_Atomic size_t entries;
	int reached[SHARD_COUNT] = {0};
	assert_int_equal(lru_shards_init(shards, SHARD_COUNT, 10, &entries), 0);
	for (int i = 0; i < 100; i++) {
		char key[KEY_MAX];
		snprintf(key, sizeof(key), "65f0c0ffee0000000000%04x", i);
		struct lru_shard *shard = lru_shard_for(shards, SHARD_COUNT, lru_hash(key));
		assert_true(shard >= shards && shard < shards + SHARD_COUNT);
		assert_ptr_equal(lru_shard_for(shards, SHARD_COUNT, lru_hash(key)), shard);
		reached[shard - shards] = 1;
	}
	for (size_t i = 0; i < SHARD_COUNT; i++)
		assert_int_equal(reached[i], 1);
	lru_shards_destroy(shards, SHARD_COUNT, release_item);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_is_the_same_for_equal_keys_in_different_buffers),
		cmocka_unit_test(test_hash_differs_for_distinct_keys),
		cmocka_unit_test(test_empty_table_finds_nothing_and_has_no_oldest),
		cmocka_unit_test(test_zero_buckets_still_makes_a_usable_table),
		cmocka_unit_test(test_inserted_entries_are_found_by_key),
		cmocka_unit_test(test_order_is_the_order_of_insertion),
		cmocka_unit_test(test_find_does_not_change_the_order),
		cmocka_unit_test(test_touch_of_the_oldest_makes_it_the_newest),
		cmocka_unit_test(test_touch_of_a_middle_entry_makes_it_the_newest),
		cmocka_unit_test(test_touch_of_the_newest_changes_nothing),
		cmocka_unit_test(test_touch_of_the_only_entry_keeps_it_oldest),
		cmocka_unit_test(test_repeated_touches_give_the_order_of_last_use),
		cmocka_unit_test(test_remove_of_the_oldest),
		cmocka_unit_test(test_remove_of_a_middle_entry),
		cmocka_unit_test(test_remove_of_the_newest),
		cmocka_unit_test(test_remove_of_the_only_entry_empties_the_table),
		cmocka_unit_test(test_removed_then_reinserted_entry_is_the_newest),
		cmocka_unit_test(test_same_hash_different_keys_are_both_found),
		cmocka_unit_test(test_colliding_entries_removed_one_by_one_leave_the_others_found),
		cmocka_unit_test(test_one_bucket_holds_many_keys_each_found),
		cmocka_unit_test(test_slots_are_bounded_over_all_shards_together),
		cmocka_unit_test(test_one_shard_may_take_every_slot),
		cmocka_unit_test(test_bound_of_zero_takes_no_slot),
		cmocka_unit_test(test_remove_gives_its_slot_back_to_any_shard),
		cmocka_unit_test(test_evict_elsewhere_releases_the_oldest_entry_of_another_shard),
		cmocka_unit_test(test_evict_elsewhere_never_takes_from_its_own_shard),
		cmocka_unit_test(test_evict_elsewhere_with_every_shard_empty_returns_zero),
		cmocka_unit_test(test_evict_elsewhere_passes_over_a_shard_locked_by_another_thread),
		cmocka_unit_test(test_shards_taking_slots_at_once_never_pass_the_bound),
		cmocka_unit_test(test_bounded_insert_with_room_adds_the_newest_entry_and_evicts_nothing),
		cmocka_unit_test(test_bounded_insert_of_a_present_key_releases_the_old_entry_uncounted),
		cmocka_unit_test(test_bounded_insert_into_a_full_cache_evicts_its_shards_oldest_entry),
		cmocka_unit_test(test_bounded_insert_into_an_empty_shard_evicts_another_shards_oldest),
		cmocka_unit_test(test_bounded_insert_with_every_other_shard_busy_is_refused_and_counted),
		cmocka_unit_test(test_bounded_insert_into_a_cache_bounded_at_zero_is_refused),
		cmocka_unit_test(
			test_bounded_inserts_from_many_threads_keep_the_bound_and_account_for_all),
		cmocka_unit_test(test_stats_are_summed_over_the_shards),
		cmocka_unit_test(test_destroy_passes_every_entry_to_release),
		cmocka_unit_test(test_shard_for_is_fixed_per_hash_and_reaches_every_shard),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
