/*
 * offload: the header values that hand a file to a front server instead of
 * sending it: X-Accel-Redirect for nginx (a URI under an internal location)
 * and X-Sendfile for Apache and lighttpd (an absolute path). Pure.
 */
#ifndef MUSICD_OFFLOAD_H
#define MUSICD_OFFLOAD_H

#include <stdbool.h>
#include <stddef.h>

/*
 * prefix + the path of resolved_path below root, percent-encoded as nginx
 * expects (everything but unreserved characters, '/', ':', '@' and
 * sub-delimiters, in upper-case hex: '%', '?', '#', spaces, control and
 * non-ASCII bytes). The prefix is copied as it is, with a '/' after it if it
 * lacks one; root is an absolute path, trailing '/'s ignored. Returns the
 * length, or 0 if resolved_path is not strictly below root, prefix holds a
 * control byte, or out_size is too small for the URI and its NUL.
 */
size_t offload_accel_uri(const char *prefix, const char *root, const char *resolved_path,
			 char *out, size_t out_size);

/* Whether text can be a header value verbatim: no control bytes (CR, LF, NUL, ...). */
bool offload_header_safe(const char *text);

#endif
