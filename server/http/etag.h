/*
 * etag: the entity-tags that let players and caches revalidate a file
 * (RFC 9110 section 8.8.3). Pure.
 */
#ifndef MUSICD_ETAG_H
#define MUSICD_ETAG_H

#include <stdint.h>
#include <time.h>

/*
 * The longest document value etag_from_field takes (a SHA-512 in hex is 128):
 * content hashes fit, and a longer value is refused rather than cut.
 */
#define ETAG_FIELD_VALUE_MAX 128
/* Either ETag, quoted, plus NUL: a field value, or the mtime form (at most 44). */
#define ETAG_MAX (ETAG_FIELD_VALUE_MAX + 3)

/* A strong ETag that changes whenever the file's mtime (to the nanosecond) or size does. */
void etag_format(char out[ETAG_MAX], struct timespec mtime, uint64_t size);

/*
 * A strong ETag from a document's field (--etag-field: a content hash the
 * library stores), the same on every machine that serves the document:
 * value quoted, when it is 1 to ETAG_FIELD_VALUE_MAX bytes of letters,
 * digits and "+-./:=_~" (hex, base64, base64url, "sha256:..." forms). Returns
 * 0, or -1 with out untouched (the caller keeps the file's own ETag).
 */
int etag_from_field(char out[ETAG_MAX], const char *value, size_t length);

#endif
