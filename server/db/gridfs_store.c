/*
 * gridfs_store: GridFS read with libmongoc's plain find (not mongoc_gridfs_t,
 * which reads whole chunks through a stream, one round trip per chunk, and
 * cannot ask for n in a range). A span is one find:
 *   {files_id: <id>, n: {$gte: first, $lte: last}}, sorted by n,
 * which the {files_id: 1, n: 1} index every GridFS bucket has answers.
 */
#include "db/gridfs_store.h"

#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "db/read_retry.h"

/* "<bucket>.chunks" must fit; longer bucket names are refused at the find. */
#define COLLECTION_NAME_MAX 256

static int collection_name(char *out, const char *bucket, const char *suffix)
{
	int written = snprintf(out, COLLECTION_NAME_MAX, "%s.%s", bucket, suffix);
	return written > 0 && written < COLLECTION_NAME_MAX ? 0 : -1;
}

/* A retryable error (a stepdown, a broken connection) is a 503 too, never a 500. */
static enum lookup_status cursor_status(const bson_error_t *error)
{
	return read_retry_classify(error->domain, error->code) == READ_FAILED ? LOOKUP_FAILED
									       : LOOKUP_UNAVAILABLE;
}

/* An integer field stored as int32, int64 or an integral double; -1 when it is none. */
static int read_count(const bson_iter_t *iter, int64_t *out)
{
	if (BSON_ITER_HOLDS_INT32(iter) || BSON_ITER_HOLDS_INT64(iter)) {
		*out = bson_iter_as_int64(iter);
		return 0;
	}
	if (BSON_ITER_HOLDS_DOUBLE(iter)) {
		double value = bson_iter_double(iter);
		if (value >= 0 && value <= 9007199254740992.0 && (double)(int64_t)value == value) {
			*out = (int64_t)value;
			return 0;
		}
	}
	return -1;
}

/* Copies a string field if it fits (with no NUL inside); leaves out empty otherwise. */
static void read_text(const bson_t *entry, const char *dotted, char out[GRIDFS_TEXT_MAX])
{
	bson_iter_t iter;
	uint32_t length;
	out[0] = '\0';
	if (!bson_iter_init(&iter, entry) || !bson_iter_find_descendant(&iter, dotted, &iter) ||
	    !BSON_ITER_HOLDS_UTF8(&iter))
		return;
	const char *text = bson_iter_utf8(&iter, &length);
	if (length < GRIDFS_TEXT_MAX && strlen(text) == length)
		memcpy(out, text, length + 1);
}

void gridfs_store_project(bson_t *projection)
{
	static const char *const fields[] = {"length",	 "chunkSize",	"uploadDate",
					     "filename", "contentType", "metadata.contentType"};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		bson_append_int32(projection, fields[i], -1, 1);
}

enum lookup_status gridfs_store_parse_file(const bson_t *entry, struct gridfs_entry *file,
					   char *detail, size_t detail_size)
{
	bson_iter_t iter;
	int64_t length, chunk_size;
	memset(file, 0, sizeof(*file));
	if (!bson_iter_init_find(&iter, entry, "_id") || !BSON_ITER_HOLDS_OID(&iter)) {
		snprintf(detail, detail_size, "GridFS file entry: _id is not an ObjectId");
		return LOOKUP_BAD_DATA;
	}
	bson_oid_to_string(bson_iter_oid(&iter), file->id);
	if (!bson_iter_init_find(&iter, entry, "length") || read_count(&iter, &length) < 0 ||
	    length < 0) {
		snprintf(detail, detail_size, "GridFS file %s: length is missing or not a count",
			 file->id);
		return LOOKUP_BAD_DATA;
	}
	if (!bson_iter_init_find(&iter, entry, "chunkSize") || read_count(&iter, &chunk_size) < 0 ||
	    chunk_size < 0 || chunk_size > (int64_t)UINT32_MAX) {
		snprintf(detail, detail_size, "GridFS file %s: chunkSize is missing or not a count",
			 file->id);
		return LOOKUP_BAD_DATA;
	}
	file->length = (uint64_t)length;
	file->chunk_size = (uint32_t)chunk_size;
	const char *problem = gridfs_entry_check(file);
	if (problem != NULL) {
		snprintf(detail, detail_size, "GridFS file %s: %s", file->id, problem);
		return LOOKUP_BAD_DATA;
	}
	if (bson_iter_init_find(&iter, entry, "uploadDate") && BSON_ITER_HOLDS_DATE_TIME(&iter))
		file->upload_date_ms = bson_iter_date_time(&iter);
	read_text(entry, "filename", file->filename);
	read_text(entry, "contentType", file->content_type);
	if (file->content_type[0] == '\0')
		read_text(entry, "metadata.contentType", file->content_type);
	return LOOKUP_FOUND;
}

enum lookup_status gridfs_store_find_file(mongoc_client_t *client, const char *database,
					  const char *bucket, const bson_oid_t *id,
					  const mongoc_read_prefs_t *read_prefs,
					  struct gridfs_entry *file, char *detail, size_t detail_size)
{
	char name[COLLECTION_NAME_MAX];
	if (collection_name(name, bucket, "files") < 0) {
		snprintf(detail, detail_size, "GridFS bucket name too long");
		return LOOKUP_FAILED;
	}
	bson_t filter = BSON_INITIALIZER, options = BSON_INITIALIZER, projection;
	BSON_APPEND_OID(&filter, "_id", id);
	BSON_APPEND_DOCUMENT_BEGIN(&options, "projection", &projection);
	gridfs_store_project(&projection);
	bson_append_document_end(&options, &projection);
	BSON_APPEND_INT64(&options, "limit", 1);
	BSON_APPEND_BOOL(&options, "singleBatch", true);

	mongoc_collection_t *collection = mongoc_client_get_collection(client, database, name);
	mongoc_cursor_t *cursor =
		mongoc_collection_find_with_opts(collection, &filter, &options, read_prefs);
	const bson_t *entry;
	bson_error_t error;
	enum lookup_status status;
	if (mongoc_cursor_next(cursor, &entry)) {
		status = gridfs_store_parse_file(entry, file, detail, detail_size);
	} else if (mongoc_cursor_error(cursor, &error)) {
		status = cursor_status(&error);
		snprintf(detail, detail_size, "%.250s", error.message);
	} else {
		char hex[OBJECTID_HEX_LENGTH + 1];
		bson_oid_to_string(id, hex);
		status = LOOKUP_BAD_DATA;
		snprintf(detail, detail_size, "GridFS file %s: no entry in %s", hex, name);
	}
	mongoc_cursor_destroy(cursor);
	mongoc_collection_destroy(collection);
	bson_destroy(&filter);
	bson_destroy(&options);
	return status;
}

/*
 * Above the 256 KiB evbuffer chains that chunk bytes are copied into (GridFS's
 * default 255 KiB chunk and the chain's header), below a default window's reply.
 */
#define REPLY_MMAP_THRESHOLD (512 * 1024)

void gridfs_store_tune_allocator(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, REPLY_MMAP_THRESHOLD); /* 0 under a sanitizer: no matter */
#endif
}

static void append_chunk_number(bson_t *document, const char *key, uint64_t n)
{
	if (n <= INT32_MAX)
		bson_append_int32(document, key, -1, (int32_t)n);
	else
		bson_append_int64(document, key, -1, (int64_t)n);
}

/*
 * A body block: 64 KiB less room for libevent's chain header, so that the
 * chain evbuffer_add allocates for it is 64 KiB (libevent rounds a chain up
 * to a power of two). The partly sent block a stream may hold beyond its
 * window is then at most 64 KiB: window + 64 KiB in all.
 */
#define BODY_BLOCK_BYTES (64 * 1024 - 128)

/* Checks one chunk document and appends the span's bytes of it; 0, or -1 with detail. */
static int take_chunk(const bson_t *chunk, const struct gridfs_entry *file,
		      const struct gridfs_span *span, uint64_t expected, struct evbuffer *out,
		      char *detail, size_t detail_size)
{
	bson_iter_t iter;
	int64_t n;
	if (!bson_iter_init_find(&iter, chunk, "n") || read_count(&iter, &n) < 0 || n < 0) {
		snprintf(detail, detail_size, "GridFS file %s: a chunk's n is not a count", file->id);
		return -1;
	}
	if ((uint64_t)n != expected) {
		snprintf(detail, detail_size, "GridFS file %s: chunk %" PRIu64 " is %s", file->id,
			 expected, (uint64_t)n < expected ? "stored twice" : "missing");
		return -1;
	}
	bson_subtype_t subtype;
	uint32_t length;
	const uint8_t *data;
	if (!bson_iter_init_find(&iter, chunk, "data") || !BSON_ITER_HOLDS_BINARY(&iter)) {
		snprintf(detail, detail_size, "GridFS file %s: chunk %" PRIu64 " has no binary data",
			 file->id, expected);
		return -1;
	}
	bson_iter_binary(&iter, &subtype, &length, &data);
	uint64_t want = gridfs_chunk_length(file, expected);
	if (length != want) {
		snprintf(detail, detail_size,
			 "GridFS file %s: chunk %" PRIu64 " holds %" PRIu32 " bytes, not %" PRIu64,
			 file->id, expected, length, want);
		return -1;
	}
	uint64_t offset, kept;
	gridfs_span_slice(file, span, expected, &offset, &kept);
	/*
	 * In blocks of their own, at most BODY_BLOCK_BYTES each: a block is freed
	 * only once all of it is sent, so what a stream holds is its unsent bytes
	 * (the window bounds those) plus at most one partly sent block.
	 */
	for (uint64_t done = 0; done < kept;) {
		size_t part = kept - done < BODY_BLOCK_BYTES ? (size_t)(kept - done) : BODY_BLOCK_BYTES;
		if (evbuffer_add(out, data + offset + done, part) < 0) {
			snprintf(detail, detail_size, "out of memory");
			return -1;
		}
		done += part;
	}
	return 0;
}

enum lookup_status gridfs_store_read(mongoc_client_t *client, const char *database,
				     const char *bucket, const struct gridfs_entry *file,
				     const struct gridfs_span *span,
				     const mongoc_read_prefs_t *read_prefs, struct evbuffer *out,
				     char *detail, size_t detail_size)
{
	char name[COLLECTION_NAME_MAX];
	bson_oid_t id;
	if (collection_name(name, bucket, "chunks") < 0) {
		snprintf(detail, detail_size, "GridFS bucket name too long");
		return LOOKUP_FAILED;
	}
	bson_oid_init_from_string(&id, file->id);
	bson_t filter = BSON_INITIALIZER, options = BSON_INITIALIZER, range, sort, projection;
	BSON_APPEND_OID(&filter, "files_id", &id);
	BSON_APPEND_DOCUMENT_BEGIN(&filter, "n", &range);
	append_chunk_number(&range, "$gte", span->first_chunk);
	append_chunk_number(&range, "$lte", span->last_chunk);
	bson_append_document_end(&filter, &range);
	BSON_APPEND_DOCUMENT_BEGIN(&options, "sort", &sort);
	BSON_APPEND_INT32(&sort, "n", 1);
	bson_append_document_end(&options, &sort);
	BSON_APPEND_DOCUMENT_BEGIN(&options, "projection", &projection);
	BSON_APPEND_INT32(&projection, "_id", 0);
	BSON_APPEND_INT32(&projection, "n", 1);
	BSON_APPEND_INT32(&projection, "data", 1);
	bson_append_document_end(&options, &projection);

	size_t before = evbuffer_get_length(out);
	mongoc_collection_t *collection = mongoc_client_get_collection(client, database, name);
	mongoc_cursor_t *cursor =
		mongoc_collection_find_with_opts(collection, &filter, &options, read_prefs);
	enum lookup_status status = LOOKUP_FOUND;
	uint64_t expected = span->first_chunk;
	const bson_t *chunk;
	bson_error_t error;
	while (status == LOOKUP_FOUND && mongoc_cursor_next(cursor, &chunk)) {
		if (expected > span->last_chunk) {
			snprintf(detail, detail_size, "GridFS file %s: chunk %" PRIu64 " is stored twice",
				 file->id, span->last_chunk);
			status = LOOKUP_BAD_DATA;
		} else if (take_chunk(chunk, file, span, expected, out, detail, detail_size) < 0) {
			status = LOOKUP_BAD_DATA;
		}
		expected++;
	}
	if (status == LOOKUP_FOUND && mongoc_cursor_error(cursor, &error)) {
		status = cursor_status(&error);
		snprintf(detail, detail_size, "%.250s", error.message);
	} else if (status == LOOKUP_FOUND && expected != span->last_chunk + 1) {
		status = LOOKUP_BAD_DATA;
		snprintf(detail, detail_size, "GridFS file %s: chunk %" PRIu64 " is missing",
			 file->id, expected);
	}
	if (status != LOOKUP_FOUND)
		evbuffer_drain(out, evbuffer_get_length(out) - before);
	mongoc_cursor_destroy(cursor);
	mongoc_collection_destroy(collection);
	bson_destroy(&filter);
	bson_destroy(&options);
	return status;
}
