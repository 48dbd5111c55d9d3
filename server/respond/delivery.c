/*
 * delivery: the three strategies. In both offload modes musicd answers 200
 * with headers only: the front server replaces the body with the file and
 * does ranges and conditional requests itself, from its own view of the file.
 */
#include "respond/delivery.h"

#include <event2/http.h>
#include <limits.h>

#include "base/log.h"
#include "http/offload.h"
#include "respond/serve.h"

#define OFFLOAD_URI_MAX (PATH_MAX * 3 + 256)

static void respond_sendfile(struct exchange *exchange, const struct response_file *file,
			     const struct media_roots *roots)
{
	(void)roots;
	serve_file(exchange, file);
}

static void respond_accel_redirect(struct exchange *exchange, const struct response_file *file,
				   const struct media_roots *roots)
{
	char uri[OFFLOAD_URI_MAX];
	size_t root = (size_t)file->root_index;
	if (offload_accel_uri(exchange_config(exchange)->x_accel_redirects[root],
			      roots->paths[root], file->resolved_path, uri, sizeof(uri)) == 0) {
		log_error("%s: cannot express as an X-Accel-Redirect URI", file->resolved_path);
		response_send_error(exchange, 500);
		return;
	}
	response_send_offload(exchange, file, "X-Accel-Redirect", uri);
}

static void respond_x_sendfile(struct exchange *exchange, const struct response_file *file,
			       const struct media_roots *roots)
{
	(void)roots;
	if (!offload_header_safe(file->resolved_path)) {
		log_error("%s: path has control characters; cannot send it as X-Sendfile",
			  file->resolved_path);
		response_send_error(exchange, 500);
		return;
	}
	response_send_offload(exchange, file, "X-Sendfile", file->resolved_path);
}

static const struct delivery strategies[] = {
	{"sendfile", respond_sendfile},
	{"x-accel-redirect", respond_accel_redirect},
	{"x-sendfile", respond_x_sendfile},
};

const struct delivery *delivery_for(const struct config *config)
{
	if (config->x_accel_redirect_count > 0)
		return &strategies[1];
	if (config->x_sendfile)
		return &strategies[2];
	return &strategies[0];
}
