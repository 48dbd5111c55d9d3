/*
 * Unit tests for import/sha256.h against the FIPS 180-4 example vectors
 * (NIST's "SHA256.pdf" and "SHA2_Additional.pdf"): the empty message, "abc",
 * the two-block 448-bit message, a million 'a's, and the same digest however
 * the message is cut into updates.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sha256.h"

static void hex_of(const void *data, size_t length, char hex[SHA256_HEX_SIZE])
{
	struct sha256 hash;
	unsigned char digest[SHA256_DIGEST_SIZE];
	sha256_init(&hash);
	sha256_update(&hash, data, length);
	sha256_final(&hash, digest);
	sha256_hex(digest, hex);
}

static void test_empty_message(void **state)
{
	(void)state;
	char hex[SHA256_HEX_SIZE];
	hex_of("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_abc(void **state)
{
	(void)state;
	char hex[SHA256_HEX_SIZE];
	hex_of("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_448_bit_message_needs_a_second_padding_block(void **state)
{
	(void)state;
	const char *message = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char hex[SHA256_HEX_SIZE];
	hex_of(message, strlen(message), hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_896_bit_message(void **state)
{
	(void)state;
	const char *message = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
	char hex[SHA256_HEX_SIZE];
	hex_of(message, strlen(message), hex);
	assert_string_equal(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

static void test_a_million_a(void **state)
{
	(void)state;
	size_t length = 1000000;
	char *message = malloc(length);
	assert_non_null(message);
	memset(message, 'a', length);
	char hex[SHA256_HEX_SIZE];
	hex_of(message, length, hex);
	free(message);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_message_of_exactly_one_block_and_of_55_56_and_64_bytes(void **state)
{
	(void)state;
	/* 55 bytes: padding fits in the block; 56: it does not; 64: a whole block of data. */
	char message[64];
	memset(message, 'a', sizeof(message));
	char hex[SHA256_HEX_SIZE];
	hex_of(message, 55, hex);
	assert_string_equal(hex, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
	hex_of(message, 56, hex);
	assert_string_equal(hex, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
	hex_of(message, 64, hex);
	assert_string_equal(hex, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

static void test_pieces_of_any_size_give_the_same_digest(void **state)
{
	(void)state;
	unsigned char message[1000];
	for (size_t i = 0; i < sizeof(message); i++)
		message[i] = (unsigned char)(i * 7 + 3);
	char whole[SHA256_HEX_SIZE];
	hex_of(message, sizeof(message), whole);
	const size_t pieces[] = {1, 3, 63, 64, 65, 127, 500};
	for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
		struct sha256 hash;
		unsigned char digest[SHA256_DIGEST_SIZE];
		char hex[SHA256_HEX_SIZE];
		sha256_init(&hash);
		for (size_t offset = 0; offset < sizeof(message); offset += pieces[p]) {
			size_t n = sizeof(message) - offset < pieces[p] ? sizeof(message) - offset
									   : pieces[p];
			sha256_update(&hash, message + offset, n);
		}
		sha256_final(&hash, digest);
		sha256_hex(digest, hex);
		assert_string_equal(hex, whole);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_message),
		cmocka_unit_test(test_abc),
		cmocka_unit_test(test_448_bit_message_needs_a_second_padding_block),
		cmocka_unit_test(test_896_bit_message),
		cmocka_unit_test(test_a_million_a),
		cmocka_unit_test(test_message_of_exactly_one_block_and_of_55_56_and_64_bytes),
		cmocka_unit_test(test_pieces_of_any_size_give_the_same_digest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
