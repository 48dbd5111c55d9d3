/*
 * known: the documents already in the collection under the given
 * directories, by path: what decides whether a file is new, changed or
 * unchanged, and which documents --prune may delete. Pure: the store fills
 * it, the plan reads it.
 */
#ifndef MUSICD_IMPORT_KNOWN_H
#define MUSICD_IMPORT_KNOWN_H

#include <bson/bson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct known_entry {
	char *path;	   /* malloc'd */
	bson_oid_t id;	   /* the document's _id when it is an ObjectId */
	bool has_oid;
	bool has_size, has_mtime; /* whether the document holds these, as musicd-import writes them */
	int64_t size;
	int64_t mtime_ms;
	bool has_sha256;
	/* A duration in whole seconds (an int): written before durations had milliseconds. */
	bool stale_duration;
	char *artist, *title; /* malloc'd when fetched (--print-urls) and present, else NULL */
	bool seen; /* set when the walk found its file */
};

/* Owns the entries and their paths. */
struct known {
	struct known_entry *entries;
	size_t count, capacity;
};

void known_init(struct known *known);
void known_free(struct known *known);

/* Adds an entry (path copied); returns it, or NULL when out of memory. Order is restored by known_sort. */
struct known_entry *known_add(struct known *known, const char *path);

/* Sorts by path (byte order) so that known_find works; call after the last known_add. */
void known_sort(struct known *known);

/* The entry for path, or NULL. */
struct known_entry *known_find(const struct known *known, const char *path);

/*
 * Fills an entry's other fields from a stored document's fields (size as an
 * int32/int64, mtime as a date, sha256 as a string, artist and title as
 * strings): anything else counts as missing, so the file is read again and
 * the document rewritten. Returns 0, or -1 when out of memory.
 */
int known_take_document(struct known_entry *entry, const bson_t *document);

#endif
