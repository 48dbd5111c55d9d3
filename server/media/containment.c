/*
 * containment: the prefix decision behind "never a byte outside the media
 * roots". Component-aware so a sibling directory sharing a name prefix does
 * not count as inside.
 */
#include "media/containment.h"

#include <string.h>

int containment_is_canonical(const char *path)
{
	if (path == NULL || path[0] != '/')
		return 0;
	if (path[1] == '\0')
		return 1;
	/* One pass: each segment after a '/' is non-empty and neither "." nor "..". */
	const char *segment = path + 1;
	for (const char *c = segment;; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		size_t length = (size_t)(c - segment);
		if (length == 0)
			return 0; /* "//" or a trailing slash */
		if (segment[0] == '.' && (length == 1 || (length == 2 && segment[1] == '.')))
			return 0;
		if (*c == '\0')
			return 1;
		segment = c + 1;
	}
}

static int is_inside(const char *root, const char *path)
{
	size_t root_length = strlen(root);
	if (root_length == 1 && root[0] == '/')
		return path[0] == '/' && path[1] != '\0';
	return strncmp(path, root, root_length) == 0 && path[root_length] == '/' &&
	       path[root_length + 1] != '\0';
}

int containment_find_root(const char *const *roots, size_t root_count, const char *resolved_path)
{
	if (resolved_path == NULL || !containment_is_canonical(resolved_path))
		return -1;
	for (size_t i = 0; i < root_count; i++) {
		if (roots[i] != NULL && containment_is_canonical(roots[i]) &&
		    is_inside(roots[i], resolved_path))
			return (int)i;
	}
	return -1;
}
