/*
 * tags: TagLib's C binding keeps the strings it returns in one global list
 * unless string management is turned off; it is off here, so every string is
 * freed with taglib_free by the thread that got it. TagLib picks the format
 * by extension, as musicd picks the content type.
 */
#include "tags.h"

#include <bson/bson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <tag_c.h>

/* The extensions musicd serves as audio (server/http/content_type.c) that TagLib 1.13 reads. */
static const char *const supported[] = {"mp3", "m4a", "mp4", "ogg", "oga", "opus", "flac", "wav"};

void tags_init(void)
{
	taglib_set_strings_unicode(1);
	taglib_set_string_management_enabled(0);
}

bool tags_supported(const char *path)
{
	const char *name = strrchr(path, '/');
	const char *dot = strrchr(name ? name : path, '.');
	if (dot == NULL)
		return false;
	for (size_t i = 0; i < sizeof(supported) / sizeof(supported[0]); i++) {
		if (strcasecmp(dot + 1, supported[i]) == 0)
			return true;
	}
	return false;
}

/*
 * Takes a TagLib string into *field (NULL when empty). Returns 0, 1 when it
 * is not valid UTF-8 (TagLib's conversion should prevent it: checked, as BSON
 * requires it), -1 when out of memory.
 */
static int take_string(char *value, char **field)
{
	int status = 0;
	if (value == NULL)
		return 0;
	if (value[0] != '\0') {
		if (!bson_utf8_validate(value, strlen(value), false))
			status = 1;
		else if ((*field = strdup(value)) == NULL)
			status = -1;
	}
	taglib_free(value);
	return status;
}

static unsigned positive(int value)
{
	return value > 0 ? (unsigned)value : 0;
}

int tags_read(const char *path, struct track *track, char *reason, size_t reason_size)
{
	TagLib_File *file = taglib_file_new(path);
	if (file == NULL || !taglib_file_is_valid(file)) {
		snprintf(reason, reason_size, "not a readable %s file", strrchr(path, '.') + 1);
		if (file != NULL)
			taglib_file_free(file);
		return 1;
	}
	int status = 0;
	const TagLib_AudioProperties *properties = taglib_file_audioproperties(file);
	if (properties == NULL || taglib_audioproperties_samplerate(properties) <= 0 ||
	    taglib_audioproperties_channels(properties) <= 0) {
		snprintf(reason, reason_size, "no audio found (corrupt or truncated)");
		status = 1;
		goto cleanup;
	}
	track->duration_ms = 1000 * positive(taglib_audioproperties_length(properties));
	track->bitrate = positive(taglib_audioproperties_bitrate(properties));
	track->sample_rate = positive(taglib_audioproperties_samplerate(properties));
	track->channels = positive(taglib_audioproperties_channels(properties));

	TagLib_Tag *tag = taglib_file_tag(file);
	if (tag == NULL)
		goto cleanup;
	struct {
		const char *name;
		char *(*get)(const TagLib_Tag *);
		char **field;
	} strings[] = {
		{"title", taglib_tag_title, &track->title},
		{"artist", taglib_tag_artist, &track->artist},
		{"album", taglib_tag_album, &track->album},
		{"genre", taglib_tag_genre, &track->genre},
		{"comment", taglib_tag_comment, &track->comment},
	};
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]) && status == 0; i++) {
		status = take_string(strings[i].get(tag), strings[i].field);
		if (status > 0)
			snprintf(reason, reason_size, "tag %s is not valid UTF-8", strings[i].name);
	}
	track->year = taglib_tag_year(tag);
	track->number = taglib_tag_track(tag);

cleanup:
	taglib_file_free(file);
	return status;
}
