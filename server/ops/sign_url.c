/*
 * sign_url: the keys, the clock, and url_token's signer.
 */
#include "ops/sign_url.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "config/url_keys.h"
#include "http/route.h"
#include "http/url_token.h"

/* The exit status of a command line that cannot be carried out, as for a bad option. */
#define SIGN_URL_FAILED 2

int sign_url_print(const struct config *config)
{
	char error[CONFIG_ERROR_MAX];
	char signed_url[URL_TOKEN_MAX + 2 * 4096];
	struct url_keys keys;
	int status = SIGN_URL_FAILED;
	if (config->url_signing_key_file == NULL) {
		fprintf(stderr, "musicd: --sign-url needs the keys: give --url-signing-key-file FILE "
				"(or url-signing-key-file in the --config file)\n");
		return SIGN_URL_FAILED;
	}
	if (url_keys_load(config->url_signing_key_file, &keys, error, sizeof(error)) < 0) {
		fprintf(stderr, "musicd: %s\n", error);
		return SIGN_URL_FAILED;
	}
	int64_t expires = (int64_t)time(NULL) + config->url_lifetime;
	const char *target = config->sign_url;
	size_t length;
	if (objectid_is_valid(target, strlen(target))) {
		char mid[OBJECTID_HEX_LENGTH + 1], acl[URL_TOKEN_ACL_SIZE];
		for (size_t i = 0; i <= OBJECTID_HEX_LENGTH; i++)
			mid[i] = target[i] >= 'A' && target[i] <= 'F' ? (char)(target[i] - 'A' + 'a')
								      : target[i];
		url_token_track_acl(mid, acl);
		length = url_token_sign(&keys.keys[0], acl, -1, expires, signed_url,
					sizeof(signed_url));
	} else {
		length = url_token_sign_url(&keys.keys[0], target, config->url_signing_parameter,
					    expires, signed_url, sizeof(signed_url));
	}
	if (length == 0) {
		fprintf(stderr,
			"musicd: --sign-url: '%.256s' is neither a track's URL or path "
			"(" ROUTE_TRACK_PREFIX "<24 hex digits>/<name>) nor an id (24 hex digits), or is too long\n",
			target);
	} else {
		printf("%s\n", signed_url);
		status = 0;
	}
	url_keys_clear(&keys);
	return status;
}
