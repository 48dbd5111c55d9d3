/*
 * tags: a file's tags and audio properties through TagLib (tags.cpp, C++):
 * title, artist, album, album artist, genre, comment, year, track and disc
 * numbers, duration in milliseconds, bitrate, sample rate, channels.
 * tags_init must run once before any thread reads; after that tags_read may
 * run on many threads at once.
 */
#ifndef MUSICD_IMPORT_TAGS_H
#define MUSICD_IMPORT_TAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "document.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets TagLib up before reader threads start. */
void tags_init(void);

/* Whether TagLib has a reader for the format musicd serves under path's extension. */
bool tags_supported(const char *path);

/* The file as the caller opened it: TagLib reads it there, not by its path. */
struct tags_source {
	int fd;
	int64_t size; /* the descriptor's, before anything was read */
	const unsigned char *head; /* its first head_length bytes, already read */
	size_t head_length;
};

/*
 * Fills track's tag and property fields from source, the file at path (whose
 * extension picks TagLib's reader). Returns 0; 1 when the file is not one
 * TagLib can read as its extension says or holds no audio (reason set); -1
 * when out of memory.
 */
int tags_read(const char *path, const struct tags_source *source, struct track *track,
	      char *reason, size_t reason_size);

#ifdef __cplusplus
}
#endif

#endif
