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

/* One option of a Connection list ends at a comma or the value's end; OWS around it is no part. */
static int option_is_close(const char *start, const char *end)
{
	while (start < end && (*start == ' ' || *start == '\t'))
		start++;
	while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	return end - start == 5 && strncasecmp(start, "close", 5) == 0;
}

int framing_closes(const char *const *values, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		const char *start = values[i];
		for (;;) {
			const char *comma = strchr(start, ',');
			const char *end = comma != NULL ? comma : start + strlen(start);
			if (option_is_close(start, end))
				return 1;
			if (comma == NULL)
				break;
			start = comma + 1;
		}
	}
	return 0;
}
