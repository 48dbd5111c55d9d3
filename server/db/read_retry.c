/*
 * read_retry: the retryable reads decision (read_retry.h says which errors
 * and why); the server codes are MongoDB's (src/mongo/base/error_codes.yml).
 */
#include "db/read_retry.h"

#include <mongoc/mongoc.h>

/* The server errors the retryable reads specification retries, by code. */
static const uint32_t RETRYABLE_SERVER_CODES[] = {
	6,     /* HostUnreachable */
	7,     /* HostNotFound */
	89,    /* NetworkTimeout */
	91,    /* ShutdownInProgress */
	134,   /* ReadConcernMajorityNotAvailableYet */
	189,   /* PrimarySteppedDown */
	262,   /* ExceededTimeLimit */
	9001,  /* SocketException */
	10107, /* NotWritablePrimary */
	11600, /* InterruptedAtShutdown */
	11602, /* InterruptedDueToReplStateChange */
	13435, /* NotPrimaryNoSecondaryOk */
	13436, /* NotPrimaryOrSecondary */
};

enum read_failure read_retry_classify(uint32_t domain, uint32_t code)
{
	if (domain == MONGOC_ERROR_SERVER_SELECTION)
		return READ_UNAVAILABLE;
	if (domain == MONGOC_ERROR_STREAM)
		return READ_RETRYABLE;
	/* With error API 2 a server's error is in MONGOC_ERROR_SERVER with the server's code. */
	if (domain == MONGOC_ERROR_SERVER || domain == MONGOC_ERROR_QUERY) {
		for (size_t i = 0; i < sizeof(RETRYABLE_SERVER_CODES) / sizeof(RETRYABLE_SERVER_CODES[0]);
		     i++)
			if (code == RETRYABLE_SERVER_CODES[i])
				return READ_RETRYABLE;
	}
	return READ_FAILED;
}

bool read_retry_fits(long remaining_ms, unsigned timeout_ms)
{
	return remaining_ms > 0 && (unsigned long)remaining_ms >= (timeout_ms + 1) / 2;
}
