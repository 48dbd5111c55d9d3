/*
 * url_token: signed, expiring track URLs in the Akamai EdgeAuth token format
 * (what the akamai-edgeauth libraries for Node, Python, Go and Java produce),
 * carried in one query parameter (__token__ by default):
 *
 *   /musicdb/<mid>/<name>?__token__=[st=START~]exp=END~acl=ACL[~id=..][~data=..]~hmac=HEX
 *
 * (ACL, for one track: /musicdb/<mid>/ and a star, the glob of its every name.)
 *
 * hmac is HMAC-SHA256, in hexadecimal, of every byte of the token before
 * "~hmac=", keyed by the bytes of a hex-encoded key. Pure: the target, the
 * keys, the time and the leeway come in, a verdict goes out; the HMAC itself
 * is OpenSSL's (libcrypto), compared in constant time.
 *
 * The grammar is strict, and written so that a regular expression says the
 * same (the shipped VCL verifies with one): the fields in the libraries'
 * order, st and exp 1 to URL_TOKEN_TIME_DIGITS_MAX decimal digits, acl
 * non-empty, id and data optional, hmac last and 64 hex digits, the whole at
 * most URL_TOKEN_MAX bytes, nothing percent-decoded. A token naming an ip= or
 * a url= (fields this check cannot honour) is malformed, so a restriction its
 * signer meant is never silently dropped.
 *
 * Scope: acl is a list of items separated by '!'; the token serves a track
 * when one item is "/musicdb/<mid>/" "*" for that track's mid (compared without
 * regard to ASCII case, as the VCL does): every :param and ?download of it,
 * and no other track.
 */
#ifndef MUSICD_URL_TOKEN_H
#define MUSICD_URL_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/route.h"

/* The query parameter a token travels in unless --url-signing-parameter says otherwise. */
#define URL_TOKEN_DEFAULT_PARAMETER "__token__"
/* The longest token accepted, in bytes. */
#define URL_TOKEN_MAX 2048
/* st= and exp= hold 1 to this many decimal digits (seconds since the Unix epoch). */
#define URL_TOKEN_TIME_DIGITS_MAX 12
/* HMAC-SHA256: 32 bytes, 64 hexadecimal digits. */
#define URL_TOKEN_HMAC_BYTES 32
#define URL_TOKEN_HMAC_HEX (2 * URL_TOKEN_HMAC_BYTES)

/* Keys: at least 32 bytes (a SHA-256 HMAC's strength), at most 256, at most 16 of them. */
#define URL_KEY_MIN 32
#define URL_KEY_MAX 256
#define URL_KEYS_MAX 16

struct evp_md_ctx_st; /* OpenSSL's EVP_MD_CTX */

/*
 * One key. inner and outer are HMAC-SHA256's two hashes with the key's pads
 * already absorbed (url_keys_prepare), so a check copies them instead of
 * keying a new HMAC (a sixth of the time); NULL until prepared, when the
 * one-shot HMAC is used. Owned by the key, released by url_keys_clear.
 */
struct url_key {
	size_t length;
	unsigned char bytes[URL_KEY_MAX];
	struct evp_md_ctx_st *inner, *outer;
};

/*
 * Every key a token may be signed with (the newest first, by convention: it
 * signs). Once prepared, the states are read-only: threads check tokens with
 * one url_keys at once.
 */
struct url_keys {
	size_t count;
	struct url_key keys[URL_KEYS_MAX];
};

/* Absorbs each key's pads into its two states: 0, or -1 when out of memory (keys unchanged). */
int url_keys_prepare(struct url_keys *keys);

/* Frees the states and overwrites every key's bytes (a freed snapshot leaves no key behind). */
void url_keys_clear(struct url_keys *keys);

/* Why a request was refused; URL_TOKEN_VALID admits it. */
enum url_token_verdict {
	URL_TOKEN_VALID,
	URL_TOKEN_MISSING,	 /* no token parameter */
	URL_TOKEN_MALFORMED,	 /* not the grammar above, empty, too long, or given twice */
	URL_TOKEN_BAD_SIGNATURE, /* no key gives its hmac */
	URL_TOKEN_EXPIRED,	 /* exp + leeway is past */
	URL_TOKEN_NOT_YET_VALID, /* st - leeway is still to come */
	URL_TOKEN_WRONG_TRACK,	 /* its acl does not cover this track */
	URL_TOKEN_VERDICT_COUNT
};

/* The verdict in words, for the error log ("bad signature"). */
const char *url_token_verdict_words(enum url_token_verdict verdict);

/* A token that follows the grammar; pointers into the text it was parsed from. */
struct url_token {
	const char *text;
	size_t signed_length; /* the bytes the hmac covers: everything before "~hmac=" */
	bool has_start;
	int64_t start, expires; /* st (when has_start) and exp, seconds since the Unix epoch */
	const char *acl;
	size_t acl_length;
	unsigned char hmac[URL_TOKEN_HMAC_BYTES];
};

/* Parses text[0..length) by the grammar: 0 and *token filled, or -1. */
int url_token_parse(const char *text, size_t length, struct url_token *token);

/* True when one of keys gives the token's hmac; each key is tried, each compared in constant time. */
bool url_token_signed_by(const struct url_token *token, const struct url_keys *keys);

/* True when the token's acl holds "/musicdb/<mid>/" "*" (mid: 24 hex digits). */
bool url_token_covers(const struct url_token *token, const char *mid);

/*
 * The whole check of a request for track mid (lower-case, as route.h gives
 * it) carrying found (its query's token parameter, route_query_find): the
 * token parsed, its signature checked against keys, then its times against
 * now with leeway seconds each way, then its acl. The first failure is the
 * verdict.
 */
enum url_token_verdict url_token_check(const struct query_parameter *found,
				       const struct url_keys *keys, int64_t now, unsigned leeway,
				       const char *mid);

/* The acl of one track, "/musicdb/<mid>/" "*", into out (at least URL_TOKEN_ACL_SIZE bytes). */
#define URL_TOKEN_ACL_SIZE (sizeof(ROUTE_TRACK_PREFIX) + OBJECTID_HEX_LENGTH + sizeof("/*") - 1)
void url_token_track_acl(const char *mid, char out[URL_TOKEN_ACL_SIZE]);

/*
 * Signs as the EdgeAuth libraries do: "[st=START~]exp=EXPIRES~acl=ACL~hmac=HEX"
 * (st only when start >= 0) into out, NUL-terminated. Returns its length, or 0
 * when it does not fit in size bytes, acl is empty or holds a '~', or a time
 * is negative or longer than the grammar allows.
 */
size_t url_token_sign(const struct url_key *key, const char *acl, int64_t start, int64_t expires,
		      char *out, size_t size);

/*
 * url, a track's path or absolute URL ("/musicdb/<mid>/<name>[?query]",
 * "scheme://host/musicdb/..."), with parameter=<token for its track, valid
 * until expires> appended to its query, into out. Returns its length, or 0
 * when url names no track (route.h) or out is too small.
 */
size_t url_token_sign_url(const struct url_key *key, const char *url, const char *parameter,
			  int64_t expires, char *out, size_t size);

#endif
