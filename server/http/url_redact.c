/*
 * url_redact: one pass over the text. Everything after the first '?' is read
 * as parameters separated by '&' (a '#' ends a value too, and parameters go on
 * after it), since a log line shows what was sent, not what the route read.
 */
#include "http/url_redact.h"

#include <stdbool.h>
#include <string.h>

#define TOKEN_MARK "hmac="

/* Bounded output: once full, nothing more is written. */
struct writer {
	char *out;
	size_t size, used;
};

static void put(struct writer *w, const char *text, size_t length)
{
	size_t room = w->size - 1 - w->used;
	if (length > room)
		length = room;
	memcpy(w->out + w->used, text, length);
	w->used += length;
	w->out[w->used] = '\0';
}

static bool holds(const char *text, size_t length, const char *what)
{
	size_t what_length = strlen(what);
	for (size_t i = 0; i + what_length <= length; i++) {
		if (memcmp(text + i, what, what_length) == 0)
			return true;
	}
	return false;
}

size_t url_redact(const char *text, const char *name, char *out, size_t size)
{
	struct writer w = {out, size, 0};
	out[0] = '\0';
	size_t path = strcspn(text, "?");
	put(&w, text, path);
	if (text[path] == '\0')
		return w.used;
	size_t name_length = strlen(name);
	const char *at = text + path;
	while (*at != '\0') {
		/* The separator ('?', '&' or '#'), then one parameter up to the next. */
		put(&w, at, 1);
		at++;
		size_t parameter = strcspn(at, "&#");
		const char *equals = memchr(at, '=', parameter);
		if (equals == NULL) {
			put(&w, at, parameter);
		} else {
			size_t key = (size_t)(equals - at) + 1;
			const char *value = equals + 1;
			size_t value_length = parameter - key;
			put(&w, at, key);
			if ((key - 1 == name_length && memcmp(at, name, name_length) == 0) ||
			    holds(value, value_length, TOKEN_MARK))
				put(&w, URL_REDACTED, strlen(URL_REDACTED));
			else
				put(&w, value, value_length);
		}
		at += parameter;
	}
	return w.used;
}
