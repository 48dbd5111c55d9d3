/*
 * Fuzzes response_head_format with arbitrary values in every field: either it refuses
 * (0) or the head it writes is one well-formed block: lines end in CRLF, a
 * CR or LF appears nowhere else, no other control byte but a tab, and the
 * only empty line is the last. So no value can add a header or end the head.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/response_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next NUL-separated piece of the input, or "" when it ran out. */
static const char *next_value(char **cursor, char *end)
{
	if (*cursor >= end)
		return "";
	char *value = *cursor;
	*cursor += strlen(value) + 1;
	return value;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	char *copy = malloc(size + 1);
	memcpy(copy, data, size);
	copy[size] = '\0';
	char *cursor = copy + 2, *end = copy + size;
	struct response_head head = {
		.http_minor = data[0] & 1,
		.status = 100 + data[1] % 500,
		.reason = next_value(&cursor, end),
		.date = next_value(&cursor, end),
		.content_type = next_value(&cursor, end),
		.has_length = data[0] & 2,
		.content_length = size,
		.content_range = (data[0] & 4) ? next_value(&cursor, end) : NULL,
		.accept_ranges = data[0] & 8,
		.connection = (enum response_connection)((data[0] >> 4) % 3),
	};
	while (cursor < end && head.field_count < RESPONSE_FIELDS_MAX) {
		const char *name = next_value(&cursor, end);
		response_head_add(&head, name, next_value(&cursor, end));
	}
	/* Names and the reason are musicd's constants: only values are checked, as in use. */
	head.reason = "OK";
	for (size_t i = 0; i < head.field_count; i++)
		head.fields[i].name = "X-Field";

	char out[RESPONSE_HEAD_MAX];
	size_t length = response_head_format(out, sizeof(out), &head);
	if (length > 0) {
		if (length < 4 || memcmp(out + length - 4, "\r\n\r\n", 4) != 0)
			abort();
		for (size_t i = 0; i < length; i++) {
			unsigned char c = (unsigned char)out[i];
			if (c == '\r' && (i + 1 >= length || out[i + 1] != '\n'))
				abort();
			if (c == '\n' && (i == 0 || out[i - 1] != '\r'))
				abort();
			if (c < 0x20 && c != '\r' && c != '\n' && c != '\t')
				abort();
			if (c == 0x7f)
				abort();
			if (c == '\n' && i + 3 < length && out[i + 1] == '\r' && out[i + 2] == '\n')
				abort(); /* an empty line before the end */
		}
	}
	free(copy);
	return 0;
}
