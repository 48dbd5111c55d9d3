/*
 * vorbis_comment: the comment block of Ogg Vorbis, Opus and FLAC files read
 * for what TagLib's C binding cannot tell: the album artist (ALBUMARTIST) and
 * disc number (DISCNUMBER), and whether every comment is valid UTF-8 (the
 * format requires it; TagLib silently drops one that is not). Pure.
 */
#ifndef MUSICD_IMPORT_VORBIS_COMMENT_H
#define MUSICD_IMPORT_VORBIS_COMMENT_H

#include <stdbool.h>
#include <stddef.h>

struct vorbis_comment_info {
	char *album_artist; /* malloc'd UTF-8, NULL when absent or empty */
	unsigned disc;	    /* 0 when absent */
	char invalid_field[32]; /* "" or the name of the first comment that is not UTF-8 */
};

/*
 * Parses a comment block (vendor string, count, "NAME=value" comments; any
 * "\x03vorbis" or "OpusTags" packet prefix already removed). A block cut
 * short yields what it holds. Returns 0, or -1 when out of memory.
 */
int vorbis_comment_parse(const unsigned char *bytes, size_t length,
			 struct vorbis_comment_info *info);

#endif
