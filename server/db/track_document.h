/*
 * track_document: what a track's document yields, as one value from the
 * database to the answer (lwan's one entry per file, everything an answer
 * needs in it): find_track.c reads it from the document found, the lookup
 * cache keeps it (packed: a cached track costs the bytes of its texts), and
 * respond/track.c answers from it. Where the bytes are (a path, or a GridFS
 * entry) comes with the fields an answer takes from the document beside
 * them (struct track_fields).
 *
 * Reading a document is pure (a bson_t in memory; the finds are
 * find_track.c's), and so is packing one: both unit-tested
 * (tests/unit/test_track_document.c).
 *
 * A new field of the document: a member of struct track_fields and its row
 * in track_document.c's table of fields (the option naming it, and how its
 * value is checked); the read, the projection and the cache follow from the
 * row.
 */
#ifndef MUSICD_TRACK_DOCUMENT_H
#define MUSICD_TRACK_DOCUMENT_H

#include <bson/bson.h>
#include <limits.h>
#include <stddef.h>

#include "config/config.h"
#include "db/gridfs_entry.h"
#include "db/lookup_status.h"
#include "http/content_type.h"
#include "http/etag.h"

/* What an answer takes from the document: each a configured field's value, checked; "" for none. */
struct track_fields {
	char etag[ETAG_MAX]; /* --etag-field, as an ETag (quoted) */
	char content_type[CONTENT_TYPE_FIELD_MAX]; /* --content-type-field, a media type */
};

/* A plain value, copied whole; every text is NUL-terminated within its array. */
struct track_document {
	char path[PATH_MAX];	    /* LOOKUP_FOUND: the file's absolute path */
	struct gridfs_entry gridfs; /* LOOKUP_GRIDFS: the file's fs.files entry */
	struct track_fields fields;
};

/* Adds the fields a track's document is read for with config to a find's projection. */
void track_document_project(bson_t *projection, const struct config *config);

/*
 * Reads document (found for mid, projected by track_document_project) into
 * out, the fields beside its file included: LOOKUP_FOUND with out->path;
 * LOOKUP_GRIDFS when its file is in GridFS, *gridfs_id then naming the
 * file's fs.files entry (its entry still to be read into out->gridfs; with
 * --gridfs-field _id the document is that entry); or LOOKUP_NO_PATH with why
 * in detail.
 */
enum lookup_status track_document_read(const bson_t *document, const struct config *config,
				       const char *mid, struct track_document *out,
				       bson_oid_t *gridfs_id, char *detail, size_t detail_size);

/* The bytes track_document_pack needs for document; 0 when a text is not terminated (not kept). */
size_t track_document_packed_size(const struct track_document *document);

/* Writes document into out (track_document_packed_size bytes): its texts by their length only. */
void track_document_pack(const struct track_document *document, unsigned char *out);

/* The document track_document_pack wrote, back into out. */
void track_document_unpack(const unsigned char *packed, struct track_document *out);

#endif
