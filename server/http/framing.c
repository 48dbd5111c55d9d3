/*
 * framing: the rules of framing.h, one test each.
 */
#include "http/framing.h"

#include <string.h>
#include <strings.h>

/* A Content-Length of zero announces no body: "0", "00" ... */
static int is_zero(const char *value)
{
	if (*value == '\0')
		return 0;
	while (*value == '0')
		value++;
	return *value == '\0';
}

static int all_equal(const char *const *values, size_t count)
{
	for (size_t i = 1; i < count; i++) {
		if (strcmp(values[i], values[0]) != 0)
			return 0;
	}
	return 1;
}

enum framing_verdict framing_check(const struct framing_request *request)
{
	size_t lengths = request->content_length_count;
	size_t encodings = request->transfer_encoding_count;

	if (!request->body_is_read) {
		if (encodings > 0)
			return FRAMING_REFUSE;
		for (size_t i = 0; i < lengths; i++) {
			if (!is_zero(request->content_lengths[i]))
				return FRAMING_REFUSE;
		}
		return FRAMING_OK;
	}
	if (encodings > 0 && lengths > 0)
		return FRAMING_REFUSE; /* which one frames the body depends on who reads it */
	if (encodings > 1 || (encodings == 1 &&
			      strcasecmp(request->transfer_encodings[0], "chunked") != 0))
		return FRAMING_REFUSE; /* evhttp would frame it by length, a front server by coding */
	if (lengths > 1 && !all_equal(request->content_lengths, lengths))
		return FRAMING_REFUSE; /* evhttp reads the first, others may read the last */
	return FRAMING_OK;
}
