/*
 * offload: percent-encoding for X-Accel-Redirect. nginx unescapes the whole
 * URI when it holds any '%' and splits arguments at '?', so every byte that
 * could change the meaning is encoded; CR and LF can never reach a header
 * (the path's are encoded, a prefix holding any is refused).
 */
#include "http/offload.h"

#include <string.h>

static bool is_kept(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("-._~/!$&'()*+,;=:@", c) != NULL;
}

/* The part of resolved_path below root (an absolute path; trailing '/'s ignored), or NULL. */
static const char *below_root(const char *root, const char *resolved_path)
{
	size_t root_length = strlen(root);
	if (root[0] != '/' || resolved_path[0] != '/')
		return NULL;
	while (root_length > 0 && root[root_length - 1] == '/')
		root_length--;
	if (strncmp(resolved_path, root, root_length) != 0 || resolved_path[root_length] != '/')
		return NULL;
	const char *relative = resolved_path + root_length + 1;
	return *relative != '\0' ? relative : NULL;
}

size_t offload_accel_uri(const char *prefix, const char *root, const char *resolved_path,
			 char *out, size_t out_size)
{
	static const char hex[] = "0123456789ABCDEF";
	const char *relative = below_root(root, resolved_path);
	if (relative == NULL || !offload_header_safe(prefix))
		return 0;

	size_t prefix_length = strlen(prefix);
	bool needs_slash = prefix_length == 0 || prefix[prefix_length - 1] != '/';
	size_t used = prefix_length + (needs_slash ? 1 : 0);
	if (used >= out_size)
		return 0;
	memcpy(out, prefix, prefix_length);
	if (needs_slash)
		out[prefix_length] = '/';

	for (const unsigned char *c = (const unsigned char *)relative; *c; c++) {
		if (is_kept(*c)) {
			if (used + 1 >= out_size)
				return 0;
			out[used++] = (char)*c;
		} else {
			if (used + 3 >= out_size)
				return 0;
			out[used++] = '%';
			out[used++] = hex[*c >> 4];
			out[used++] = hex[*c & 0xf];
		}
	}
	out[used] = '\0';
	return used;
}

bool offload_header_safe(const char *text)
{
	for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
		if (*c < 0x20 || *c == 0x7f)
			return false;
	}
	return true;
}
