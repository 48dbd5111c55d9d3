/*
 * cors: the origin grammar (RFC 6454's serialisation, as browsers send it)
 * and the fields of each answer. The echoed origin is always the configured
 * string, so nothing the client wrote reaches the head.
 */
#include "http/cors.h"

#include <stdio.h>
#include <string.h>

#define PORT_MAX 65535

static int is_lower_alpha(char c)
{
	return c >= 'a' && c <= 'z';
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), lower-case; returns its end or NULL. */
static const char *scheme_end(const char *text)
{
	if (!is_lower_alpha(*text))
		return NULL;
	while (is_lower_alpha(*text) || is_digit(*text) || *text == '+' || *text == '-' ||
	       *text == '.')
		text++;
	return text;
}

/*
 * A lower-case registered name or IPv4 address, labels joined by single dots
 * (one trailing dot, as in "example.com.", is a name browsers keep), or a
 * bracketed IPv6 address, which has at least two colons; its end or NULL.
 */
static const char *host_end(const char *text)
{
	const char *start = text;
	if (*text == '[') {
		int colons = 0;
		text++;
		while (is_digit(*text) || (*text >= 'a' && *text <= 'f') || *text == ':' ||
		       *text == '.')
			colons += *text++ == ':';
		return *text == ']' && colons >= 2 ? text + 1 : NULL;
	}
	size_t label = 0;
	for (; is_lower_alpha(*text) || is_digit(*text) || *text == '-' || *text == '.'; text++) {
		if (*text != '.') {
			label++;
		} else if (label == 0) {
			return NULL; /* a leading dot, or two together */
		} else {
			label = 0;
		}
	}
	return text > start ? text : NULL;
}

/* ":port" with 1-65535 and no leading zero, or nothing; returns 0 when the rest is valid. */
static int check_port(const char *text)
{
	if (*text == '\0')
		return 0;
	if (*text != ':' || text[1] < '1' || text[1] > '9')
		return -1;
	unsigned long port = 0;
	for (text++; *text != '\0'; text++) {
		if (!is_digit(*text))
			return -1;
		port = port * 10 + (unsigned long)(*text - '0');
		if (port > PORT_MAX)
			return -1;
	}
	return 0;
}

int cors_origin_is_valid(const char *text)
{
	const char *end = scheme_end(text);
	if (end == NULL || strncmp(end, "://", 3) != 0)
		return 0;
	end = host_end(end + 3);
	return end != NULL && check_port(end) == 0;
}

static int is_word(const char *value, const char *word)
{
	return strcmp(value, word) == 0;
}

int cors_check_origins(char *const *origins, size_t count, char *error, size_t error_size)
{
	for (size_t i = 0; i < count; i++) {
		const char *origin = origins[i];
		if (is_word(origin, "*") || is_word(origin, "off")) {
			if (count > 1) {
				snprintf(error, error_size,
					 "cors-origin: '%s' cannot be combined with other origins",
					 origin);
				return -1;
			}
			continue;
		}
		if (!response_value_is_safe(origin)) {
			/* Not echoed: it may hold the control characters that make it unsafe. */
			snprintf(error, error_size, "cors-origin: a value holds a control character");
			return -1;
		}
		if (!cors_origin_is_valid(origin)) {
			snprintf(error, error_size,
				 "cors-origin: '%s' is not an origin: give scheme://host[:port] in "
				 "lower case as browsers send it (no path, no trailing slash), * or off",
				 origin);
			return -1;
		}
	}
	return 0;
}

enum cors_mode cors_mode(char *const *origins, size_t count)
{
	if (count == 0 || (count == 1 && is_word(origins[0], "off")))
		return CORS_OFF;
	if (count == 1 && is_word(origins[0], "*"))
		return CORS_ANY;
	return CORS_LIST;
}

/* The configured origin equal to the request's, or NULL. */
static const char *listed_origin(char *const *origins, size_t count, const char *request_origin)
{
	/* A value that could not stand in a header never matches (and is never echoed). */
	if (request_origin == NULL || !response_value_is_safe(request_origin))
		return NULL;
	for (size_t i = 0; i < count; i++) {
		if (strcmp(origins[i], request_origin) == 0)
			return origins[i];
	}
	return NULL;
}

size_t cors_fields(char *const *origins, size_t count, const char *request_origin,
		   enum cors_answer kind, struct response_field out[CORS_FIELDS_MAX])
{
	size_t used = 0;
	const char *allow_origin = NULL;
	switch (cors_mode(origins, count)) {
	case CORS_OFF:
		return 0;
	case CORS_ANY:
		allow_origin = "*";
		break;
	case CORS_LIST:
		allow_origin = listed_origin(origins, count, request_origin);
		out[used++] = (struct response_field){"Vary", "Origin"};
		break;
	}
	if (allow_origin == NULL)
		return used;
	out[used++] = (struct response_field){"Access-Control-Allow-Origin", allow_origin};
	if (kind == CORS_PREFLIGHT) {
		out[used++] = (struct response_field){"Access-Control-Allow-Methods", CORS_ALLOW_METHODS};
		out[used++] = (struct response_field){"Access-Control-Allow-Headers", CORS_ALLOW_HEADERS};
		out[used++] = (struct response_field){"Access-Control-Max-Age", CORS_MAX_AGE};
	} else {
		out[used++] =
			(struct response_field){"Access-Control-Expose-Headers", CORS_EXPOSE_HEADERS};
	}
	return used;
}
