/*
 * escape: byte strings made safe for the places musicd-import writes them:
 * a terminal (a path that may hold any byte), a JSON string, and a URL path
 * segment. Pure; each returns a malloc'd string the caller frees, or NULL when
 * out of memory, so nothing is ever truncated.
 */
#ifndef MUSICD_IMPORT_ESCAPE_H
#define MUSICD_IMPORT_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

/* Whether bytes[0..length) is valid UTF-8 without NUL bytes (what BSON strings must be). */
bool escape_is_utf8(const char *bytes, size_t length);

/*
 * For stderr: valid UTF-8 printable text is kept, a backslash becomes "\\",
 * control characters and every byte of an invalid sequence become "\xNN".
 */
char *escape_for_terminal(const char *bytes, size_t length);

/* The body of a JSON string (no quotes): '"', '\\' and control characters escaped. UTF-8 in. */
char *escape_for_json(const char *text);

/* A URL path segment: unreserved characters (RFC 3986) kept, every other byte as %XX. */
char *escape_for_url(const char *text);

#endif
