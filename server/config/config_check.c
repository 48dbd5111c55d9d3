/*
 * config_check: the checks, one after another, in the order a user would fix
 * them.
 */
#include "config/config_check.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/cors.h"
#include "http/proxy_trust.h"
#include "http/response_head.h"

/*
 * A setting musicd writes into response heads: a CR or LF would end the header
 * early (and let the value forge others), and a value longer than a head has
 * room for could only be cut. The value itself is not echoed: it may hold them.
 */
static int check_header_value(const char *setting, const char *value, char *error,
			      size_t error_size)
{
	size_t length = strlen(value);
	if (length > CONFIG_HEADER_VALUE_MAX) {
		snprintf(error, error_size, "%s: %zu bytes long; a header value may be at most %d",
			  setting, length, CONFIG_HEADER_VALUE_MAX);
		return -1;
	}
	/* response_head.c decides what a header value may hold; config only says where it fails. */
	size_t safe = response_value_safe_length(value);
	if (safe < length) {
		snprintf(error, error_size,
			  "%s: control character 0x%02x at byte %zu; a header value may not hold one",
			  setting, (unsigned char)value[safe], safe + 1);
		return -1;
	}
	return 0;
}

/*
 * Whether sockets bound to hosts a and b on one port take each other's
 * connections: the same address, or a wildcard that covers the other
 * ("::" covers every address, "0.0.0.0" every IPv4 one). Names are compared
 * as written.
 */
static bool listen_hosts_overlap(const char *a, const char *b)
{
	if (strcasecmp(a, b) == 0 || strcmp(a, "::") == 0 || strcmp(b, "::") == 0)
		return true;
	if (strcmp(a, "0.0.0.0") == 0)
		return strchr(b, ':') == NULL;
	if (strcmp(b, "0.0.0.0") == 0)
		return strchr(a, ':') == NULL;
	return false;
}

/*
 * A query parameter name the signer and every layer spell alike: RFC 3986's
 * unreserved characters, which no client or proxy percent-encodes.
 */
static int check_parameter_name(const char *setting, const char *name, char *error,
				size_t error_size)
{
	size_t length = strlen(name);
	size_t plain = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				    "0123456789-._~");
	if (length > CONFIG_URL_SIGNING_PARAMETER_MAX || plain < length) {
		snprintf(error, error_size,
			  "%s: '%.*s' is not 1 to %d letters, digits, '-', '.', '_' or '~'", setting,
			  CONFIG_URL_SIGNING_PARAMETER_MAX, name, CONFIG_URL_SIGNING_PARAMETER_MAX);
		return -1;
	}
	return 0;
}

int config_validate(const struct config *config, char *error, size_t error_size)
{
	if (config->metrics_host != NULL && config->metrics_port == config->listen_port &&
	    listen_hosts_overlap(config->metrics_host, config->listen_host)) {
		/* Both are SO_REUSEPORT sockets: the kernel would hand tracks' clients to /metrics. */
		snprintf(error, error_size,
			  "metrics-listen: port %u on that address is where musicd serves tracks "
			  "(listen); give the metrics a port of their own",
			  (unsigned)config->metrics_port);
		return -1;
	}
	if (config->media_root_count == 0) {
		snprintf(error, error_size,
			  "no media root: give at least one --media-root DIR (or media-root in the "
			  "config file)");
		return -1;
	}
	if (config->x_accel_redirect_count != 0 &&
	    config->x_accel_redirect_count != config->media_root_count) {
		snprintf(error, error_size,
			  "x-accel-redirect: given %zu times for %zu media roots; give one prefix per "
			  "media root, in the same order",
			  config->x_accel_redirect_count, config->media_root_count);
		return -1;
	}
	for (size_t i = 0; i < config->x_accel_redirect_count; i++) {
		if (check_header_value("x-accel-redirect", config->x_accel_redirects[i], error,
				       error_size) < 0)
			return -1;
		if (config->x_accel_redirects[i][0] != '/') {
			snprintf(error, error_size, "x-accel-redirect: '%s' must start with /",
				  config->x_accel_redirects[i]);
			return -1;
		}
	}
	if (config->x_accel_redirect_count != 0 && config->x_sendfile) {
		snprintf(error, error_size, "x-accel-redirect and x-sendfile cannot both be on");
		return -1;
	}
	for (size_t i = 0; i < config->trusted_proxy_count; i++) {
		struct cidr cidr;
		if (cidr_parse(config->trusted_proxies[i], &cidr) < 0) {
			snprintf(error, error_size,
				  "trusted-proxy: '%s' is not an address or CIDR (e.g. 10.0.0.0/8)",
				  config->trusted_proxies[i]);
			return -1;
		}
	}
	if (strcmp(config->error_log, "off") == 0 || strcmp(config->error_log, "-") == 0) {
		/* nginx's "error_log off" quietly writes to a file named off; refuse instead. */
		snprintf(error, error_size,
			  "error-log: '%s' would be a file of that name; give a file or %s",
			  config->error_log, LOG_TARGET_STDERR);
		return -1;
	}
	if (config->etag_field != NULL && strcmp(config->etag_field, config->path_field) == 0) {
		/* The path would go out as the ETag: the body never names the path, nor may a header. */
		snprintf(error, error_size, "etag-field: '%s' is the path field; name the field "
			  "holding the content hash", config->etag_field);
		return -1;
	}
	for (size_t i = 0; i < config->cors_origin_count; i++) {
		if (check_header_value("cors-origin", config->cors_origins[i], error, error_size) < 0)
			return -1;
	}
	if (cors_check_origins(config->cors_origins, config->cors_origin_count, error,
			       error_size) < 0)
		return -1;
	if (config->cache_control != NULL &&
	    check_header_value("cache-control", config->cache_control, error, error_size) < 0)
		return -1;
	if (config->error_cache_control != NULL &&
	    check_header_value("error-cache-control", config->error_cache_control, error,
			       error_size) < 0)
		return -1;
	return config_validate_url_signing(config, error, error_size);
}

int config_validate_url_signing(const struct config *config, char *error, size_t error_size)
{
	return check_parameter_name("url-signing-parameter", config->url_signing_parameter, error,
				    error_size);
}
