/*
 * known: a sorted array searched by bsearch: a library of a million files is
 * a few tens of megabytes here, and one sort replaces a hash table.
 */
#include "known.h"

#include <stdlib.h>
#include <string.h>

#define KNOWN_INITIAL_CAPACITY 1024

void known_init(struct known *known)
{
	memset(known, 0, sizeof(*known));
}

void known_free(struct known *known)
{
	for (size_t i = 0; i < known->count; i++) {
		free(known->entries[i].path);
		free(known->entries[i].artist);
		free(known->entries[i].title);
	}
	free(known->entries);
	memset(known, 0, sizeof(*known));
}

struct known_entry *known_add(struct known *known, const char *path)
{
	if (known->count == known->capacity) {
		size_t capacity = known->capacity ? known->capacity * 2 : KNOWN_INITIAL_CAPACITY;
		struct known_entry *grown = realloc(known->entries, capacity * sizeof(*grown));
		if (grown == NULL)
			return NULL;
		known->entries = grown;
		known->capacity = capacity;
	}
	struct known_entry *entry = &known->entries[known->count];
	memset(entry, 0, sizeof(*entry));
	if ((entry->path = strdup(path)) == NULL)
		return NULL;
	known->count++;
	return entry;
}

static int compare_entries(const void *a, const void *b)
{
	return strcmp(((const struct known_entry *)a)->path, ((const struct known_entry *)b)->path);
}

void known_sort(struct known *known)
{
	if (known->count > 1)
		qsort(known->entries, known->count, sizeof(*known->entries), compare_entries);
}

static int compare_key(const void *key, const void *entry)
{
	return strcmp(key, ((const struct known_entry *)entry)->path);
}

struct known_entry *known_find(const struct known *known, const char *path)
{
	if (known->count == 0)
		return NULL;
	return bsearch(path, known->entries, known->count, sizeof(*known->entries), compare_key);
}

/* A string field's copy into *out; 0, or -1 when out of memory. */
static int take_string(const bson_t *document, const char *name, char **out)
{
	bson_iter_t iter;
	if (!bson_iter_init_find(&iter, document, name) || !BSON_ITER_HOLDS_UTF8(&iter))
		return 0;
	*out = strdup(bson_iter_utf8(&iter, NULL));
	return *out == NULL ? -1 : 0;
}

int known_take_document(struct known_entry *entry, const bson_t *document)
{
	bson_iter_t iter;
	if (bson_iter_init_find(&iter, document, "_id") && BSON_ITER_HOLDS_OID(&iter)) {
		bson_oid_copy(bson_iter_oid(&iter), &entry->id);
		entry->has_oid = true;
	}
	if (bson_iter_init_find(&iter, document, "size") &&
	    (BSON_ITER_HOLDS_INT64(&iter) || BSON_ITER_HOLDS_INT32(&iter))) {
		entry->size = bson_iter_as_int64(&iter);
		entry->has_size = true;
	}
	if (bson_iter_init_find(&iter, document, "mtime") && BSON_ITER_HOLDS_DATE_TIME(&iter)) {
		entry->mtime_ms = bson_iter_date_time(&iter);
		entry->has_mtime = true;
	}
	entry->has_sha256 = bson_iter_init_find(&iter, document, "sha256") &&
			    BSON_ITER_HOLDS_UTF8(&iter);
	entry->stale_duration = bson_iter_init_find(&iter, document, "duration") &&
				(BSON_ITER_HOLDS_INT32(&iter) || BSON_ITER_HOLDS_INT64(&iter));
	if (take_string(document, "artist", &entry->artist) < 0 ||
	    take_string(document, "title", &entry->title) < 0)
		return -1;
	return 0;
}
