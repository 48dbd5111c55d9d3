/*
 * document: one audio file as musicd-import stores it (struct track), and the
 * BSON that stores it: the document inserted for a new file, the update of a
 * changed one. Pure (libbson builds in memory). Every string in a track is
 * valid UTF-8; the reader refuses files for which that cannot hold.
 */
#ifndef MUSICD_IMPORT_DOCUMENT_H
#define MUSICD_IMPORT_DOCUMENT_H

#include <bson/bson.h>
#include <stdbool.h>
#include <stdint.h>

#include "hash.h"

/* Owned strings are malloc'd (NULL when absent) and released by track_free. */
struct track {
	char *path; /* canonical absolute path */
	int64_t size;
	int64_t mtime_ms; /* modification time, milliseconds since the epoch (BSON date) */
	char *title, *artist, *album, *album_artist, *genre, *comment;
	unsigned year, number, disc; /* 0 when absent */
	/* Stored as seconds with millisecond precision (a double: 2.613). */
	unsigned duration_ms;
	unsigned bitrate, sample_rate, channels; /* kbit/s, Hz; 0 when unknown */
	bool has_sha256;
	char sha256[HASH_HEX_SIZE];
};

void track_free(struct track *track);

/* Whether name is "_id", a field musicd-import writes, or inside one (a path field may not be). */
bool document_field_is_reserved(const char *name);

/*
 * The document of a new file: { _id: id, <path_field>: path, ...every field
 * present }; a dotted path field is nested ("a.b" -> { a: { b: path } }).
 */
void document_for_insert(const struct track *track, const char *path_field, const bson_oid_t *id,
			 bson_t *out);

/* A changed file: { $set: { <path_field>, ...fields present }, $unset: { ...fields absent } }. */
void document_for_update(const struct track *track, const char *path_field, bson_t *out);

/* The filter { <path_field>: path }. */
void document_filter(const char *path, const char *path_field, bson_t *out);

#endif
