/*
 * containment: decides whether a resolved file path lies inside one of the
 * media roots. Pure: the caller resolves both sides (the roots once at start,
 * the file from the descriptor it actually opened) and asks here.
 */
#ifndef MUSICD_CONTAINMENT_H
#define MUSICD_CONTAINMENT_H

#include <stddef.h>

/*
 * Index of the first root that strictly contains resolved_path, or -1.
 * Roots and path are absolute and canonical (no "." or ".." components, no
 * trailing slash except the root directory "/"); a path equal to a root is
 * not inside it, and "/music2/a" is not inside "/music".
 */
int containment_find_root(const char *const *roots, size_t root_count, const char *resolved_path);

/* Whether a canonical absolute path has any "." / ".." component or empty segment. */
int containment_is_canonical(const char *path);

#endif
