/*
 * vorbis_comment: the comment block of Ogg Vorbis, Opus and FLAC files read
 * for the one thing TagLib cannot tell: whether every comment is valid UTF-8
 * (the format requires it; TagLib silently drops one that is not). Pure.
 */
#ifndef MUSICD_IMPORT_VORBIS_COMMENT_H
#define MUSICD_IMPORT_VORBIS_COMMENT_H

#include <stdbool.h>
#include <stddef.h>

struct vorbis_comment_info {
	char invalid_field[32]; /* "" or the name of the first comment that is not UTF-8 */
};

/*
 * Checks a comment block (vendor string, count, "NAME=value" comments; any
 * "\x03vorbis" or "OpusTags" packet prefix already removed). A block cut
 * short is checked as far as it holds. Returns 0.
 */
int vorbis_comment_parse(const unsigned char *bytes, size_t length,
			 struct vorbis_comment_info *info);

#endif
