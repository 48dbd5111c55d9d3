/*
 * disposition: decoding :param, checking it is UTF-8, and writing the two
 * filename parameters. Every output byte is chosen here from a fixed set,
 * so the header value cannot hold a control character or a stray quote.
 */
#include "http/disposition.h"

#include <stdint.h>
#include <string.h>

#include "http/chars.h"

/* The longest extension the fallback name keeps (".flac", ".opus" ...). */
#define EXTENSION_MAX 16

struct name {
	char bytes[DISPOSITION_NAME_MAX + 1];
	size_t length;
};

/* Bounded output: once full, nothing more is written and the result is refused. */
struct writer {
	char *out;
	size_t size, used;
	int overflow;
};

static void put(struct writer *w, const char *text, size_t length)
{
	if (w->overflow || length >= w->size - w->used) {
		w->overflow = 1;
		return;
	}
	memcpy(w->out + w->used, text, length);
	w->used += length;
	w->out[w->used] = '\0';
}

static void put_byte(struct writer *w, char c)
{
	put(w, &c, 1);
}

/* Percent-decodes text into name; -1 for a malformed escape or a name too long. */
static int percent_decode(const char *text, size_t length, struct name *name)
{
	name->length = 0;
	for (size_t i = 0; i < length; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == '%') {
			if (length - i < 3) /* fewer than two characters follow */
				return -1;
			int high = chars_hex_value((unsigned char)text[i + 1]),
			    low = chars_hex_value((unsigned char)text[i + 2]);
			if (high < 0 || low < 0)
				return -1;
			c = (unsigned char)(high * 16 + low);
			i += 2;
		}
		if (name->length == DISPOSITION_NAME_MAX)
			return -1;
		name->bytes[name->length++] = (char)c;
	}
	name->bytes[name->length] = '\0';
	return 0;
}

/*
 * The length of the UTF-8 sequence at s (of at most left bytes) and its code
 * point, or 0 when it is not well-formed (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF).
 */
static size_t utf8_sequence(const unsigned char *s, size_t left, uint32_t *code_point)
{
	size_t length;
	uint32_t value, minimum;
	if (s[0] < 0x80) {
		*code_point = s[0];
		return 1;
	} else if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		length = 2, value = s[0] & 0x1fu, minimum = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		length = 3, value = s[0] & 0x0fu, minimum = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		length = 4, value = s[0] & 0x07u, minimum = 0x10000;
	} else {
		return 0;
	}
	if (length > left)
		return 0;
	for (size_t i = 1; i < length; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		value = (value << 6) | (s[i] & 0x3fu);
	}
	if (value < minimum || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff))
		return 0;
	*code_point = value;
	return length;
}

/* A character that may not stand in a file name: a path separator or a control character. */
static int is_replaced(uint32_t code_point)
{
	return code_point < 0x20 || code_point == 0x7f || (code_point >= 0x80 && code_point < 0xa0) ||
	       code_point == '/' || code_point == '\\';
}

/*
 * Checks name is UTF-8 and replaces path separators and control characters
 * with '_' (in place: the result is never longer); -1 when it is not UTF-8 or
 * nothing of it would be left but dots.
 */
static int sanitise(struct name *name)
{
	size_t in = 0, out = 0;
	int only_dots = 1;
	while (in < name->length) {
		uint32_t code_point;
		size_t length = utf8_sequence((const unsigned char *)name->bytes + in,
					      name->length - in, &code_point);
		if (length == 0)
			return -1;
		if (code_point != '.')
			only_dots = 0;
		if (is_replaced(code_point)) {
			name->bytes[out++] = '_';
		} else {
			memmove(name->bytes + out, name->bytes + in, length);
			out += length;
		}
		in += length;
	}
	name->length = out;
	name->bytes[out] = '\0';
	return only_dots ? -1 : 0;
}

/* "<id><.ext>" with file_path's extension when it is short and alphanumeric. */
static void fallback_name(const char *id, const char *file_path, struct name *name)
{
	size_t id_length = strnlen(id, DISPOSITION_NAME_MAX - EXTENSION_MAX - 1);
	memcpy(name->bytes, id, id_length);
	name->length = id_length;
	const char *base = file_path ? strrchr(file_path, '/') : NULL;
	base = base ? base + 1 : file_path;
	const char *dot = base ? strrchr(base, '.') : NULL;
	if (dot != NULL && dot != base) {
		size_t length = strlen(dot + 1);
		int plain = length > 0 && length <= EXTENSION_MAX;
		for (size_t i = 0; plain && i < length; i++) {
			char c = dot[1 + i];
			plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				(c >= '0' && c <= '9');
		}
		if (plain) {
			memcpy(name->bytes + name->length, dot, length + 1);
			name->length += length + 1;
		}
	}
	name->bytes[name->length] = '\0';
}

/* Printable ASCII that may stand in a quoted filename as it is (and is not decoded again). */
static int is_plain(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '%';
}

/* RFC 8187 attr-char: what filename* carries without percent-encoding. */
static int is_attr_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("!#$&+-.^_`|~", c) != NULL);
}

/* filename="..." with each character outside is_plain as one '_'; 1 when one was replaced. */
static int put_ascii_fallback(struct writer *w, const struct name *name)
{
	int replaced = 0;
	put(w, "; filename=\"", strlen("; filename=\""));
	for (size_t i = 0; i < name->length;) {
		unsigned char c = (unsigned char)name->bytes[i];
		uint32_t code_point;
		size_t length = c < 0x80 ? 1
					 : utf8_sequence((const unsigned char *)name->bytes + i,
							 name->length - i, &code_point);
		if (is_plain(c)) {
			put_byte(w, (char)c);
		} else {
			put_byte(w, '_');
			replaced = 1;
		}
		i += length ? length : 1;
	}
	put_byte(w, '"');
	return replaced;
}

static void put_extended(struct writer *w, const struct name *name)
{
	static const char hex[] = "0123456789ABCDEF";
	put(w, "; filename*=UTF-8''", strlen("; filename*=UTF-8''"));
	for (size_t i = 0; i < name->length; i++) {
		unsigned char c = (unsigned char)name->bytes[i];
		if (is_attr_char(c)) {
			put_byte(w, (char)c);
		} else {
			char escaped[3] = {'%', hex[c >> 4], hex[c & 0x0f]};
			put(w, escaped, sizeof(escaped));
		}
	}
}

size_t disposition_value(const char *param, size_t param_length, const char *id,
			 const char *file_path, char *out, size_t out_size)
{
	struct name name;
	if (param == NULL || percent_decode(param, param_length, &name) < 0 || sanitise(&name) < 0)
		fallback_name(id, file_path, &name);

	struct writer w = {out, out_size, 0, out_size == 0};
	put(&w, "attachment", strlen("attachment"));
	if (put_ascii_fallback(&w, &name))
		put_extended(&w, &name);
	return w.overflow ? 0 : w.used;
}
