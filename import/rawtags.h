/*
 * rawtags: reads, from an open audio file, the tag blocks that TagLib's C
 * binding does not expose (ID3v2 in mp3, VORBIS_COMMENT in FLAC, the comment
 * header in Ogg Vorbis and Opus) and hands them to the pure parsers: album
 * artist, disc number, and whether the tag text is valid.
 */
#ifndef MUSICD_IMPORT_RAWTAGS_H
#define MUSICD_IMPORT_RAWTAGS_H

#include <stdint.h>

struct rawtags {
	char *album_artist;   /* malloc'd UTF-8 or NULL; freed by rawtags_free */
	unsigned disc;	      /* 0 when absent */
	char invalid[32];     /* "" or the frame/comment whose text is not valid */
	int64_t id3v2_size;   /* mp3: bytes of the ID3v2 tag at the start (0 when none) */
	int64_t audio_expected; /* mp3: audio bytes its encoder wrote (0 when not known) */
	int64_t audio_present;	/* mp3: audio bytes in the file, tags at either end excluded */
};

/* Reads what the file's type (by path's extension) holds; returns 0 or a negative errno. */
int rawtags_read(int fd, const char *path, int64_t file_size, struct rawtags *tags);
void rawtags_free(struct rawtags *tags);

#endif
