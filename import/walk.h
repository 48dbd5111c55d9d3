/*
 * walk: the audio files under the given directories, each by its canonical
 * absolute path with its size and modification time. Symbolic links to
 * directories are never followed; a symbolic link to a file is taken by its
 * target's path, and only when that target lies inside one of the
 * directories. What cannot be walked (a directory that vanishes or cannot be
 * read, a name that is not UTF-8) is reported once, counted and skipped.
 */
#ifndef MUSICD_IMPORT_WALK_H
#define MUSICD_IMPORT_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "console.h"

struct walk_entry {
	char *path; /* malloc'd, valid UTF-8 */
	int64_t size;
	int64_t mtime_ms;
};

/* Owns the entries; sorted by path and without duplicates after walk_roots. */
struct walk {
	struct walk_entry *entries;
	size_t count, capacity;
};

/* Whether name's extension is one musicd serves as audio (server/http/content_type.c). */
int walk_is_audio_name(const char *name);

/*
 * Walks each root (absolute, canonical: main resolved them), appending to out.
 * Returns 0, or -1 when out of memory (reported).
 */
int walk_roots(const char *const *roots, size_t root_count, struct walk *out,
	       struct console *console);

void walk_free(struct walk *walk);

#endif
