/*
 * content_type: the media type a player is told for a file: from its
 * extension (never by sniffing the bytes), or from a document's field that
 * holds one (checked here first). Pure.
 */
#ifndef MUSICD_CONTENT_TYPE_H
#define MUSICD_CONTENT_TYPE_H

#include <stddef.h>

#define CONTENT_TYPE_DEFAULT "application/octet-stream"
/* The longest media type content_type_from_field takes. */
#define CONTENT_TYPE_FIELD_VALUE_MAX 127
#define CONTENT_TYPE_FIELD_MAX (CONTENT_TYPE_FIELD_VALUE_MAX + 1)

/* The type for the extension of path's last component, case-insensitive; never NULL. */
const char *content_type_for_path(const char *path);

/*
 * Copies value[0..length) into out (NUL-terminated) and returns 0 when it is
 * a media type (RFC 9110 section 8.3.1): 1 to CONTENT_TYPE_FIELD_VALUE_MAX
 * bytes, type "/" subtype (tokens), then any parameters ("; name=value", the
 * value a token or a quoted string), with spaces only around the ';' and
 * no control byte or byte past ASCII anywhere ("audio/ogg; codecs=opus").
 * -1 otherwise (a NUL inside, a missing subtype ...): out is left "".
 */
int content_type_from_field(char out[CONTENT_TYPE_FIELD_MAX], const char *value, size_t length);

#endif
