/*
 * escape: byte strings made safe for the places musicd-import writes them:
 * a terminal (a path that may hold any byte) and a URL path segment. Whether
 * text is valid UTF-8, as BSON strings must be, is libbson's to say
 * (bson_utf8_validate). Pure; each returns a malloc'd string the caller
 * frees, or NULL when out of memory, so nothing is ever truncated.
 */
#ifndef MUSICD_IMPORT_ESCAPE_H
#define MUSICD_IMPORT_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * For stderr: valid UTF-8 printable text is kept, a backslash becomes "\\",
 * control characters and every byte of an invalid sequence become "\xNN".
 */
char *escape_for_terminal(const char *bytes, size_t length);

/* A URL path segment: unreserved characters (RFC 3986) kept, every other byte as %XX. */
char *escape_for_url(const char *text);

#endif
