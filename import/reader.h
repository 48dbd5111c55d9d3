/*
 * reader: everything read from one file that is new or changed: its status
 * from the open descriptor, the raw tag checks (rawtags), TagLib's fields
 * (tags), and with --hash its SHA-256. Safe on many threads at once.
 */
#ifndef MUSICD_IMPORT_READER_H
#define MUSICD_IMPORT_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "document.h"

/*
 * Fills track (path copied) for the file at path. Returns 0; 1 when the file
 * is skipped, with a reason (unreadable, not its format, invalid text); -1
 * when out of memory. On 1 and -1 the track is left empty.
 */
int reader_read(const char *path, bool want_hash, struct track *track, char *reason,
		size_t reason_size);

#endif
