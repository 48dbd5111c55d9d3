/*
 * gridfs_entry: a GridFS file as musicd serves it (the fields of its fs.files
 * entry that matter), and the pure decisions about it: which chunks hold a
 * byte range and which bytes of each chunk belong to it, the length every
 * chunk must have, and the validators and media type of the response.
 * Pure: no I/O, no driver types; unit-tested in tests/unit/test_gridfs_entry.c.
 *
 * GridFS stores a file of `length` bytes as chunks n = 0, 1, ... of
 * `chunkSize` bytes each, the last one shorter when chunkSize does not
 * divide length; chunk n holds bytes [n * chunkSize, (n + 1) * chunkSize).
 */
#ifndef MUSICD_GRIDFS_ENTRY_H
#define MUSICD_GRIDFS_ENTRY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "http/route.h"
#include "http/etag.h"

/* Longer contentType or filename values are ignored (treated as absent). */
#define GRIDFS_TEXT_MAX 256
/* MongoDB's documents are at most 16 MiB, so no chunk can be larger. */
#define GRIDFS_CHUNK_SIZE_MAX (16u * 1024 * 1024)

struct gridfs_entry {
	char id[OBJECTID_HEX_LENGTH + 1]; /* the fs.files _id (an ObjectId), lower-case hex */
	uint64_t length;
	uint32_t chunk_size;
	int64_t upload_date_ms;		   /* uploadDate: milliseconds since the epoch */
	char content_type[GRIDFS_TEXT_MAX]; /* contentType, else metadata.contentType; "" if none */
	char filename[GRIDFS_TEXT_MAX];	    /* "" if none */
};

/* What a fetch asks for: chunks first_chunk..last_chunk, of which bytes [first, last] are kept. */
struct gridfs_span {
	uint64_t first_chunk, last_chunk;
	uint64_t first, last; /* file offsets, inclusive */
};

/* NULL when length and chunk_size describe a file that can exist, else why not. */
const char *gridfs_entry_check(const struct gridfs_entry *file);

/* How many chunks the file has (0 for an empty file). */
uint64_t gridfs_chunk_count(const struct gridfs_entry *file);

/* The exact length chunk n must have (chunk_size, or less for the last); 0 past the end. */
uint64_t gridfs_chunk_length(const struct gridfs_entry *file, uint64_t n);

/*
 * The next fetch for bytes [position, last] (position <= last < length): from
 * position's chunk on, whole chunks while the bytes kept stay within room,
 * always at least position's chunk, never past last's chunk.
 */
struct gridfs_span gridfs_span_next(const struct gridfs_entry *file, uint64_t position,
				    uint64_t last, uint64_t room);

/*
 * The bytes of chunk n (within the span) that the span keeps: *offset into
 * the chunk and *length. 0, or -1 when n is outside the span's chunks.
 */
int gridfs_span_slice(const struct gridfs_entry *file, const struct gridfs_span *span, uint64_t n,
		      uint64_t *offset, uint64_t *length);

/* The strong ETag "\"<id>-<length hex>\"": a GridFS file never changes under its _id. */
void gridfs_etag(char out[ETAG_MAX], const struct gridfs_entry *file);

/* Last-Modified: uploadDate, whole seconds (rounded down). */
time_t gridfs_last_modified(const struct gridfs_entry *file);

/*
 * The response's media type: the stored type when it can stand in a header,
 * else by the extension of filename, else of name (the URL's :param); the
 * result points into file or is a static string.
 */
const char *gridfs_content_type(const struct gridfs_entry *file, const char *name);

#endif
