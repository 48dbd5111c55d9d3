/*
 * disposition: Content-Disposition for ?download (RFC 6266), from the name
 * the URL gives in :param. Pure.
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
 * True when the target's query holds a parameter named "download" (with any
 * value or none: "?download", "?download=1", "?a=b&download"). Other
 * parameters mean nothing to musicd.
 */
int disposition_requested(const char *target);

/*
 * Writes the Content-Disposition value for a download of target (a track
 * route target, /musicdb/:mid/:param...) into out: the name from :param, or
 * id and file_path's extension when :param cannot be one. Returns its length,
 * or 0 when out_size is too small (DISPOSITION_VALUE_MAX always suffices).
 */
size_t disposition_value(const char *target, const char *id, const char *file_path, char *out,
			 size_t out_size);

#endif
