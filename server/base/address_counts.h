/*
 * address_counts: how many of something each client address holds at once,
 * shared by every thread, for a cap per address (--max-streams-per-client:
 * the answers with a body in flight, across all workers). A holder takes a
 * place under the cap and gives it back exactly once; an address is kept
 * only while it holds a place, so the table is as large as what is held
 * now, never as the set of addresses ever seen.
 *
 * Keys are 16 bytes: an IPv6 prefix, or an IPv4 address as IPv4-mapped
 * IPv6 (proxy_trust_client_key makes them), so one client is one key however
 * its address was written. The table is sharded, one mutex per shard, and
 * hashed with a seed drawn at creation, so addresses chosen to collide
 * cannot be precomputed.
 */
#ifndef MUSICD_ADDRESS_COUNTS_H
#define MUSICD_ADDRESS_COUNTS_H

#include <stdint.h>

#define ADDRESS_KEY_SIZE 16

struct address_counts;
struct address_count; /* one address's place-holders; what address_counts_take returns */

enum address_take {
	ADDRESS_TAKEN,	   /* a place is held: give it back with address_counts_give */
	ADDRESS_AT_CAP,	   /* the address holds the cap's count already */
	ADDRESS_NO_MEMORY, /* a new address could not be kept */
};

/* An empty table; NULL if out of memory. */
struct address_counts *address_counts_new(void);

/* Frees the table; every place must have been given back. NULL is nothing. */
void address_counts_free(struct address_counts *counts);

/*
 * Takes one place for key if it holds fewer than cap (cap 0: no place can be
 * taken). On ADDRESS_TAKEN *held is what to give back. From any thread.
 */
enum address_take address_counts_take(struct address_counts *counts,
				      const uint8_t key[ADDRESS_KEY_SIZE], unsigned cap,
				      struct address_count **held);

/* Gives back the place address_counts_take took. From any thread. */
void address_counts_give(struct address_count *held);

/* The key a held place counts for. */
const uint8_t *address_count_key(const struct address_count *held);

/* Places key holds now (0 for an address not in the table). */
unsigned address_counts_of(struct address_counts *counts, const uint8_t key[ADDRESS_KEY_SIZE]);

/* Places held now, over every address (a gauge for the metrics). */
uint64_t address_counts_total(struct address_counts *counts);

#endif
