/*
 * url_token: the EdgeAuth grammar read field by field in its one order, the
 * HMAC by OpenSSL, and the checks in the order that tells a forger the least:
 * the signature before anything the token claims.
 */
#include "http/url_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#include "http/chars.h"
#include "http/route.h"

#define FIELD_SEPARATOR '~'
#define ACL_SEPARATOR '!'
#define HMAC_FIELD "~hmac="
#define TRACK_ACL_SUFFIX "/*"

static const char *const verdict_words[URL_TOKEN_VERDICT_COUNT] = {
	[URL_TOKEN_VALID] = "valid",
	[URL_TOKEN_MISSING] = "missing",
	[URL_TOKEN_MALFORMED] = "malformed",
	[URL_TOKEN_BAD_SIGNATURE] = "bad signature",
	[URL_TOKEN_EXPIRED] = "expired",
	[URL_TOKEN_NOT_YET_VALID] = "not yet valid",
	[URL_TOKEN_WRONG_TRACK] = "wrong track",
};

const char *url_token_verdict_words(enum url_token_verdict verdict)
{
	return verdict < URL_TOKEN_VERDICT_COUNT ? verdict_words[verdict] : "malformed";
}

/* Cursor over the token text: each field is taken off the front. */
struct reader {
	const char *at, *end;
};

/* Takes "name=" off the front; false (nothing taken) when the text does not start with it. */
static bool take_name(struct reader *r, const char *name)
{
	size_t length = strlen(name);
	if ((size_t)(r->end - r->at) < length || memcmp(r->at, name, length) != 0)
		return false;
	r->at += length;
	return true;
}

/* The field's value: up to the next '~' (or the end). */
static size_t value_length(const struct reader *r)
{
	const char *separator = memchr(r->at, FIELD_SEPARATOR, (size_t)(r->end - r->at));
	return (size_t)((separator ? separator : r->end) - r->at);
}

/* Takes a time's digits and the '~' after them. */
static bool take_time(struct reader *r, int64_t *out)
{
	size_t length = value_length(r);
	if (length == 0 || length > URL_TOKEN_TIME_DIGITS_MAX || r->at + length == r->end)
		return false;
	int64_t value = 0;
	for (size_t i = 0; i < length; i++) {
		if (r->at[i] < '0' || r->at[i] > '9')
			return false;
		value = value * 10 + (r->at[i] - '0');
	}
	*out = value;
	r->at += length + 1;
	return true;
}

/* Takes an optional "name=value~" field (id, data); false only if it is there but cut. */
static bool take_optional(struct reader *r, const char *name)
{
	struct reader probe = *r;
	if (!take_name(&probe, name))
		return true;
	size_t length = value_length(&probe);
	if (probe.at + length == probe.end)
		return false;
	r->at = probe.at + length + 1;
	return true;
}

int url_token_parse(const char *text, size_t length, struct url_token *token)
{
	const size_t hmac_field = strlen(HMAC_FIELD) + URL_TOKEN_HMAC_HEX;
	if (length > URL_TOKEN_MAX || length < hmac_field)
		return -1;
	memset(token, 0, sizeof(*token));
	token->text = text;
	token->signed_length = length - hmac_field;
	const char *hmac = text + token->signed_length;
	if (memcmp(hmac, HMAC_FIELD, strlen(HMAC_FIELD)) != 0)
		return -1;
	hmac += strlen(HMAC_FIELD);
	for (size_t i = 0; i < URL_TOKEN_HMAC_BYTES; i++) {
		int high = chars_hex_value((unsigned char)hmac[2 * i]),
		    low = chars_hex_value((unsigned char)hmac[2 * i + 1]);
		if (high < 0 || low < 0)
			return -1;
		token->hmac[i] = (unsigned char)(high * 16 + low);
	}

	/* The fields before the hmac, each ending in the '~' that begins the next one. */
	struct reader r = {text, text + token->signed_length + 1};
	if (take_name(&r, "st=")) {
		if (!take_time(&r, &token->start))
			return -1;
		token->has_start = true;
	}
	if (!take_name(&r, "exp=") || !take_time(&r, &token->expires) || !take_name(&r, "acl="))
		return -1;
	token->acl = r.at;
	token->acl_length = value_length(&r);
	if (token->acl_length == 0 || r.at + token->acl_length == r.end)
		return -1;
	r.at += token->acl_length + 1;
	if (!take_optional(&r, "id=") || !take_optional(&r, "data="))
		return -1;
	return r.at == r.end ? 0 : -1;
}

/* SHA-256's block: a key longer than it is hashed first (RFC 2104). */
#define HMAC_BLOCK 64

static void free_states(struct url_key *key)
{
	EVP_MD_CTX_free(key->inner);
	EVP_MD_CTX_free(key->outer);
	key->inner = key->outer = NULL;
}

/* A SHA-256 state that has absorbed the key's block XOR pad. */
static EVP_MD_CTX *padded_state(const unsigned char block[HMAC_BLOCK], unsigned char pad)
{
	unsigned char padded[HMAC_BLOCK];
	for (size_t i = 0; i < HMAC_BLOCK; i++)
		padded[i] = block[i] ^ pad;
	EVP_MD_CTX *state = EVP_MD_CTX_new();
	if (state != NULL && (EVP_DigestInit_ex(state, EVP_sha256(), NULL) != 1 ||
			      EVP_DigestUpdate(state, padded, HMAC_BLOCK) != 1)) {
		EVP_MD_CTX_free(state);
		state = NULL;
	}
	OPENSSL_cleanse(padded, sizeof(padded));
	return state;
}

int url_keys_prepare(struct url_keys *keys)
{
	for (size_t i = 0; i < keys->count; i++) {
		struct url_key *key = &keys->keys[i];
		unsigned char block[HMAC_BLOCK] = {0};
		unsigned int hashed = 0;
		if (key->length <= HMAC_BLOCK)
			memcpy(block, key->bytes, key->length);
		else if (EVP_Digest(key->bytes, key->length, block, &hashed, EVP_sha256(), NULL) != 1)
			goto fail;
		free_states(key);
		key->inner = padded_state(block, 0x36);
		key->outer = padded_state(block, 0x5c);
		OPENSSL_cleanse(block, sizeof(block));
		if (key->inner == NULL || key->outer == NULL)
			goto fail;
	}
	return 0;
fail:
	for (size_t i = 0; i < keys->count; i++)
		free_states(&keys->keys[i]);
	return -1;
}

void url_keys_clear(struct url_keys *keys)
{
	for (size_t i = 0; i < URL_KEYS_MAX; i++)
		free_states(&keys->keys[i]);
	OPENSSL_cleanse(keys, sizeof(*keys));
}

/* HMAC-SHA256 of text by key into out: from its prepared states, else one-shot. 0 or -1. */
static int key_hmac(const struct url_key *key, const void *text, size_t length,
		    unsigned char out[URL_TOKEN_HMAC_BYTES])
{
	unsigned int out_length = 0;
	if (key->inner == NULL || key->outer == NULL)
		return HMAC(EVP_sha256(), key->bytes, (int)key->length, text, length, out,
			    &out_length) != NULL &&
			       out_length == URL_TOKEN_HMAC_BYTES
			       ? 0
			       : -1;
	unsigned char inner[URL_TOKEN_HMAC_BYTES];
	int status = -1;
	EVP_MD_CTX *work = EVP_MD_CTX_new();
	if (work != NULL && EVP_MD_CTX_copy_ex(work, key->inner) == 1 &&
	    EVP_DigestUpdate(work, text, length) == 1 &&
	    EVP_DigestFinal_ex(work, inner, &out_length) == 1 &&
	    out_length == URL_TOKEN_HMAC_BYTES && EVP_MD_CTX_copy_ex(work, key->outer) == 1 &&
	    EVP_DigestUpdate(work, inner, sizeof(inner)) == 1 &&
	    EVP_DigestFinal_ex(work, out, &out_length) == 1 && out_length == URL_TOKEN_HMAC_BYTES)
		status = 0;
	EVP_MD_CTX_free(work);
	return status;
}

bool url_token_signed_by(const struct url_token *token, const struct url_keys *keys)
{
	bool signed_by_one = false;
	for (size_t i = 0; i < keys->count; i++) {
		unsigned char expected[URL_TOKEN_HMAC_BYTES];
		if (key_hmac(&keys->keys[i], token->text, token->signed_length, expected) < 0)
			continue;
		/* Every key is tried: how long this takes says nothing about which one matched. */
		signed_by_one |= CRYPTO_memcmp(expected, token->hmac, URL_TOKEN_HMAC_BYTES) == 0;
	}
	return signed_by_one;
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

bool url_token_covers(const struct url_token *token, const char *mid)
{
	char wanted[URL_TOKEN_ACL_SIZE];
	url_token_track_acl(mid, wanted);
	size_t wanted_length = strlen(wanted);
	const char *item = token->acl, *end = token->acl + token->acl_length;
	while (item <= end) {
		const char *separator = memchr(item, ACL_SEPARATOR, (size_t)(end - item));
		size_t length = (size_t)((separator ? separator : end) - item);
		if (length == wanted_length) {
			size_t i = 0;
			while (i < length && lower(item[i]) == lower(wanted[i]))
				i++;
			if (i == length)
				return true;
		}
		item += length + 1;
	}
	return false;
}

enum url_token_verdict url_token_check(const struct query_parameter *found,
				       const struct url_keys *keys, int64_t now, unsigned leeway,
				       const char *mid)
{
	struct url_token token;
	switch (found->presence) {
	case QUERY_ABSENT:
		return URL_TOKEN_MISSING;
	case QUERY_TWICE:
		return URL_TOKEN_MALFORMED;
	case QUERY_ONCE:
		break;
	}
	if (url_token_parse(found->value, found->length, &token) < 0)
		return URL_TOKEN_MALFORMED;
	if (!url_token_signed_by(&token, keys))
		return URL_TOKEN_BAD_SIGNATURE;
	if (now > token.expires + (int64_t)leeway)
		return URL_TOKEN_EXPIRED;
	if (token.has_start && token.start > now + (int64_t)leeway)
		return URL_TOKEN_NOT_YET_VALID;
	if (!url_token_covers(&token, mid))
		return URL_TOKEN_WRONG_TRACK;
	return URL_TOKEN_VALID;
}

void url_token_track_acl(const char *mid, char out[URL_TOKEN_ACL_SIZE])
{
	snprintf(out, URL_TOKEN_ACL_SIZE, "%s%.*s%s", ROUTE_TRACK_PREFIX, OBJECTID_HEX_LENGTH, mid,
		 TRACK_ACL_SUFFIX);
}

/* A time the grammar accepts: 0 to 10^URL_TOKEN_TIME_DIGITS_MAX - 1. */
static bool time_fits(int64_t seconds)
{
	int64_t limit = 1;
	for (int i = 0; i < URL_TOKEN_TIME_DIGITS_MAX; i++)
		limit *= 10;
	return seconds >= 0 && seconds < limit;
}

size_t url_token_sign(const struct url_key *key, const char *acl, int64_t start, int64_t expires,
		      char *out, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	if (acl[0] == '\0' || strchr(acl, FIELD_SEPARATOR) != NULL || !time_fits(expires) ||
	    (start >= 0 && !time_fits(start)))
		return 0;
	int written = start >= 0 ? snprintf(out, size, "st=%lld~exp=%lld~acl=%s", (long long)start,
					    (long long)expires, acl)
				 : snprintf(out, size, "exp=%lld~acl=%s", (long long)expires, acl);
	if (written < 0 || (size_t)written + strlen(HMAC_FIELD) + URL_TOKEN_HMAC_HEX >= size)
		return 0;
	unsigned char digest[URL_TOKEN_HMAC_BYTES];
	if (key_hmac(key, out, (size_t)written, digest) < 0)
		return 0;
	size_t length = (size_t)written;
	memcpy(out + length, HMAC_FIELD, strlen(HMAC_FIELD));
	length += strlen(HMAC_FIELD);
	for (unsigned i = 0; i < URL_TOKEN_HMAC_BYTES; i++) {
		out[length++] = hex[digest[i] >> 4];
		out[length++] = hex[digest[i] & 0xf];
	}
	out[length] = '\0';
	return length;
}

size_t url_token_sign_url(const struct url_key *key, const char *url, const char *parameter,
			  int64_t expires, char *out, size_t size)
{
	/* The path of an absolute URL: after "scheme://authority". */
	const char *path = url;
	const char *scheme_end = strstr(url, "://");
	if (scheme_end != NULL && strcspn(url, "/?#") > (size_t)(scheme_end - url))
		path = scheme_end + 3 + strcspn(scheme_end + 3, "/?#");
	struct route route = route_parse(path);
	if (route.kind != ROUTE_TRACK)
		return 0;
	char acl[URL_TOKEN_ACL_SIZE], token[URL_TOKEN_MAX + 1];
	url_token_track_acl(route.mid, acl);
	if (url_token_sign(key, acl, -1, expires, token, sizeof(token)) == 0)
		return 0;
	/*
	 * A new parameter at the query's end (before a fragment): after its '?' when it
	 * is empty, after an '&' that ends it.
	 */
	const char *query_end = route.query != NULL ? route.query + route.query_length
						    : path + route.path_length;
	const char *separator = route.query == NULL					 ? "?"
				: route.query_length == 0 || query_end[-1] == '&' ? ""
										 : "&";
	int written = snprintf(out, size, "%.*s%s%s=%s%s", (int)(query_end - url), url, separator,
			       parameter, token, query_end);
	return written < 0 || (size_t)written >= size ? 0 : (size_t)written;
}
