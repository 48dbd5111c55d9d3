/*
 * escape: the two escapers of musicd-import's output. The terminal escaper
 * walks the text one UTF-8 sequence at a time, so a name that is not UTF-8 is
 * shown byte by byte and a user can still tell which file it was.
 */
#include "escape.h"

#include <bson/bson.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest output per input byte: "\xNN" or "%XX" or "\u00NN". */
#define ESCAPE_MAX_PER_BYTE 6

/*
 * Length of the valid UTF-8 sequence at text[0..length), or 0 if it is not
 * one (libbson's validator says: overlong forms, surrogates and code points
 * past U+10FFFF are not).
 */
static size_t utf8_sequence_length(const unsigned char *text, size_t length)
{
	unsigned char lead = text[0];
	size_t need = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
	if (need == 0 || need > length || !bson_utf8_validate((const char *)text, need, false))
		return 0;
	return need;
}

char *escape_for_terminal(const char *bytes, size_t length)
{
	const unsigned char *text = (const unsigned char *)bytes;
	char *out = malloc(length * ESCAPE_MAX_PER_BYTE + 1);
	if (out == NULL)
		return NULL;
	char *cursor = out;
	size_t i = 0;
	while (i < length) {
		size_t n = text[i] == '\0' ? 0 : utf8_sequence_length(text + i, length - i);
		if (n == 1 && text[i] == '\\') {
			*cursor++ = '\\';
			*cursor++ = '\\';
		} else if (n == 1 && (text[i] < 0x20 || text[i] == 0x7F)) {
			cursor += sprintf(cursor, "\\x%02x", text[i]);
		} else if (n == 0) {
			cursor += sprintf(cursor, "\\x%02x", text[i]);
			n = 1;
		} else if (n == 2 && text[i] == 0xC2 && text[i + 1] < 0xA0) {
			/* C1 controls (U+0080..U+009F) move terminals too. */
			cursor += sprintf(cursor, "\\x%02x\\x%02x", text[i], text[i + 1]);
		} else {
			memcpy(cursor, text + i, n);
			cursor += n;
		}
		i += n;
	}
	*cursor = '\0';
	return out;
}

/* Writes the escaped form of byte c at out; returns its length (at most ESCAPE_MAX_PER_BYTE). */
typedef size_t byte_escaper(unsigned char c, char *out);

/* text with every byte replaced by what escape_byte writes for it. */
static char *escape_each_byte(const char *text, byte_escaper *escape_byte)
{
	size_t length = strlen(text);
	char *out = malloc(length * ESCAPE_MAX_PER_BYTE + 1);
	if (out == NULL)
		return NULL;
	char *cursor = out;
	for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++)
		cursor += escape_byte(*p, cursor);
	*cursor = '\0';
	return out;
}

static bool url_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

static size_t url_byte(unsigned char c, char *out)
{
	if (url_unreserved(c)) {
		out[0] = (char)c;
		return 1;
	}
	return (size_t)sprintf(out, "%%%02X", c);
}

char *escape_for_url(const char *text)
{
	return escape_each_byte(text, url_byte);
}
