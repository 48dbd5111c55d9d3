/*
 * nearest_name: the known name a mistyped one was most likely meant to be,
 * for "unknown setting 'medai-root' (did you mean 'media-root'?)". Pure: no
 * I/O, no allocation.
 */
#ifndef MUSICD_NEAREST_NAME_H
#define MUSICD_NEAREST_NAME_H

#include <stddef.h>

/* Names longer than this are compared with nothing (no setting is half as long). */
#define NEAREST_NAME_MAX_LENGTH 64

/*
 * The edit distance between a[0..a_length) and b: insertions, deletions,
 * substitutions and swaps of two neighbouring characters, each 1 (optimal
 * string alignment, a restricted Damerau-Levenshtein distance); ASCII case is
 * ignored. SIZE_MAX when either is longer than NEAREST_NAME_MAX_LENGTH.
 */
size_t nearest_name_distance(const char *a, size_t a_length, const char *b);

/* The index-th known name, or NULL past the last one. */
typedef const char *nearest_name_at(size_t index);

/*
 * The known name closest to given[0..length) (the first of equally close
 * ones), or NULL when none is close enough to be a slip: at most one edit
 * per three characters of what was given, and at least one.
 */
const char *nearest_name(const char *given, size_t length, nearest_name_at *names);

#endif
