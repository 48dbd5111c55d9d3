/*
 * etag: the entity-tags musicd sends (RFC 9110 section 8.8.3), from a file's
 * modification time and size or from a document's own field.
 */
#include "http/etag.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Lower-case hex of value: at least min_digits digits (zero-padded), no more than needed. */
static char *put_hex(char *out, uint64_t value, int min_digits)
{
	static const char hex[] = "0123456789abcdef";
	char digits[16];
	int count = 0;
	do {
		digits[count++] = hex[value & 0xf];
		value >>= 4;
	} while (value != 0);
	while (count < min_digits)
		digits[count++] = '0';
	while (count > 0)
		*out++ = digits[--count];
	return out;
}

/* "<mtime seconds hex><nanoseconds, 8 hex digits>-<size hex>", quoted; by hand, once per open file. */
void etag_format(char out[ETAG_MAX], struct timespec mtime, uint64_t size)
{
	char *cursor = out;
	*cursor++ = '"';
	cursor = put_hex(cursor, (uint64_t)mtime.tv_sec, 1);
	cursor = put_hex(cursor, (uint64_t)(unsigned long)mtime.tv_nsec, 8);
	*cursor++ = '-';
	cursor = put_hex(cursor, size, 1);
	*cursor++ = '"';
	*cursor = '\0';
}

/*
 * A subset of RFC 9110's etagc chosen so that no value can need escaping
 * anywhere an ETag travels: no quote, backslash, comma (If-None-Match lists)
 * or space, nothing outside ASCII.
 */
static int etag_field_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("+-./:=_~", c) != NULL);
}

int etag_from_field(char out[ETAG_MAX], const char *value, size_t length)
{
	if (value == NULL || length == 0 || length > ETAG_FIELD_VALUE_MAX)
		return -1;
	for (size_t i = 0; i < length; i++) {
		if (!etag_field_byte((unsigned char)value[i]))
			return -1;
	}
	out[0] = '"';
	memcpy(out + 1, value, length);
	out[length + 1] = '"';
	out[length + 2] = '\0';
	return 0;
}
