/*
 * address_counts: ADDRESS_SHARDS locked shards of chained buckets. An entry
 * is allocated when its address takes its first place and freed when it
 * gives back its last, under its shard's lock; the holder's handle is the
 * entry itself, which knows its shard, so giving back needs no lookup.
 */
#include "base/address_counts.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define ADDRESS_SHARDS 64
#define ADDRESS_BUCKETS 256 /* per shard: 16,384 chains in all */

struct shard;

struct address_count {
	struct address_count *next; /* in its bucket */
	struct shard *shard;
	uint64_t hash;
	unsigned held;
	uint8_t key[ADDRESS_KEY_SIZE];
};

struct shard {
	pthread_mutex_t lock;
	struct address_counts *counts;
	struct address_count *buckets[ADDRESS_BUCKETS];
};

struct address_counts {
	uint64_t seed;
	_Atomic uint64_t total;
	struct shard shards[ADDRESS_SHARDS];
};

/* A keyed mix of the key's two words: the seed decides where an address lands. */
static uint64_t hash_of(const struct address_counts *counts, const uint8_t key[ADDRESS_KEY_SIZE])
{
	uint64_t words[2];
	memcpy(words, key, sizeof(words));
	uint64_t h = counts->seed;
	for (int i = 0; i < 2; i++) {
		h ^= words[i];
		h *= 0x9e3779b97f4a7c15ULL;
		h ^= h >> 31;
	}
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 29);
}

struct address_counts *address_counts_new(void)
{
	struct address_counts *counts = calloc(1, sizeof(*counts));
	if (counts == NULL)
		return NULL;
	if (getrandom(&counts->seed, sizeof(counts->seed), GRND_NONBLOCK) != sizeof(counts->seed))
		counts->seed = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)counts;
	atomic_init(&counts->total, 0);
	for (size_t i = 0; i < ADDRESS_SHARDS; i++) {
		counts->shards[i].counts = counts;
		pthread_mutex_init(&counts->shards[i].lock, NULL);
	}
	return counts;
}

void address_counts_free(struct address_counts *counts)
{
	if (counts == NULL)
		return;
	for (size_t i = 0; i < ADDRESS_SHARDS; i++) {
		struct shard *shard = &counts->shards[i];
		for (size_t b = 0; b < ADDRESS_BUCKETS; b++) {
			for (struct address_count *entry = shard->buckets[b], *next; entry != NULL;
			     entry = next) {
				next = entry->next;
				free(entry);
			}
		}
		pthread_mutex_destroy(&shard->lock);
	}
	free(counts);
}

static struct address_count **slot_of(struct shard *shard, uint64_t hash,
				      const uint8_t key[ADDRESS_KEY_SIZE])
{
	struct address_count **slot = &shard->buckets[(hash >> 8) % ADDRESS_BUCKETS];
	while (*slot != NULL &&
	       ((*slot)->hash != hash || memcmp((*slot)->key, key, ADDRESS_KEY_SIZE) != 0))
		slot = &(*slot)->next;
	return slot;
}

enum address_take address_counts_take(struct address_counts *counts,
				      const uint8_t key[ADDRESS_KEY_SIZE], unsigned cap,
				      struct address_count **held)
{
	uint64_t hash = hash_of(counts, key);
	struct shard *shard = &counts->shards[hash % ADDRESS_SHARDS];
	enum address_take result = ADDRESS_TAKEN;
	pthread_mutex_lock(&shard->lock);
	struct address_count **slot = slot_of(shard, hash, key);
	struct address_count *entry = *slot;
	if (cap == 0 || (entry != NULL && entry->held >= cap)) {
		result = ADDRESS_AT_CAP;
	} else if (entry == NULL && (entry = calloc(1, sizeof(*entry))) == NULL) {
		result = ADDRESS_NO_MEMORY;
	} else {
		if (*slot == NULL) {
			entry->shard = shard;
			entry->hash = hash;
			memcpy(entry->key, key, ADDRESS_KEY_SIZE);
			*slot = entry;
		}
		entry->held++;
		*held = entry;
		atomic_fetch_add_explicit(&counts->total, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&shard->lock);
	return result;
}

void address_counts_give(struct address_count *held)
{
	struct shard *shard = held->shard;
	pthread_mutex_lock(&shard->lock);
	atomic_fetch_sub_explicit(&shard->counts->total, 1, memory_order_relaxed);
	if (--held->held == 0) {
		struct address_count **slot = slot_of(shard, held->hash, held->key);
		*slot = held->next;
		free(held);
	}
	pthread_mutex_unlock(&shard->lock);
}

const uint8_t *address_count_key(const struct address_count *held)
{
	return held->key; /* set when the entry is made, never changed: no lock needed */
}

unsigned address_counts_of(struct address_counts *counts, const uint8_t key[ADDRESS_KEY_SIZE])
{
	uint64_t hash = hash_of(counts, key);
	struct shard *shard = &counts->shards[hash % ADDRESS_SHARDS];
	pthread_mutex_lock(&shard->lock);
	struct address_count *entry = *slot_of(shard, hash, key);
	unsigned held = entry != NULL ? entry->held : 0;
	pthread_mutex_unlock(&shard->lock);
	return held;
}

uint64_t address_counts_total(struct address_counts *counts)
{
	return atomic_load_explicit(&counts->total, memory_order_relaxed);
}
