/*
 * content_type: extension -> media type table for the audio formats players
 * stream (anything unknown is application/octet-stream, as nginx's
 * default), and a document's media type read by RFC 9110's grammar, one
 * part after the other.
 */
#include "http/content_type.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "http/chars.h"

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

/* Cursor over a value being read: each part is taken off the front. */
struct reader {
	const char *at, *end;
};

/* Takes one or more tchars; false (nothing taken) when there is none. */
static bool take_token(struct reader *r)
{
	const char *start = r->at;
	while (r->at < r->end && chars_is_tchar((unsigned char)*r->at))
		r->at++;
	return r->at > start;
}

static bool take_byte(struct reader *r, char c)
{
	if (r->at == r->end || *r->at != c)
		return false;
	r->at++;
	return true;
}

static void skip_spaces(struct reader *r)
{
	while (take_byte(r, ' '))
		;
}

/* A quoted-string (RFC 9110 section 5.6.4) of printable ASCII, its '\' escaping one such byte. */
static bool take_quoted(struct reader *r)
{
	if (!take_byte(r, '"'))
		return false;
	while (r->at < r->end) {
		unsigned char c = (unsigned char)*r->at++;
		if (c == '"')
			return true;
		if (c == '\\' && r->at < r->end)
			c = (unsigned char)*r->at++;
		if (c < 0x20 || c > 0x7e)
			return false;
	}
	return false;
}

int content_type_from_field(char out[CONTENT_TYPE_FIELD_MAX], const char *value, size_t length)
{
	struct reader r = {value, value + length};
	out[0] = '\0';
	if (length == 0 || length > CONTENT_TYPE_FIELD_VALUE_MAX || !take_token(&r) ||
	    !take_byte(&r, '/') || !take_token(&r))
		return -1;
	for (;;) {
		skip_spaces(&r);
		if (r.at == r.end)
			break;
		/* "; name=value", spaces around the ';' only */
		if (!take_byte(&r, ';'))
			return -1;
		skip_spaces(&r);
		if (!take_token(&r) || !take_byte(&r, '=') || !(take_token(&r) || take_quoted(&r)))
			return -1;
	}
	/* A space may not end the value: it is not part of one. */
	if (value[length - 1] == ' ')
		return -1;
	memcpy(out, value, length);
	out[length] = '\0';
	return 0;
}
