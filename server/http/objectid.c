/*
 * objectid: recognises the 24-hex-digit form of a MongoDB ObjectId.
 */
#include "http/objectid.h"

static bool is_hex_digit(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool objectid_is_valid(const char *text, size_t length)
{
	if (text == NULL || length != OBJECTID_HEX_LENGTH)
		return false;
	for (size_t i = 0; i < length; i++) {
		if (!is_hex_digit(text[i]))
			return false;
	}
	return true;
}
