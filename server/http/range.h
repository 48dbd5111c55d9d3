/*
 * range: parses a Range header against a file size (RFC 9110 section 14),
 * deciding what nginx's range filter decides for the same input, but for
 * empty list elements. Pure.
 *
 *   absent, another unit, too many ranges, or ranges that add up to more than
 *   the file                                  -> RANGE_WHOLE  (200, whole file)
 *   one or more satisfiable ranges            -> RANGE_PARTS  (206)
 *   nothing satisfiable, or malformed syntax  -> RANGE_UNSATISFIABLE (416)
 *
 * Malformed byte ranges get 416, as nginx and Go's net/http answer (RFC 9110
 * also allows ignoring them); a set with one malformed item (a reversed
 * "5-4" beside a valid one) is malformed as a whole, and empty list elements
 * ("0-1,,2-3", "0-1,") are ignored, as RFC 9110 section 5.6.1.2 requires
 * (nginx finds them malformed). Ranges are kept in request order, not merged.
 */
#ifndef MUSICD_RANGE_H
#define MUSICD_RANGE_H

#include <stddef.h>
#include <stdint.h>

/* The default for --max-ranges: more ranges than this in one request get the whole file. */
#define RANGE_DEFAULT_MAX_PARTS 16
/* A hard ceiling on --max-ranges, which also sizes the parts array callers provide. */
#define RANGE_MAX_PARTS_LIMIT 1024

struct byte_range {
	uint64_t first; /* first byte offset */
	uint64_t last;	/* last byte offset, inclusive */
};

enum range_verdict { RANGE_WHOLE, RANGE_PARTS, RANGE_UNSATISFIABLE };

/*
 * Parses header (may be NULL) for a file of size bytes, writing at most
 * max_parts ranges (1..RANGE_MAX_PARTS_LIMIT) into parts. *count is set for RANGE_PARTS.
 */
enum range_verdict range_parse(const char *header, uint64_t size, size_t max_parts,
			       struct byte_range *parts, size_t *count);

#endif
