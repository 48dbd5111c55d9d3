/*
 * disposition: Content-Disposition for ?download (RFC 6266, route.h says
 * whether it is asked for), from the name the URL gives in :param. Pure.
 *
 *   /musicdb/:mid/:param?download   attachment named :param, percent-decoded
 *   /musicdb/:mid/:param            no Content-Disposition
 *
 * The name is decoded once (%XX; malformed escapes, invalid UTF-8, or more
 * than DISPOSITION_NAME_MAX bytes fall back to "<mid><.ext of the file>").
 * Path separators and control characters become '_' in the name itself.
 * filename="..." is always sent, an ASCII fallback in which every character
 * outside printable ASCII, and '"', '\' and '%', is '_'; when that differs
 * from the name, filename*=UTF-8''... (RFC 8187) carries the exact name.
 */
#ifndef MUSICD_DISPOSITION_H
#define MUSICD_DISPOSITION_H

#include <stddef.h>

/* The longest decoded name kept (a file system's NAME_MAX); longer ones fall back. */
#define DISPOSITION_NAME_MAX 255
/* Room for any value disposition_value writes, and its NUL. */
#define DISPOSITION_VALUE_MAX                                                                     \
	(sizeof("attachment; filename=\"\"; filename*=UTF-8''") + 4 * DISPOSITION_NAME_MAX)

/*
 * Writes the Content-Disposition value for a download into out: the name
 * from param[0..param_length) (a track route's :param, route.h, as sent), or
 * id and file_path's extension when param is NULL or cannot be a name.
 * Returns its length, or 0 when out_size is too small (DISPOSITION_VALUE_MAX
 * always suffices).
 */
size_t disposition_value(const char *param, size_t param_length, const char *id,
			 const char *file_path, char *out, size_t out_size);

#endif
