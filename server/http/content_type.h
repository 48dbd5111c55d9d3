/*
 * content_type: the media type a player is told for a file, from its
 * extension alone (never by sniffing the bytes). Pure.
 */
#ifndef MUSICD_CONTENT_TYPE_H
#define MUSICD_CONTENT_TYPE_H

#define CONTENT_TYPE_DEFAULT "application/octet-stream"

/* The type for the extension of path's last component, case-insensitive; never NULL. */
const char *content_type_for_path(const char *path);

#endif
