/*
 * gridfs_entry: chunk arithmetic and validators of a GridFS file. Every
 * computation stays in 64-bit unsigned arithmetic with the file's own bounds
 * checked first (gridfs_entry_check), so no product or sum can overflow.
 */
#include "db/gridfs_entry.h"

#include <stdio.h>
#include <string.h>

#include "http/content_type.h"
#include "http/response_head.h"

/* Above this a length is a corrupt entry, and n * chunk_size stays far from overflowing. */
#define GRIDFS_LENGTH_MAX (UINT64_C(1) << 50)

const char *gridfs_entry_check(const struct gridfs_entry *file)
{
	if (file->chunk_size == 0)
		return "chunkSize is not positive";
	if (file->chunk_size > GRIDFS_CHUNK_SIZE_MAX)
		return "chunkSize is larger than a document can be";
	if (file->length > GRIDFS_LENGTH_MAX)
		return "length is implausibly large";
	return NULL;
}

uint64_t gridfs_chunk_count(const struct gridfs_entry *file)
{
	return (file->length + file->chunk_size - 1) / file->chunk_size;
}

uint64_t gridfs_chunk_length(const struct gridfs_entry *file, uint64_t n)
{
	uint64_t start = n * file->chunk_size;
	if (n >= gridfs_chunk_count(file))
		return 0;
	uint64_t rest = file->length - start;
	return rest < file->chunk_size ? rest : file->chunk_size;
}

struct gridfs_span gridfs_span_next(const struct gridfs_entry *file, uint64_t position,
				    uint64_t last, uint64_t room)
{
	uint64_t size = file->chunk_size;
	struct gridfs_span span = {.first_chunk = position / size, .first = position};
	uint64_t end_chunk = last / size;
	span.last_chunk = span.first_chunk;
	while (span.last_chunk < end_chunk) {
		/* The bytes kept if the span took one more chunk: to its end, or to last. */
		uint64_t next_end = (span.last_chunk + 2) * size - 1;
		if ((next_end < last ? next_end : last) - position + 1 > room)
			break;
		span.last_chunk++;
	}
	uint64_t chunk_end = (span.last_chunk + 1) * size - 1;
	span.last = chunk_end < last ? chunk_end : last;
	return span;
}

int gridfs_span_slice(const struct gridfs_entry *file, const struct gridfs_span *span, uint64_t n,
		      uint64_t *offset, uint64_t *length)
{
	if (n < span->first_chunk || n > span->last_chunk)
		return -1;
	uint64_t start = n * file->chunk_size;
	uint64_t end = start + file->chunk_size - 1;
	uint64_t from = span->first > start ? span->first : start;
	uint64_t to = span->last < end ? span->last : end;
	*offset = from - start;
	*length = to - from + 1;
	return 0;
}

void gridfs_etag(char out[ETAG_MAX], const struct gridfs_entry *file)
{
	snprintf(out, ETAG_MAX, "\"%s-%llx\"", file->id, (unsigned long long)file->length);
}

time_t gridfs_last_modified(const struct gridfs_entry *file)
{
	int64_t ms = file->upload_date_ms;
	int64_t seconds = ms / 1000;
	if (ms % 1000 < 0)
		seconds--; /* before 1970: round down, not toward zero */
	return (time_t)seconds;
}

const char *gridfs_content_type(const struct gridfs_entry *file, const char *name)
{
	if (file->content_type[0] != '\0' && response_value_is_safe(file->content_type))
		return file->content_type;
	const char *by_filename = content_type_for_path(file->filename);
	if (file->filename[0] != '\0' && strcmp(by_filename, CONTENT_TYPE_DEFAULT) != 0)
		return by_filename;
	return content_type_for_path(name);
}
