/*
 * listing: what --print-urls prints, one line per track under the given
 * directories that the database holds at the end of the run (added, updated
 * or unchanged): "BASE/musicdb/<id>/<name>\t<artist>\t<title>", in path
 * order, the name percent-encoded, artist and title escaped for a terminal
 * (so a tab in a tag cannot make a column), and the URL signed (a token for
 * its track appended) when a key is given. Pure but for the output stream.
 */
#ifndef MUSICD_IMPORT_LISTING_H
#define MUSICD_IMPORT_LISTING_H

#include <bson/bson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "http/url_token.h"

struct listing_entry {
	char *path, *artist, *title; /* malloc'd; artist and title NULL when absent */
	bson_oid_t id;
};

/* Owns its entries; released by listing_free. */
struct listing {
	struct listing_entry *entries;
	size_t count, capacity;
};

void listing_init(struct listing *listing);
void listing_free(struct listing *listing);

/* Adds a track (strings copied); 0, or -1 when out of memory. */
int listing_add(struct listing *listing, const char *path, const bson_oid_t *id,
		const char *artist, const char *title);

/* What signs each printed URL (--url-signing-key-file): a key, the token's parameter, its exp. */
struct listing_signer {
	const struct url_key *key;
	const char *parameter;
	int64_t expires;
};

/*
 * Prints every entry, sorted by path, under base (no trailing slash), each URL
 * signed when signer is not NULL; -1 when out of memory or a URL cannot be signed.
 */
int listing_print(struct listing *listing, const char *base, const struct listing_signer *signer,
		  FILE *out);

#endif
