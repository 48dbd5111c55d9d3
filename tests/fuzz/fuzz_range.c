/*
 * Fuzzes range_parse: any header against any size must return one of the
 * three verdicts, and every part it returns must lie inside the file, in
 * order of first byte <= last byte, no more than max_parts of them.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/range.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 9)
		return 0;
	uint64_t file_size;
	memcpy(&file_size, data, sizeof(file_size));
	file_size %= (uint64_t)1 << 40;
	size_t max_parts = 1 + data[8] % 32;
	char *header = strndup((const char *)data + 9, size - 9);
	struct byte_range parts[32];
	size_t count = 0;

	enum range_verdict verdict = range_parse(header, file_size, max_parts, parts, &count);
	if (verdict == RANGE_PARTS) {
		if (count == 0 || count > max_parts)
			abort();
		uint64_t total = 0;
		for (size_t i = 0; i < count; i++) {
			if (parts[i].first > parts[i].last || parts[i].last >= file_size)
				abort();
			total += parts[i].last - parts[i].first + 1;
		}
		if (total > file_size)
			abort();
	} else if (verdict != RANGE_WHOLE && verdict != RANGE_UNSATISFIABLE) {
		abort();
	}
	free(header);
	return 0;
}
