/*
 * listing: an array sorted once, at the end, as the walk's order is (byte
 * order of the path): the tracks arrive from two places, the unchanged ones
 * as the plan meets them and the written ones as their batch returns.
 */
#include "listing.h"

#include "escape.h"

#include <stdlib.h>
#include <string.h>

#define LISTING_INITIAL_CAPACITY 1024
/* A signed URL: the base, an escaped name (each byte of a path's last segment as %XX at most), a token. */
#define LISTING_URL_MAX (4096 + 3 * 256 + URL_TOKEN_MAX)

void listing_init(struct listing *listing)
{
	memset(listing, 0, sizeof(*listing));
}

void listing_free(struct listing *listing)
{
	for (size_t i = 0; i < listing->count; i++) {
		free(listing->entries[i].path);
		free(listing->entries[i].artist);
		free(listing->entries[i].title);
	}
	free(listing->entries);
	memset(listing, 0, sizeof(*listing));
}

static int copy(const char *text, char **out)
{
	*out = NULL;
	return text != NULL && (*out = strdup(text)) == NULL ? -1 : 0;
}

int listing_add(struct listing *listing, const char *path, const bson_oid_t *id,
		const char *artist, const char *title)
{
	if (listing->count == listing->capacity) {
		size_t capacity = listing->capacity ? listing->capacity * 2 : LISTING_INITIAL_CAPACITY;
		struct listing_entry *grown = realloc(listing->entries, capacity * sizeof(*grown));
		if (grown == NULL)
			return -1;
		listing->entries = grown;
		listing->capacity = capacity;
	}
	struct listing_entry *entry = &listing->entries[listing->count];
	memset(entry, 0, sizeof(*entry));
	bson_oid_copy(id, &entry->id);
	if (copy(path, &entry->path) < 0 || copy(artist, &entry->artist) < 0 ||
	    copy(title, &entry->title) < 0) {
		free(entry->path);
		free(entry->artist);
		return -1;
	}
	listing->count++;
	return 0;
}

static int compare_entries(const void *a, const void *b)
{
	return strcmp(((const struct listing_entry *)a)->path,
		      ((const struct listing_entry *)b)->path);
}

/* The line's URL, signed when there is a signer (into signed_url); NULL when it cannot be. */
static const char *url_of(const char *base, const char *hex, const char *name,
			  const struct listing_signer *signer, char **unsigned_url, char *signed_url,
			  size_t size)
{
	if (asprintf(unsigned_url, "%s/musicdb/%s/%s", base, hex, name) < 0) {
		*unsigned_url = NULL;
		return NULL;
	}
	if (signer == NULL)
		return *unsigned_url;
	return url_token_sign_url(signer->key, *unsigned_url, signer->parameter, signer->expires,
				  signed_url, size) > 0
		       ? signed_url
		       : NULL;
}

int listing_print(struct listing *listing, const char *base, const struct listing_signer *signer,
		  FILE *out)
{
	if (listing->count > 1)
		qsort(listing->entries, listing->count, sizeof(*listing->entries), compare_entries);
	for (size_t i = 0; i < listing->count; i++) {
		const struct listing_entry *entry = &listing->entries[i];
		char hex[25];
		bson_oid_to_string(&entry->id, hex);
		const char *name = strrchr(entry->path, '/');
		const char *artist = entry->artist ? entry->artist : "";
		const char *title = entry->title ? entry->title : "";
		char *url_name = escape_for_url(name ? name + 1 : entry->path);
		char *shown_artist = escape_for_terminal(artist, strlen(artist));
		char *shown_title = escape_for_terminal(title, strlen(title));
		char *unsigned_url = NULL, signed_url[LISTING_URL_MAX];
		const char *url = url_name ? url_of(base, hex, url_name, signer, &unsigned_url,
						    signed_url, sizeof(signed_url))
					   : NULL;
		int status = url && shown_artist && shown_title ? 0 : -1;
		if (status == 0)
			fprintf(out, "%s\t%s\t%s\n", url, shown_artist, shown_title);
		free(unsigned_url);
		free(url_name);
		free(shown_artist);
		free(shown_title);
		if (status < 0)
			return -1;
	}
	return 0;
}
