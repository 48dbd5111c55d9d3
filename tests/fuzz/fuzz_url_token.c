/*
 * Fuzzes the signed-URL check and what keeps tokens out of the logs: any
 * target gets a verdict (never VALID without the key's hmac); a token that
 * parses has its hmac as its last 70 bytes and its acl inside it; prepared
 * keys judge as the one-shot HMAC does; the signer's token for the target's track is valid there; redaction is
 * bounded, idempotent, and leaves a text without tokens as it was; and any
 * key file text either gives 1 to 16 keys of 32 to 256 bytes or a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/url_keys.h"
#include "http/route.h"
#include "http/url_redact.h"
#include "http/url_token.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The key prepared as musicd prepares it (kept to the end), and unprepared (one-shot HMAC). */
static const struct url_keys *fuzz_keys(void)
{
	static struct url_keys keys;
	if (keys.count == 0) {
		keys.count = 1;
		keys.keys[0].length = 32;
		memcpy(keys.keys[0].bytes, "musicd-example-key-0123456789abc", 32);
		if (url_keys_prepare(&keys) < 0)
			abort();
	}
	return &keys;
}

static const struct url_keys *unprepared_keys(void)
{
	static struct url_keys keys = {.count = 1,
				       .keys = {{.length = 32,
						 .bytes = "musicd-example-key-0123456789abc"}}};
	return &keys;
}

static void check_parse(const char *text, size_t length)
{
	struct url_token token;
	if (url_token_parse(text, length, &token) < 0)
		return;
	if (token.signed_length + 70 != length || memcmp(text + token.signed_length, "~hmac=", 6) ||
	    token.acl < text || token.acl + token.acl_length > text + token.signed_length ||
	    token.acl_length == 0 || memchr(token.acl, '~', token.acl_length) != NULL)
		abort();
}

/* The whole check of a request for target, as musicd makes it (route.h finds the token). */
static enum url_token_verdict check_target(const char *target, const char *name,
					   const struct url_keys *keys, int64_t now, unsigned leeway,
					   const char *mid)
{
	struct route route = route_parse(target);
	struct query_parameter token = route_query_find(&route, name);
	return url_token_check(&token, keys, now, leeway, mid);
}

static void check_verdict(const char *target)
{
	struct route route = route_parse(target);
	const char *mid = route.kind == ROUTE_TRACK ? route.mid : "65a1b2c3d4e5f60718293a4b";
	enum url_token_verdict verdict =
		check_target(target, "__token__", fuzz_keys(), 1800000000, 5, mid);
	if (verdict >= URL_TOKEN_VERDICT_COUNT)
		abort();
	struct url_keys none = {0};
	if (check_target(target, "__token__", &none, 1800000000, 5, mid) == URL_TOKEN_VALID ||
	    check_target(target, "__token__", unprepared_keys(), 1800000000, 5, mid) != verdict)
		abort();
	if (route.kind != ROUTE_TRACK || strlen(target) > 2048)
		return;
	/* The signer's URL for this track is valid for it, whatever else the query holds. */
	char signed_url[8192];
	if (url_token_sign_url(&fuzz_keys()->keys[0], target, "__token__", 1800000060,
			       signed_url, sizeof(signed_url)) > 0 &&
	    route_query_find(&route, "__token__").presence == QUERY_ABSENT &&
	    check_target(signed_url, "__token__", fuzz_keys(), 1800000000, 0, route.mid) !=
		    URL_TOKEN_VALID)
		abort();
}

static void check_redaction(const char *text)
{
	char once[1024], twice[1024];
	size_t length = url_redact(text, "__token__", once, sizeof(once));
	if (length >= sizeof(once) || strlen(once) != length)
		abort();
	url_redact(once, "__token__", twice, sizeof(twice));
	if (strcmp(once, twice) != 0)
		abort();
	if (strstr(text, "hmac=") == NULL && strstr(text, "__token__") == NULL &&
	    strncmp(once, text, length) != 0)
		abort();
}

static void check_keys(const char *text, size_t length)
{
	struct url_keys keys;
	char error[256] = "";
	if (url_keys_parse(text, length, &keys, error, sizeof(error)) < 0) {
		if (error[0] == '\0' || keys.count != 0)
			abort();
		return;
	}
	if (keys.count < 1 || keys.count > URL_KEYS_MAX)
		abort();
	for (size_t i = 0; i < keys.count; i++) {
		if (keys.keys[i].length < URL_KEY_MIN || keys.keys[i].length > URL_KEY_MAX)
			abort();
	}
	url_keys_clear(&keys);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = strndup((const char *)data, size);
	if (text == NULL)
		return 0;
	check_parse(text, strlen(text));
	check_verdict(text);
	check_redaction(text);
	check_keys((const char *)data, size);
	free(text);
	return 0;
}
