/*
 * content_type: extension -> media type table for the audio formats players
 * stream. Anything unknown is application/octet-stream, as nginx's default.
 */
#include "http/content_type.h"

#include <string.h>
#include <strings.h>

struct extension_type {
	const char *extension;
	const char *type;
};

static const struct extension_type known_types[] = {
	{"mp3", "audio/mpeg"}, {"m4a", "audio/mp4"},  {"mp4", "audio/mp4"},
	{"aac", "audio/aac"},  {"ogg", "audio/ogg"},  {"oga", "audio/ogg"},
	{"opus", "audio/ogg"}, {"flac", "audio/flac"}, {"wav", "audio/wav"},
	{"webm", "audio/webm"},
};

const char *content_type_for_path(const char *path)
{
	if (path == NULL)
		return CONTENT_TYPE_DEFAULT;
	const char *name = strrchr(path, '/');
	name = name ? name + 1 : path;
	const char *dot = strrchr(name, '.');
	if (dot == NULL || dot == name)
		return CONTENT_TYPE_DEFAULT;

	for (size_t i = 0; i < sizeof(known_types) / sizeof(known_types[0]); i++) {
		if (strcasecmp(dot + 1, known_types[i].extension) == 0)
			return known_types[i].type;
	}
	return CONTENT_TYPE_DEFAULT;
}
