/*
 * track_document: the document's path or GridFS file, the table of the
 * fields an answer takes from it, and the packed form the lookup cache keeps
 * (each part of the value in turn: a number as its bytes, a text as its
 * bytes and a NUL).
 */
#include "db/track_document.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "db/gridfs_store.h"

#define TEXT_OF(x) #x
#define NUMBER_TEXT(macro) TEXT_OF(macro) /* the digits a numeric macro expands to */

/* A field of the document an answer takes, when its option names one. */
struct text_field {
	size_t option; /* the char * of struct config naming the field; NULL: off */
	size_t member; /* where its value goes in struct track_fields */
	size_t size;
	int (*take)(char *out, const char *value, size_t length); /* 0, or -1: not such a value */
	const char *kind;      /* what the value must be, for the log */
	const char *otherwise; /* what the answer says without it */
};

#define FIELD(option_name, member_name)                                                         \
	offsetof(struct config, option_name), offsetof(struct track_fields, member_name),       \
		sizeof(((struct track_fields *)0)->member_name)

static const struct text_field text_fields[] = {
	{FIELD(etag_field, etag), etag_from_field,
	 "an ETag (1 to " NUMBER_TEXT(ETAG_FIELD_VALUE_MAX) " letters, digits or +-./:=_~)",
	 "the file's ETag"},
	{FIELD(content_type_field, content_type), content_type_from_field,
	 "a media type (type/subtype[; parameters], at most " NUMBER_TEXT(
		 CONTENT_TYPE_FIELD_VALUE_MAX) " bytes)",
	 "the type of the file's extension"},
};

#define TEXT_FIELDS (sizeof(text_fields) / sizeof(text_fields[0]))

static const char *field_name(const struct text_field *field, const struct config *config)
{
	return *(char *const *)((const char *)config + field->option);
}

void track_document_project(bson_t *projection, const struct config *config)
{
	BSON_APPEND_INT32(projection, config->path_field, 1);
	for (size_t i = 0; i < TEXT_FIELDS; i++) {
		const char *name = field_name(&text_fields[i], config);
		if (name != NULL)
			BSON_APPEND_INT32(projection, name, 1);
	}
	if (strcmp(config->gridfs_field, "_id") == 0)
		gridfs_store_project(projection); /* the documents are the fs.files entries */
	else
		BSON_APPEND_INT32(projection, config->gridfs_field, 1);
}

/* Each configured field's value, checked, into fields ("" where there is none to take). */
static void read_fields(const bson_t *document, const struct config *config, const char *mid,
			struct track_fields *fields)
{
	for (size_t i = 0; i < TEXT_FIELDS; i++) {
		const struct text_field *field = &text_fields[i];
		const char *name = field_name(field, config);
		char *value_out = (char *)fields + field->member;
		bson_iter_t iter;
		uint32_t length = 0;
		const char *value = NULL;
		value_out[0] = '\0';
		if (name == NULL)
			continue;
		if (bson_iter_init(&iter, document) && bson_iter_find_descendant(&iter, name, &iter) &&
		    BSON_ITER_HOLDS_UTF8(&iter))
			value = bson_iter_utf8(&iter, &length);
		if (value == NULL)
			log_debug("lookup %s: no string field '%s': %s is used", mid, name,
				  field->otherwise);
		else if (field->take(value_out, value, length) < 0)
			log_warn("lookup %s: field '%s' is not %s: %s is used", mid, name, field->kind,
				 field->otherwise);
	}
}

enum lookup_status track_document_read(const bson_t *document, const struct config *config,
				       const char *mid, struct track_document *out,
				       bson_oid_t *gridfs_id, char *detail, size_t detail_size)
{
	const char *field = config->path_field;
	bson_iter_t iter;
	uint32_t length;
	const char *path;
	memset(out, 0, sizeof(*out));
	bool has_path = bson_iter_init(&iter, document) &&
			bson_iter_find_descendant(&iter, field, &iter);
	if (has_path && BSON_ITER_HOLDS_UTF8(&iter) && (path = bson_iter_utf8(&iter, &length)) &&
	    length > 0 && strlen(path) == length && length < sizeof(out->path)) {
		memcpy(out->path, path, length + 1);
		read_fields(document, config, mid, &out->fields);
		return LOOKUP_FOUND;
	}
	if (has_path) {
		snprintf(detail, detail_size,
			 "field '%s' is empty, not a string, holds a NUL or is %d bytes or longer",
			 field, PATH_MAX);
		return LOOKUP_NO_PATH;
	}
	/* No path: the file is in GridFS if the GridFS field holds an ObjectId. */
	if (!bson_iter_init(&iter, document) ||
	    !bson_iter_find_descendant(&iter, config->gridfs_field, &iter) ||
	    !BSON_ITER_HOLDS_OID(&iter)) {
		snprintf(detail, detail_size, "field '%s' is missing and '%s' holds no ObjectId",
			 field, config->gridfs_field);
		return LOOKUP_NO_PATH;
	}
	bson_oid_copy(bson_iter_oid(&iter), gridfs_id);
	read_fields(document, config, mid, &out->fields);
	return LOOKUP_GRIDFS;
}

/* --- The packed form --- */

/* One part of the value: a number (its bytes) or a text (NUL-terminated within size). */
struct part {
	size_t offset, size;
	bool text;
};

#define PART(name, is_text)                                                                     \
	{offsetof(struct track_document, name), sizeof(((struct track_document *)0)->name), is_text}

static const struct part file_parts[] = {
	PART(path, true),
	PART(gridfs.id, true),
	PART(gridfs.length, false),
	PART(gridfs.chunk_size, false),
	PART(gridfs.upload_date_ms, false),
	PART(gridfs.content_type, true),
	PART(gridfs.filename, true),
};

#define FILE_PARTS (sizeof(file_parts) / sizeof(file_parts[0]))

/* Part i: the file's, then each field's. */
static struct part part_at(size_t i)
{
	if (i < FILE_PARTS)
		return file_parts[i];
	const struct text_field *field = &text_fields[i - FILE_PARTS];
	return (struct part){offsetof(struct track_document, fields) + field->member, field->size,
			     true};
}

/* The bytes part takes packed: a number's size, a text's length and NUL. */
static size_t packed_length(const struct part *part, const char *at)
{
	return part->text ? strlen(at) + 1 : part->size;
}

size_t track_document_packed_size(const struct track_document *document)
{
	size_t size = 0;
	for (size_t i = 0; i < FILE_PARTS + TEXT_FIELDS; i++) {
		struct part part = part_at(i);
		const char *at = (const char *)document + part.offset;
		if (part.text && strnlen(at, part.size) == part.size)
			return 0;
		size += packed_length(&part, at);
	}
	return size;
}

void track_document_pack(const struct track_document *document, unsigned char *out)
{
	for (size_t i = 0; i < FILE_PARTS + TEXT_FIELDS; i++) {
		struct part part = part_at(i);
		const char *at = (const char *)document + part.offset;
		size_t length = packed_length(&part, at);
		memcpy(out, at, length);
		out += length;
	}
}

void track_document_unpack(const unsigned char *packed, struct track_document *out)
{
	memset(out, 0, sizeof(*out)); /* the bytes past each text's NUL too: a plain value */
	for (size_t i = 0; i < FILE_PARTS + TEXT_FIELDS; i++) {
		struct part part = part_at(i);
		char *at = (char *)out + part.offset;
		size_t length = packed_length(&part, (const char *)packed);
		memcpy(at, packed, length);
		packed += length;
	}
}
