/*
 * document: the field table. An insert and an update are built by the same
 * walk over the table, so the two can never disagree on a name or a type;
 * an update unsets the fields a file no longer has (a removed tag, a hash
 * not asked for this time), so a document never keeps stale values.
 */
#include "document.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum field_kind { FIELD_STRING, FIELD_NUMBER, FIELD_MILLISECONDS, FIELD_INT64, FIELD_DATE, FIELD_HASH };

struct field {
	const char *name;
	enum field_kind kind;
	size_t offset;
};

#define AT(member) offsetof(struct track, member)

static const struct field fields[] = {
	{"title", FIELD_STRING, AT(title)},
	{"artist", FIELD_STRING, AT(artist)},
	{"album", FIELD_STRING, AT(album)},
	{"album_artist", FIELD_STRING, AT(album_artist)},
	{"genre", FIELD_STRING, AT(genre)},
	{"year", FIELD_NUMBER, AT(year)},
	{"track", FIELD_NUMBER, AT(number)},
	{"disc", FIELD_NUMBER, AT(disc)},
	{"comment", FIELD_STRING, AT(comment)},
	{"duration", FIELD_MILLISECONDS, AT(duration_ms)},
	{"bitrate", FIELD_NUMBER, AT(bitrate)},
	{"sample_rate", FIELD_NUMBER, AT(sample_rate)},
	{"channels", FIELD_NUMBER, AT(channels)},
	{"size", FIELD_INT64, AT(size)},
	{"mtime", FIELD_DATE, AT(mtime_ms)},
	{"sha256", FIELD_HASH, AT(sha256)},
};

#define FIELD_COUNT (sizeof(fields) / sizeof(fields[0]))

void track_free(struct track *track)
{
	free(track->path);
	free(track->title);
	free(track->artist);
	free(track->album);
	free(track->album_artist);
	free(track->genre);
	free(track->comment);
	memset(track, 0, sizeof(*track));
}

bool document_field_is_reserved(const char *name)
{
	if (strcmp(name, "_id") == 0)
		return true;
	for (size_t i = 0; i < FIELD_COUNT; i++) {
		size_t length = strlen(fields[i].name);
		/* "title" and "title.x" both collide with the title field. */
		if (strncmp(name, fields[i].name, length) == 0 &&
		    (name[length] == '\0' || name[length] == '.'))
			return true;
	}
	return false;
}

static bool field_present(const struct track *track, const struct field *field)
{
	const char *base = (const char *)track;
	switch (field->kind) {
	case FIELD_STRING: {
		const char *value = *(char *const *)(base + field->offset);
		return value != NULL && value[0] != '\0';
	}
	case FIELD_NUMBER:
	case FIELD_MILLISECONDS: {
		unsigned value = *(const unsigned *)(base + field->offset);
		return value != 0 && value <= INT32_MAX;
	}
	case FIELD_INT64:
	case FIELD_DATE:
		return true;
	case FIELD_HASH:
		return track->has_sha256;
	}
	return false;
}

/* Appends a present field to out. */
static void append_field(const struct track *track, const struct field *field, bson_t *out)
{
	const char *base = (const char *)track;
	switch (field->kind) {
	case FIELD_STRING:
		BSON_APPEND_UTF8(out, field->name, *(char *const *)(base + field->offset));
		break;
	case FIELD_NUMBER:
		BSON_APPEND_INT32(out, field->name, (int32_t) * (const unsigned *)(base + field->offset));
		break;
	case FIELD_MILLISECONDS:
		BSON_APPEND_DOUBLE(out, field->name, *(const unsigned *)(base + field->offset) / 1000.0);
		break;
	case FIELD_INT64:
		BSON_APPEND_INT64(out, field->name, *(const int64_t *)(base + field->offset));
		break;
	case FIELD_DATE:
		BSON_APPEND_DATE_TIME(out, field->name, *(const int64_t *)(base + field->offset));
		break;
	case FIELD_HASH:
		BSON_APPEND_UTF8(out, field->name, track->sha256);
		break;
	}
}

/* A dotted path field ("file.path") is a field of a subdocument in an inserted document. */
static void append_path(bson_t *out, const char *path_field, const char *path)
{
	const char *dot = strchr(path_field, '.');
	if (dot == NULL) {
		BSON_APPEND_UTF8(out, path_field, path);
		return;
	}
	bson_t child;
	bson_append_document_begin(out, path_field, (int)(dot - path_field), &child);
	append_path(&child, dot + 1, path);
	bson_append_document_end(out, &child);
}

void document_for_insert(const struct track *track, const char *path_field, const bson_oid_t *id,
			 bson_t *out)
{
	bson_init(out);
	BSON_APPEND_OID(out, "_id", id);
	append_path(out, path_field, track->path);
	for (size_t i = 0; i < FIELD_COUNT; i++) {
		if (field_present(track, &fields[i]))
			append_field(track, &fields[i], out);
	}
}

void document_for_update(const struct track *track, const char *path_field, bson_t *out)
{
	bson_t set, unset;
	bool any_absent = false;
	bson_init(out);
	BSON_APPEND_DOCUMENT_BEGIN(out, "$set", &set);
	BSON_APPEND_UTF8(&set, path_field, track->path);
	for (size_t i = 0; i < FIELD_COUNT; i++) {
		if (field_present(track, &fields[i]))
			append_field(track, &fields[i], &set);
		else
			any_absent = true;
	}
	bson_append_document_end(out, &set);
	if (!any_absent)
		return; /* MongoDB refuses an empty $unset */
	BSON_APPEND_DOCUMENT_BEGIN(out, "$unset", &unset);
	for (size_t i = 0; i < FIELD_COUNT; i++) {
		if (!field_present(track, &fields[i]))
			BSON_APPEND_UTF8(&unset, fields[i].name, "");
	}
	bson_append_document_end(out, &unset);
}

void document_filter(const char *path, const char *path_field, bson_t *out)
{
	bson_init(out);
	BSON_APPEND_UTF8(out, path_field, path);
}
