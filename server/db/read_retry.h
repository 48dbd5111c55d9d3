/*
 * read_retry: which failed database reads are tried once more, and whether
 * the deadline leaves room for that. Pure (libmongoc's error numbers in, a
 * decision out); the lookup pool asks it for lookups, probes and GridFS
 * reads alike (lookup.c), and gridfs_store.c for what a failed chunk read is.
 *
 * Retryable, as the drivers' retryable reads specification has it: a network
 * error (a connection closed or reset, mid-reply included) and the errors a
 * replica set member answers while it steps down, recovers or shuts down
 * ("not primary" 10107 and 13435, InterruptedDueToReplStateChange 11602,
 * PrimarySteppedDown 189, ShutdownInProgress 91, ...). libmongoc marks such
 * a member unknown and checks the set again, so the retry's server selection
 * finds the new primary once there is one. A retryable read that fails again,
 * or has no time left for a retry, is answered 503 with Retry-After, never 500.
 */
#ifndef MUSICD_READ_RETRY_H
#define MUSICD_READ_RETRY_H

#include <stdbool.h>
#include <stdint.h>

enum read_failure {
	READ_RETRYABLE,	  /* once more if it fits the deadline; then 503 */
	READ_UNAVAILABLE, /* no member could be selected in time: 503, not retried */
	READ_FAILED,	  /* any other error (a bad query, an auth error): 500 and logged */
};

/* What a failed read's bson_error_t (libmongoc's error API 2: domain, code) calls for. */
enum read_failure read_retry_classify(uint32_t domain, uint32_t code);

/*
 * Whether a retry fits: at least half of the deadline (timeout_ms) is left
 * (remaining_ms). A first try that failed fast (a reply with an error, a
 * connection that broke) leaves most of it; one that used up more than half
 * (a socket timeout) would leave too little for a second to end in time.
 */
bool read_retry_fits(long remaining_ms, unsigned timeout_ms);

#endif
