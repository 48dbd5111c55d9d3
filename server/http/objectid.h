/*
 * objectid: recognises the textual form of a MongoDB ObjectId, the :mid of a
 * track URL. Pure; the only gate between a URL and a database query.
 */
#ifndef MUSICD_OBJECTID_H
#define MUSICD_OBJECTID_H

#include <stdbool.h>
#include <stddef.h>

#define OBJECTID_HEX_LENGTH 24

/* True when text[0..length) is exactly 24 hexadecimal digits (either case). */
bool objectid_is_valid(const char *text, size_t length);

#endif
