/*
 * progress: the line a terminal shows while musicd-import runs, redrawn in
 * place. While it reads the documents the previous import left under the
 * directories: how many so far. While it walks the directories: the files
 * found so far, of about as many as those documents; then, while
 * it reads the new and changed files: the files done of those found. Each with
 * the rate, the time left once it can be told, and the directory it is in,
 * all cut to the terminal's width. Pure: the console gives it the numbers,
 * the time and the width, and draws the line.
 */
#ifndef MUSICD_IMPORT_PROGRESS_H
#define MUSICD_IMPORT_PROGRESS_H

#include <stddef.h>

/* The rate and the time left are told once a stage has run this long: over less they say little. */
#define PROGRESS_SETTLE_SECONDS 1.0
/* With fewer columns than this left for it, the directory is left out rather than cut to dots. */
#define PROGRESS_MIN_DIRECTORY_COLUMNS 12
/* The width taken when the terminal does not tell its own (a pseudo-terminal never sized). */
#define PROGRESS_DEFAULT_COLUMNS 80
/* A wider terminal gets a line this wide. */
#define PROGRESS_MAX_COLUMNS 1024
/* Room enough for any line: a column takes at most 4 bytes (a UTF-8 character). */
#define PROGRESS_LINE_MAX (4 * PROGRESS_MAX_COLUMNS + 1)

enum progress_stage { PROGRESS_LOADING, PROGRESS_WALKING, PROGRESS_READING };

struct progress {
	enum progress_stage stage;
	size_t loaded;	       /* loading: documents read so far */
	size_t found;	       /* audio files found so far; all of them once reading */
	size_t expected;       /* walking: the files the previous import left under the DIRs, or 0 */
	size_t done;	       /* reading: files done, the unchanged ones among them */
	size_t to_read;	       /* reading: the new and changed files */
	size_t read;	       /* reading: of those, read so far */
	double seconds;	       /* since the stage began */
	const char *directory; /* walked, or of the file read last; NULL: none yet. Any bytes */
};

/*
 * Loading: "reading the collection: 41000 documents, 6800 documents/s".
 * Walking: "walking: 1200 of about 100000 files found, 600 files/s, 2:45 left, /srv/music/A"
 * ("walking: 1200 files found, 600 files/s, /srv/music/A" when none were expected, or more
 * were found). Reading: "7120/10000 files, 48 files/s, 1:00 left, /srv/music/B", the rate and
 * the time left those of the files read, not of those found unchanged. The rate and the time
 * left only once the stage has run PROGRESS_SETTLE_SECONDS.
 * At most columns - 1 columns wide (the last column of a line makes some terminals wrap; 0
 * columns: PROGRESS_DEFAULT_COLUMNS; at most PROGRESS_MAX_COLUMNS): the directory, escaped as
 * paths are (escape_for_terminal), loses its beginning to "..." to fit, or is left out; a line
 * still too long is cut. Returns 0, or -1 when out (PROGRESS_LINE_MAX bytes are always enough)
 * is too small or memory runs out.
 */
int progress_format(const struct progress *progress, unsigned columns, char *out, size_t size);

/* "0:41", "12:05", "3:02:07": whole seconds, rounded up. Returns 0, or -1 when out is too small. */
int progress_format_duration(double seconds, char *out, size_t size);

/*
 * The columns UTF-8 text takes on a terminal, never fewer: two for a character from U+1100,
 * where the wide ones (CJK, Hangul, emoji) begin, one for any other (combining marks included).
 */
size_t progress_text_columns(const char *text, size_t length);

#endif
