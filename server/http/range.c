/*
 * range: the Range header grammar as nginx reads it: "bytes=" in any case,
 * then comma-separated "first-last", "first-" or "-suffix", spaces allowed
 * around numbers and dashes. Numbers that overflow, stray characters, a last
 * position before the first and a missing dash are malformed, and one
 * malformed item makes the whole set malformed. Empty list elements are
 * ignored (RFC 9110 section 5.6.1.2), where nginx finds them malformed.
 * Ranges starting at or past the end are dropped; if none remains the
 * request is unsatisfiable. Unlike nginx, an empty file satisfies no range
 * (416, as RFC 9110 says), where nginx sends 200.
 */
#include "http/range.h"

#include <strings.h>

#define UNIT_PREFIX "bytes="
#define UNIT_PREFIX_LENGTH 6

static const char *skip_spaces(const char *p)
{
	while (*p == ' ')
		p++;
	return p;
}

/* Reads a decimal number; NULL on no digits or past INT64_MAX (nginx's off_t limit). */
static const char *read_number(const char *p, uint64_t *out)
{
	if (*p < '0' || *p > '9')
		return NULL;
	uint64_t value = 0;
	while (*p >= '0' && *p <= '9') {
		unsigned digit = (unsigned)(*p - '0');
		if (value > ((uint64_t)INT64_MAX - digit) / 10)
			return NULL;
		value = value * 10 + digit;
		p++;
	}
	*out = value;
	return p;
}

/*
 * Reads one range-spec at p into [start, end) clamped to size; returns the
 * position after it (at ',' or the end) or NULL if malformed.
 */
static const char *read_spec(const char *p, uint64_t size, uint64_t *start, uint64_t *end)
{
	uint64_t number;
	p = skip_spaces(p);
	if (*p == '-') {
		/* "-suffix": the last suffix bytes; like nginx, no space after this dash */
		p = read_number(p + 1, &number);
		if (p == NULL)
			return NULL;
		*start = number < size ? size - number : 0;
		*end = size;
	} else {
		p = read_number(p, start);
		if (p == NULL)
			return NULL;
		p = skip_spaces(p);
		if (*p++ != '-')
			return NULL;
		p = skip_spaces(p);
		if (*p == ',' || *p == '\0') {
			*end = size; /* "first-" */
		} else {
			p = read_number(p, &number);
			if (p == NULL || number < *start)
				return NULL; /* "5-4" is no range: the whole set is malformed */
			*end = number >= size ? size : number + 1;
		}
	}
	p = skip_spaces(p);
	return (*p == ',' || *p == '\0') ? p : NULL;
}

enum range_verdict range_parse(const char *header, uint64_t size, size_t max_parts,
			       struct byte_range *parts, size_t *count)
{
	if (header == NULL || strncasecmp(header, UNIT_PREFIX, UNIT_PREFIX_LENGTH) != 0 ||
	    header[UNIT_PREFIX_LENGTH] == '\0')
		return RANGE_WHOLE;

	const char *p = header + UNIT_PREFIX_LENGTH;
	uint64_t total = 0;
	size_t found = 0;

	for (;;) {
		uint64_t start, end;
		p = skip_spaces(p);
		if (*p == ',' || *p == '\0') {
			/* An empty list element (blanks at most): a recipient ignores it. */
			if (*p == '\0')
				break;
			p++;
			continue;
		}
		p = read_spec(p, size, &start, &end);
		if (p == NULL)
			return RANGE_UNSATISFIABLE;
		if (start < end) {
			if (found == max_parts)
				return RANGE_WHOLE;
			parts[found].first = start;
			parts[found].last = end - 1;
			found++;
			/* Saturating: only the comparison with size below matters. */
			total = total > UINT64_MAX - (end - start) ? UINT64_MAX : total + (end - start);
		}
		if (*p == '\0')
			break;
		p++; /* the comma */
	}
	if (found == 0)
		return RANGE_UNSATISFIABLE; /* none satisfiable, or no range-spec at all ("bytes=,") */
	if (total > size)
		return RANGE_WHOLE; /* overlapping or repeated ranges: a cheap abuse guard */
	*count = found;
	return RANGE_PARTS;
}
