/*
 * Unit tests for server/base/address_counts.h, as a specification of the
 * table --max-streams-per-client counts in: an address takes places up to
 * its cap and no further, gives each back once, and is forgotten when it
 * holds none; addresses never share a count; a cap of 0 gives no place;
 * the total is every address's places; and threads taking and giving the
 * same address at once never see more than the cap held.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/address_counts.h"

static void key_of(uint8_t key[ADDRESS_KEY_SIZE], unsigned n)
{
	memset(key, 0, ADDRESS_KEY_SIZE);
	key[10] = key[11] = 0xff;
	key[12] = 192;
	key[13] = 0;
	key[14] = (uint8_t)(n >> 8);
	key[15] = (uint8_t)n;
}

static int setup(void **state)
{
	*state = address_counts_new();
	return *state != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	address_counts_free(*state);
	return 0;
}

static void test_an_address_takes_places_up_to_its_cap_and_no_further(void **state)
{
	struct address_counts *counts = *state;
	uint8_t key[ADDRESS_KEY_SIZE];
	struct address_count *held[3] = {NULL, NULL, NULL};
	key_of(key, 1);
	assert_int_equal(address_counts_take(counts, key, 2, &held[0]), ADDRESS_TAKEN);
	assert_int_equal(address_counts_take(counts, key, 2, &held[1]), ADDRESS_TAKEN);
	assert_int_equal(address_counts_take(counts, key, 2, &held[2]), ADDRESS_AT_CAP);
	assert_null(held[2]);
	assert_int_equal(address_counts_of(counts, key), 2);
	address_counts_give(held[0]);
	address_counts_give(held[1]);
}

static void test_a_place_given_back_can_be_taken_again(void **state)
{
	struct address_counts *counts = *state;
	uint8_t key[ADDRESS_KEY_SIZE];
	struct address_count *held, *again;
	key_of(key, 2);
	assert_int_equal(address_counts_take(counts, key, 1, &held), ADDRESS_TAKEN);
	assert_int_equal(address_counts_take(counts, key, 1, &again), ADDRESS_AT_CAP);
	address_counts_give(held);
	assert_int_equal(address_counts_take(counts, key, 1, &again), ADDRESS_TAKEN);
	address_counts_give(again);
}

static void test_an_address_holding_nothing_is_forgotten(void **state)
{
	struct address_counts *counts = *state;
	uint8_t key[ADDRESS_KEY_SIZE];
	struct address_count *held;
	key_of(key, 3);
	assert_int_equal(address_counts_of(counts, key), 0);
	assert_int_equal(address_counts_take(counts, key, 5, &held), ADDRESS_TAKEN);
	assert_int_equal(address_counts_of(counts, key), 1);
	address_counts_give(held);
	assert_int_equal(address_counts_of(counts, key), 0);
	assert_int_equal(address_counts_total(counts), 0);
}

static void test_addresses_never_share_a_count(void **state)
{
	struct address_counts *counts = *state;
	enum { ADDRESSES = 5000 };
	static struct address_count *held[ADDRESSES];
	uint8_t key[ADDRESS_KEY_SIZE];
	/* Far more addresses than buckets: chains are walked, and each key is told apart. */
	for (unsigned n = 0; n < ADDRESSES; n++) {
		key_of(key, n);
		assert_int_equal(address_counts_take(counts, key, 1, &held[n]), ADDRESS_TAKEN);
	}
	assert_int_equal(address_counts_total(counts), ADDRESSES);
	for (unsigned n = 0; n < ADDRESSES; n++) {
		struct address_count *extra;
		key_of(key, n);
		assert_int_equal(address_counts_of(counts, key), 1);
		assert_int_equal(address_counts_take(counts, key, 1, &extra), ADDRESS_AT_CAP);
	}
	for (unsigned n = 0; n < ADDRESSES; n += 2)
		address_counts_give(held[n]);
	for (unsigned n = 0; n < ADDRESSES; n++) {
		key_of(key, n);
		assert_int_equal(address_counts_of(counts, key), n % 2);
	}
	for (unsigned n = 1; n < ADDRESSES; n += 2)
		address_counts_give(held[n]);
	assert_int_equal(address_counts_total(counts), 0);
}

static void test_a_cap_of_zero_gives_no_place(void **state)
{
	struct address_counts *counts = *state;
	uint8_t key[ADDRESS_KEY_SIZE];
	struct address_count *held = NULL;
	key_of(key, 4);
	assert_int_equal(address_counts_take(counts, key, 0, &held), ADDRESS_AT_CAP);
	assert_null(held);
	assert_int_equal(address_counts_total(counts), 0);
}

static void test_the_total_counts_every_address_s_places(void **state)
{
	struct address_counts *counts = *state;
	uint8_t a[ADDRESS_KEY_SIZE], b[ADDRESS_KEY_SIZE];
	struct address_count *held[3];
	key_of(a, 5);
	key_of(b, 6);
	assert_int_equal(address_counts_take(counts, a, 3, &held[0]), ADDRESS_TAKEN);
	assert_int_equal(address_counts_take(counts, a, 3, &held[1]), ADDRESS_TAKEN);
	assert_int_equal(address_counts_take(counts, b, 3, &held[2]), ADDRESS_TAKEN);
	assert_int_equal(address_counts_total(counts), 3);
	for (int i = 0; i < 3; i++)
		address_counts_give(held[i]);
	assert_int_equal(address_counts_total(counts), 0);
}

/* --- Threads --- */

#define THREADS 4
#define ROUNDS 20000
#define CAP 2

struct race {
	struct address_counts *counts;
	atomic_int held_now; /* what the takers hold, counted by themselves */
	atomic_int most;
	atomic_int taken;
};

static void *take_and_give(void *arg)
{
	struct race *race = arg;
	uint8_t key[ADDRESS_KEY_SIZE];
	key_of(key, 7);
	for (int i = 0; i < ROUNDS; i++) {
		struct address_count *held;
		if (address_counts_take(race->counts, key, CAP, &held) != ADDRESS_TAKEN)
			continue;
		int now = atomic_fetch_add(&race->held_now, 1) + 1;
		int most = atomic_load(&race->most);
		while (now > most && !atomic_compare_exchange_weak(&race->most, &most, now))
			;
		atomic_fetch_add(&race->taken, 1);
		atomic_fetch_sub(&race->held_now, 1);
		address_counts_give(held);
	}
	return NULL;
}

static void test_threads_at_once_never_hold_more_than_the_cap(void **state)
{
	struct race race = {.counts = *state};
	atomic_init(&race.held_now, 0);
	atomic_init(&race.most, 0);
	atomic_init(&race.taken, 0);
	pthread_t threads[THREADS];
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, take_and_give, &race), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);
	assert_true(atomic_load(&race.most) <= CAP);
	assert_true(atomic_load(&race.taken) > 0);
	assert_int_equal(address_counts_total(race.counts), 0);
	uint8_t key[ADDRESS_KEY_SIZE];
	key_of(key, 7);
	assert_int_equal(address_counts_of(race.counts, key), 0);
}

#define TEST(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		TEST(test_an_address_takes_places_up_to_its_cap_and_no_further),
		TEST(test_a_place_given_back_can_be_taken_again),
		TEST(test_an_address_holding_nothing_is_forgotten),
		TEST(test_addresses_never_share_a_count),
		TEST(test_a_cap_of_zero_gives_no_place),
		TEST(test_the_total_counts_every_address_s_places),
		TEST(test_threads_at_once_never_hold_more_than_the_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
