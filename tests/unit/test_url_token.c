/*
 * Unit tests for server/http/url_token.h: signed-URL tokens in the Akamai
 * EdgeAuth format. The known answers were made by the akamai-edgeauth npm
 * package (0.2.0) from the key below; the integration tests sign with that
 * package and an independent Python implementation live. A token the
 * libraries make is valid for its track, inside its times; any byte changed,
 * any cut, another track, a time outside (by more than the leeway), a field
 * this check cannot honour or a length past the bounds is refused, for the
 * reason it names; the signer writes what the libraries write.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http/route.h"
#include "http/url_token.h"

/* "musicd-example-key-0123456789abc", hex-encoded: the key of the worked example
 * in docs/signed-urls-and-limits.md. */
#define KEY_HEX "6d75736963642d6578616d706c652d6b65792d30313233343536373839616263"
#define MID "65a1b2c3d4e5f60718293a4b"
#define OTHER_MID "65a1b2c3d4e5f60718293a4c"
#define START 1767225600   /* 2026-01-01T00:00:00Z */
#define EXPIRES 4102444800 /* 2100-01-01T00:00:00Z */
#define INSIDE 1800000000  /* between the two */
#define LEEWAY 5

/* By the npm package: st, exp and acl of the guide's worked example. */
#define EXAMPLE_TOKEN                                                                          \
	"st=1767225600~exp=4102444800~acl=/musicdb/" MID "/*"                                 \
	"~hmac=b69993d94469661840094239e71936ec80d8df523b477cacbc7526fa36b1726b"
/* By the npm package: no st. */
#define NO_START_TOKEN                                                                         \
	"exp=4102444800~acl=/musicdb/" MID "/*"                                               \
	"~hmac=7f034e1c74258acfd0220a470e03e1f1c8e9da1574996ec571df80b8649aae04"
/* By the npm package: two tracks' acls, a session id and a payload. */
#define TWO_TRACKS_TOKEN                                                                       \
	"exp=4102444800~acl=/musicdb/" MID "/*!/musicdb/" OTHER_MID "/*~id=s1~data=p"          \
	"~hmac=5518c2fc9bb1c69ab9c177d57acadf42214f7d4fd229c8a5341c40eba3042d6a"
/* By the npm package: bound to a client address, which this check cannot honour. */
#define IP_TOKEN                                                                               \
	"ip=1.2.3.4~exp=4102444800~acl=/musicdb/" MID "/*"                                    \
	"~hmac=fdd838d8d5470164f86677fb5a8c149616526f79a56ecc295d4566e3ce8d5311"

#define PATH "/musicdb/" MID "/song.mp3"

/* Keys from hex, prepared as musicd prepares them (each set made once, kept to the end). */
static const struct url_keys *keys_of(struct url_keys *keys, const char *const *hex, size_t count)
{
	if (keys->count > 0)
		return keys;
	for (size_t k = 0; k < count; k++) {
		struct url_key *key = &keys->keys[keys->count++];
		key->length = strlen(hex[k]) / 2;
		for (size_t i = 0; i < key->length; i++) {
			unsigned byte;
			sscanf(hex[k] + 2 * i, "%2x", &byte);
			key->bytes[i] = (unsigned char)byte;
		}
	}
	assert_int_equal(url_keys_prepare(keys), 0);
	return keys;
}

static const struct url_keys *example_keys(void)
{
	static struct url_keys keys;
	static const char *const hex[] = {KEY_HEX};
	return keys_of(&keys, hex, 1);
}

/* The whole check of a request for target, its token in the query parameter name. */
static enum url_token_verdict check_target(const char *target, const char *name,
					   const struct url_keys *keys, int64_t now, unsigned leeway,
					   const char *mid)
{
	struct route route = route_parse(target);
	struct query_parameter token = route_query_find(&route, name);
	return url_token_check(&token, keys, now, leeway, mid);
}

static enum url_token_verdict check_at(const char *target, int64_t now)
{
	return check_target(target, "__token__", example_keys(), now, LEEWAY, MID);
}

static enum url_token_verdict check(const char *target)
{
	return check_at(target, INSIDE);
}

/* PATH?__token__=token, in a buffer of the caller's. */
static const char *with_token(char *buffer, size_t size, const char *token)
{
	snprintf(buffer, size, "%s?__token__=%s", PATH, token);
	return buffer;
}

/* --- Signing: what the libraries write --- */

static void test_signing_with_st_writes_the_npm_packages_token(void **state)
{
	(void)state;
	const struct url_keys *keys = example_keys();
	char token[URL_TOKEN_MAX];
	size_t length = url_token_sign(&keys->keys[0], "/musicdb/" MID "/*", START, EXPIRES, token,
				       sizeof(token));
	assert_string_equal(token, EXAMPLE_TOKEN);
	assert_int_equal(length, strlen(EXAMPLE_TOKEN));
}

static void test_signing_without_st_writes_the_npm_packages_token(void **state)
{
	(void)state;
	const struct url_keys *keys = example_keys();
	char token[URL_TOKEN_MAX];
	url_token_sign(&keys->keys[0], "/musicdb/" MID "/*", -1, EXPIRES, token, sizeof(token));
	assert_string_equal(token, NO_START_TOKEN);
}

static void test_signing_refuses_what_the_grammar_cannot_hold(void **state)
{
	(void)state;
	const struct url_keys *keys = example_keys();
	char token[URL_TOKEN_MAX];
	assert_int_equal(url_token_sign(&keys->keys[0], "/a~b", -1, EXPIRES, token, sizeof(token)), 0);
	assert_int_equal(url_token_sign(&keys->keys[0], "", -1, EXPIRES, token, sizeof(token)), 0);
	assert_int_equal(url_token_sign(&keys->keys[0], "/x", -1, 1000000000000LL, token,
					sizeof(token)),
			 0);
	assert_int_equal(url_token_sign(&keys->keys[0], "/x", -1, EXPIRES, token, 80), 0);
}

static void test_signing_a_url_appends_the_parameter_to_its_query(void **state)
{
	(void)state;
	const struct url_keys *keys = example_keys();
	char out[4096];
	assert_true(url_token_sign_url(&keys->keys[0], PATH, "__token__", EXPIRES, out, sizeof(out)) >
		    0);
	assert_string_equal(out, PATH "?__token__=" NO_START_TOKEN);
	url_token_sign_url(&keys->keys[0], "https://music.example" PATH "?download", "t", EXPIRES,
			   out, sizeof(out));
	assert_string_equal(out, "https://music.example" PATH "?download&t=" NO_START_TOKEN);
	url_token_sign_url(&keys->keys[0], "http://h:8080" PATH "?#x", "t", EXPIRES, out,
			   sizeof(out));
	assert_string_equal(out, "http://h:8080" PATH "?t=" NO_START_TOKEN "#x");
}

static void test_signing_a_url_of_an_upper_case_id_signs_its_lower_case_acl(void **state)
{
	(void)state;
	const struct url_keys *keys = example_keys();
	char out[4096];
	url_token_sign_url(&keys->keys[0], "/musicdb/65A1B2C3D4E5F60718293A4B/x.mp3", "__token__",
			   EXPIRES, out, sizeof(out));
	assert_non_null(strstr(out, "acl=/musicdb/" MID "/*~"));
}

static void test_signing_a_url_that_names_no_track_gives_nothing(void **state)
{
	(void)state;
	const struct url_keys *keys = example_keys();
	char out[4096];
	assert_int_equal(url_token_sign_url(&keys->keys[0], "/healthz", "t", EXPIRES, out,
					    sizeof(out)),
			 0);
	assert_int_equal(url_token_sign_url(&keys->keys[0], "/musicdb/123/x", "t", EXPIRES, out,
					    sizeof(out)),
			 0);
	assert_int_equal(url_token_sign_url(&keys->keys[0], PATH, "t", EXPIRES, out, 100), 0);
}

static void test_prepared_keys_sign_as_the_one_shot_hmac_at_every_length(void **state)
{
	(void)state;
	/* Around SHA-256's 64-byte block: longer keys are hashed first (RFC 2104). */
	static const size_t lengths[] = {32, 63, 64, 65, 128, 256};
	for (size_t n = 0; n < sizeof(lengths) / sizeof(lengths[0]); n++) {
		struct url_keys prepared = {.count = 1};
		struct url_key plain = {.length = lengths[n]};
		for (size_t i = 0; i < lengths[n]; i++)
			plain.bytes[i] = (unsigned char)(i * 7 + n);
		prepared.keys[0] = plain;
		assert_int_equal(url_keys_prepare(&prepared), 0);
		char one[URL_TOKEN_MAX], other[URL_TOKEN_MAX];
		assert_true(url_token_sign(&plain, "/musicdb/" MID "/*", START, EXPIRES, one,
					   sizeof(one)) > 0);
		assert_true(url_token_sign(&prepared.keys[0], "/musicdb/" MID "/*", START, EXPIRES,
					   other, sizeof(other)) > 0);
		assert_string_equal(one, other);
		url_keys_clear(&prepared);
		assert_null(prepared.keys[0].inner);
	}
}

#define THREADS 4
#define CHECKS_PER_THREAD 2000

static void *check_many(void *arg)
{
	(void)arg;
	for (int i = 0; i < CHECKS_PER_THREAD; i++) {
		const char *target = i % 2 ? PATH "?__token__=" EXAMPLE_TOKEN
					   : PATH "?__token__=" NO_START_TOKEN;
		if (check_target(target, "__token__", example_keys(), INSIDE, 0, MID) !=
		    URL_TOKEN_VALID)
			return (void *)1;
	}
	return NULL;
}

static void test_workers_check_tokens_with_one_prepared_set_at_once(void **state)
{
	(void)state;
	pthread_t threads[THREADS];
	example_keys(); /* prepared before the threads, as a snapshot is before requests */
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&threads[i], NULL, check_many, NULL), 0);
	for (int i = 0; i < THREADS; i++) {
		void *failed;
		assert_int_equal(pthread_join(threads[i], &failed), 0);
		assert_null(failed);
	}
}

/* --- Tokens the libraries make are valid --- */

static void test_the_worked_example_is_valid_for_its_track(void **state)
{
	(void)state;
	char target[4096];
	assert_int_equal(check(with_token(target, sizeof(target), EXAMPLE_TOKEN)), URL_TOKEN_VALID);
}

static void test_a_token_serves_every_name_and_download_of_its_track(void **state)
{
	(void)state;
	assert_int_equal(check("/musicdb/" MID "/other.ogg?__token__=" EXAMPLE_TOKEN),
			 URL_TOKEN_VALID);
	assert_int_equal(check("/musicdb/" MID "/x?download&__token__=" EXAMPLE_TOKEN "&v=2"),
			 URL_TOKEN_VALID);
}

static void test_a_token_without_st_is_valid(void **state)
{
	(void)state;
	char target[4096];
	assert_int_equal(check(with_token(target, sizeof(target), NO_START_TOKEN)), URL_TOKEN_VALID);
}

static void test_a_token_with_several_acls_an_id_and_data_serves_each_track(void **state)
{
	(void)state;
	char target[4096];
	const struct url_keys *keys = example_keys();
	with_token(target, sizeof(target), TWO_TRACKS_TOKEN);
	assert_int_equal(check_target(target, "__token__", keys, INSIDE, 0, MID),
			 URL_TOKEN_VALID);
	assert_int_equal(check_target(target, "__token__", keys, INSIDE, 0, OTHER_MID),
			 URL_TOKEN_VALID);
	assert_int_equal(check_target(target, "__token__", keys, INSIDE, 0,
					 "65a1b2c3d4e5f60718293a4d"),
			 URL_TOKEN_WRONG_TRACK);
}

static void test_an_upper_case_hmac_is_the_same_hmac(void **state)
{
	(void)state;
	char token[] = EXAMPLE_TOKEN, target[4096];
	for (char *c = strstr(token, "~hmac=") + 6; *c; c++)
		if (*c >= 'a' && *c <= 'f')
			*c = (char)(*c - 'a' + 'A');
	assert_int_equal(check(with_token(target, sizeof(target), token)), URL_TOKEN_VALID);
}

static void test_every_key_is_tried(void **state)
{
	(void)state;
	static const char *const rotation[] = {
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", KEY_HEX};
	static struct url_keys two;
	const struct url_keys *keys = keys_of(&two, rotation, 2);
	assert_int_equal(check_target(PATH "?__token__=" EXAMPLE_TOKEN, "__token__", keys,
					 INSIDE, 0, MID),
			 URL_TOKEN_VALID);
}

static void test_another_parameter_name_is_read_when_configured(void **state)
{
	(void)state;
	const struct url_keys *keys = example_keys();
	assert_int_equal(check_target(PATH "?t=" EXAMPLE_TOKEN, "t", keys, INSIDE, 0, MID),
			 URL_TOKEN_VALID);
	assert_int_equal(check_target(PATH "?__token__=" EXAMPLE_TOKEN, "t", keys, INSIDE, 0,
					 MID),
			 URL_TOKEN_MISSING);
}

/* --- Missing and malformed --- */

static void test_no_parameter_is_missing(void **state)
{
	(void)state;
	assert_int_equal(check(PATH), URL_TOKEN_MISSING);
	assert_int_equal(check(PATH "?download"), URL_TOKEN_MISSING);
	assert_int_equal(check(PATH "?x__token__=" EXAMPLE_TOKEN), URL_TOKEN_MISSING);
	assert_int_equal(check(PATH "?__token__x=" EXAMPLE_TOKEN), URL_TOKEN_MISSING);
}

static void test_a_token_after_the_fragment_mark_is_missing(void **state)
{
	(void)state;
	assert_int_equal(check(PATH "#?__token__=" EXAMPLE_TOKEN), URL_TOKEN_MISSING);
	assert_int_equal(check(PATH "?a#&__token__=" EXAMPLE_TOKEN), URL_TOKEN_MISSING);
}

static void test_an_empty_token_is_malformed(void **state)
{
	(void)state;
	assert_int_equal(check(PATH "?__token__="), URL_TOKEN_MALFORMED);
	assert_int_equal(check(PATH "?__token__"), URL_TOKEN_MALFORMED);
	assert_int_equal(check(PATH "?__token__&download"), URL_TOKEN_MALFORMED);
}

static void test_a_parameter_given_twice_is_malformed(void **state)
{
	(void)state;
	assert_int_equal(check(PATH "?__token__=" EXAMPLE_TOKEN "&__token__=" EXAMPLE_TOKEN),
			 URL_TOKEN_MALFORMED);
	assert_int_equal(check(PATH "?__token__=" EXAMPLE_TOKEN "&__token__"), URL_TOKEN_MALFORMED);
}

static void test_every_cut_of_a_token_is_refused(void **state)
{
	(void)state;
	const char token[] = EXAMPLE_TOKEN;
	char cut[sizeof(token)], target[4096];
	for (size_t length = 0; length < strlen(token); length++) {
		memcpy(cut, token, length);
		cut[length] = '\0';
		enum url_token_verdict verdict = check(with_token(target, sizeof(target), cut));
		if (verdict != URL_TOKEN_MALFORMED)
			fail_msg("cut to %zu bytes: verdict %s", length, url_token_verdict_words(verdict));
	}
}

static void test_every_byte_changed_is_refused(void **state)
{
	(void)state;
	static const char replacements[] = "0a9Z~=!*/&x";
	char token[] = EXAMPLE_TOKEN, target[4096];
	for (size_t i = 0; i < strlen(token); i++) {
		for (const char *r = replacements; *r; r++) {
			char kept = token[i];
			if (*r == kept || (kept >= 'a' && kept <= 'f' && *r == kept - 'a' + 'A'))
				continue;
			token[i] = *r;
			enum url_token_verdict verdict = check(with_token(target, sizeof(target), token));
			/* '&' ends the value early: the token is cut, so malformed too. */
			if (verdict == URL_TOKEN_VALID)
				fail_msg("byte %zu '%c' -> '%c' was accepted", i, kept, *r);
			token[i] = kept;
		}
	}
}

static void test_a_changed_claim_is_a_bad_signature(void **state)
{
	(void)state;
	/* A later exp, the other track, no st: each a token that parses, signed for none of it. */
	assert_int_equal(check(PATH "?__token__=st=1767225600~exp=4102444801~acl=/musicdb/" MID
				    "/*~hmac=b69993d94469661840094239e71936ec80d8df523b477cacbc7526fa36b1726b"),
			 URL_TOKEN_BAD_SIGNATURE);
	assert_int_equal(check(PATH "?__token__=exp=4102444800~acl=/musicdb/" MID
				    "/*~hmac=b69993d94469661840094239e71936ec80d8df523b477cacbc7526fa36b1726b"),
			 URL_TOKEN_BAD_SIGNATURE);
}

static void test_the_signature_is_checked_before_the_times(void **state)
{
	(void)state;
	/* Unsigned and expired: a forger learns nothing about the times. */
	assert_int_equal(check(PATH "?__token__=exp=1~acl=/musicdb/" MID
				    "/*~hmac=0000000000000000000000000000000000000000000000000000000000000000"),
			 URL_TOKEN_BAD_SIGNATURE);
}

static void test_no_key_signs_nothing(void **state)
{
	(void)state;
	const struct url_keys none = {0};
	assert_int_equal(check_target(PATH "?__token__=" EXAMPLE_TOKEN, "__token__", &none,
					 INSIDE, 0, MID),
			 URL_TOKEN_BAD_SIGNATURE);
}

/* A well-formed hmac (NO_START_TOKEN's) after other fields. */
#define SOME_HMAC "~hmac=7f034e1c74258acfd0220a470e03e1f1c8e9da1574996ec571df80b8649aae04"

static void assert_each_malformed(const char *const *targets, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		enum url_token_verdict verdict = check(targets[i]);
		if (verdict != URL_TOKEN_MALFORMED)
			fail_msg("%s: %s", targets[i], url_token_verdict_words(verdict));
	}
}

static void test_fields_this_check_cannot_honour_are_malformed(void **state)
{
	(void)state;
	static const char *const targets[] = {
		PATH "?__token__=" IP_TOKEN,
		PATH "?__token__=exp=4102444800~url=/x" SOME_HMAC,
	};
	assert_each_malformed(targets, sizeof(targets) / sizeof(targets[0]));
}

static void test_fields_out_of_the_libraries_order_are_malformed(void **state)
{
	(void)state;
	static const char *const targets[] = {
		PATH "?__token__=acl=/musicdb/" MID "/*~exp=4102444800" SOME_HMAC,
		PATH "?__token__=exp=4102444800~st=1~acl=/musicdb/" MID "/*" SOME_HMAC,
		PATH "?__token__=exp=4102444800~acl=/musicdb/" MID "/*~data=p~id=s" SOME_HMAC,
	};
	assert_each_malformed(targets, sizeof(targets) / sizeof(targets[0]));
}

static void test_absurd_lengths_are_malformed(void **state)
{
	(void)state;
	/* Times past the grammar's 12 digits, an hmac of 63 and 65 digits, a token past the bound. */
	static const char *const targets[] = {
		PATH "?__token__=exp=0004102444800~acl=/musicdb/" MID "/*" SOME_HMAC,
		PATH "?__token__=exp=4102444800~acl=/musicdb/" MID "/*" SOME_HMAC "4",
		PATH "?__token__=exp=4102444800~acl=/musicdb/" MID "/*"
		     "~hmac=7f034e1c74258acfd0220a470e03e1f1c8e9da1574996ec571df80b8649aae0",
	};
	assert_each_malformed(targets, sizeof(targets) / sizeof(targets[0]));
	size_t size = URL_TOKEN_MAX + 256;
	char *target = malloc(size);
	assert_non_null(target);
	int prefix = snprintf(target, size, "%s?__token__=exp=4102444800~acl=/musicdb/%s/*", PATH,
			      MID);
	memset(target + prefix, '!', size - (size_t)prefix);
	strcpy(target + size - 72, SOME_HMAC);
	assert_int_equal(check(target), URL_TOKEN_MALFORMED);
	free(target);
}

static void test_twelve_digit_times_are_read(void **state)
{
	(void)state;
	struct url_token token;
	const char text[] = "st=000000000001~exp=999999999999~acl=/a"
			    "~hmac=7f034e1c74258acfd0220a470e03e1f1c8e9da1574996ec571df80b8649aae04";
	assert_int_equal(url_token_parse(text, strlen(text), &token), 0);
	assert_true(token.has_start);
	assert_int_equal(token.start, 1);
	assert_int_equal(token.expires, 999999999999LL);
	assert_int_equal(token.signed_length, strlen(text) - 70);
}

/* --- Times and scope --- */

static void test_a_token_is_valid_until_its_exp_plus_the_leeway(void **state)
{
	(void)state;
	char target[4096];
	with_token(target, sizeof(target), EXAMPLE_TOKEN);
	assert_int_equal(check_at(target, EXPIRES + LEEWAY), URL_TOKEN_VALID);
	assert_int_equal(check_at(target, EXPIRES + LEEWAY + 1), URL_TOKEN_EXPIRED);
}

static void test_a_token_is_valid_from_its_st_less_the_leeway(void **state)
{
	(void)state;
	char target[4096];
	with_token(target, sizeof(target), EXAMPLE_TOKEN);
	assert_int_equal(check_at(target, START - LEEWAY), URL_TOKEN_VALID);
	assert_int_equal(check_at(target, START - LEEWAY - 1), URL_TOKEN_NOT_YET_VALID);
}

static void test_without_leeway_the_times_are_exact(void **state)
{
	(void)state;
	const struct url_keys *keys = example_keys();
	const char *target = PATH "?__token__=" EXAMPLE_TOKEN;
	assert_int_equal(check_target(target, "__token__", keys, START - 1, 0, MID),
			 URL_TOKEN_NOT_YET_VALID);
	assert_int_equal(check_target(target, "__token__", keys, EXPIRES + 1, 0, MID),
			 URL_TOKEN_EXPIRED);
}

static void test_another_tracks_token_is_the_wrong_track(void **state)
{
	(void)state;
	const struct url_keys *keys = example_keys();
	assert_int_equal(check_target("/musicdb/" OTHER_MID "/x?__token__=" EXAMPLE_TOKEN,
					 "__token__", keys, INSIDE, 0, OTHER_MID),
			 URL_TOKEN_WRONG_TRACK);
}

static void test_acls_that_only_resemble_the_tracks_cover_nothing(void **state)
{
	(void)state;
	const struct url_keys *keys = example_keys();
	static const char *const acls[] = {
		"/musicdb/*", "/*", "/musicdb/" MID "/", "/musicdb/" MID "/**", "/musicdb/" MID,
		"/musicdb/" MID "/song.mp3", "musicdb/" MID "/*", "/musicdb//" MID "/*",
		"/musicdb/" MID "/*x", "x/musicdb/" MID "/*", "!",
	};
	for (size_t i = 0; i < sizeof(acls) / sizeof(acls[0]); i++) {
		char token[URL_TOKEN_MAX], target[4096];
		url_token_sign(&keys->keys[0], acls[i], -1, EXPIRES, token, sizeof(token));
		enum url_token_verdict verdict =
			check_target(with_token(target, sizeof(target), token), "__token__", keys,
					INSIDE, 0, MID);
		if (verdict != URL_TOKEN_WRONG_TRACK)
			fail_msg("acl %s: %s", acls[i], url_token_verdict_words(verdict));
	}
}

static void test_the_acl_is_compared_without_regard_to_case(void **state)
{
	(void)state;
	const struct url_keys *keys = example_keys();
	char token[URL_TOKEN_MAX], target[4096];
	url_token_sign(&keys->keys[0], "/musicdb/65A1B2C3D4E5F60718293A4B/*", -1, EXPIRES, token,
		       sizeof(token));
	assert_int_equal(check_target(with_token(target, sizeof(target), token), "__token__",
					 keys, INSIDE, 0, MID),
			 URL_TOKEN_VALID);
}

static void test_each_verdict_has_words(void **state)
{
	(void)state;
	assert_string_equal(url_token_verdict_words(URL_TOKEN_MISSING), "missing");
	assert_string_equal(url_token_verdict_words(URL_TOKEN_MALFORMED), "malformed");
	assert_string_equal(url_token_verdict_words(URL_TOKEN_BAD_SIGNATURE), "bad signature");
	assert_string_equal(url_token_verdict_words(URL_TOKEN_EXPIRED), "expired");
	assert_string_equal(url_token_verdict_words(URL_TOKEN_NOT_YET_VALID), "not yet valid");
	assert_string_equal(url_token_verdict_words(URL_TOKEN_WRONG_TRACK), "wrong track");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signing_with_st_writes_the_npm_packages_token),
		cmocka_unit_test(test_signing_without_st_writes_the_npm_packages_token),
		cmocka_unit_test(test_signing_refuses_what_the_grammar_cannot_hold),
		cmocka_unit_test(test_signing_a_url_appends_the_parameter_to_its_query),
		cmocka_unit_test(test_signing_a_url_of_an_upper_case_id_signs_its_lower_case_acl),
		cmocka_unit_test(test_signing_a_url_that_names_no_track_gives_nothing),
		cmocka_unit_test(test_prepared_keys_sign_as_the_one_shot_hmac_at_every_length),
		cmocka_unit_test(test_workers_check_tokens_with_one_prepared_set_at_once),
		cmocka_unit_test(test_the_worked_example_is_valid_for_its_track),
		cmocka_unit_test(test_a_token_serves_every_name_and_download_of_its_track),
		cmocka_unit_test(test_a_token_without_st_is_valid),
		cmocka_unit_test(test_a_token_with_several_acls_an_id_and_data_serves_each_track),
		cmocka_unit_test(test_an_upper_case_hmac_is_the_same_hmac),
		cmocka_unit_test(test_every_key_is_tried),
		cmocka_unit_test(test_another_parameter_name_is_read_when_configured),
		cmocka_unit_test(test_no_parameter_is_missing),
		cmocka_unit_test(test_a_token_after_the_fragment_mark_is_missing),
		cmocka_unit_test(test_an_empty_token_is_malformed),
		cmocka_unit_test(test_a_parameter_given_twice_is_malformed),
		cmocka_unit_test(test_every_cut_of_a_token_is_refused),
		cmocka_unit_test(test_every_byte_changed_is_refused),
		cmocka_unit_test(test_a_changed_claim_is_a_bad_signature),
		cmocka_unit_test(test_the_signature_is_checked_before_the_times),
		cmocka_unit_test(test_no_key_signs_nothing),
		cmocka_unit_test(test_fields_this_check_cannot_honour_are_malformed),
		cmocka_unit_test(test_fields_out_of_the_libraries_order_are_malformed),
		cmocka_unit_test(test_absurd_lengths_are_malformed),
		cmocka_unit_test(test_twelve_digit_times_are_read),
		cmocka_unit_test(test_a_token_is_valid_until_its_exp_plus_the_leeway),
		cmocka_unit_test(test_a_token_is_valid_from_its_st_less_the_leeway),
		cmocka_unit_test(test_without_leeway_the_times_are_exact),
		cmocka_unit_test(test_another_tracks_token_is_the_wrong_track),
		cmocka_unit_test(test_acls_that_only_resemble_the_tracks_cover_nothing),
		cmocka_unit_test(test_the_acl_is_compared_without_regard_to_case),
		cmocka_unit_test(test_each_verdict_has_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
