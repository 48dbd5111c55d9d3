/*
 * Unit tests for import/hash.h: known answers of FIPS 180-4's examples
 * (NIST's "SHA256.pdf" and "SHA2_Additional.pdf") hashed from files, with
 * one longer than the read buffer, and a descriptor that cannot be read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "hash.h"

/* The hash of a file holding data[0..length). */
static void hash_of(const void *data, size_t length, char hex[HASH_HEX_SIZE])
{
	int fd = memfd_create("hash", 0);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, length), (ssize_t)length);
	assert_int_equal(hash_file(fd, hex), 0);
	close(fd);
}

static void test_empty_file(void **state)
{
	(void)state;
	char hex[HASH_HEX_SIZE];
	hash_of("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_abc(void **state)
{
	(void)state;
	char hex[HASH_HEX_SIZE];
	hash_of("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_448_bit_message(void **state)
{
	(void)state;
	char hex[HASH_HEX_SIZE];
	const char *message = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	hash_of(message, strlen(message), hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_a_million_a_is_read_in_several_pieces(void **state)
{
	(void)state;
	char hex[HASH_HEX_SIZE];
	size_t length = 1000000; /* eight reads of the 128 KiB buffer */
	char *message = malloc(length);
	assert_non_null(message);
	memset(message, 'a', length);
	hash_of(message, length, hex);
	free(message);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_the_whole_file_whatever_the_descriptors_offset(void **state)
{
	(void)state;
	char hex[HASH_HEX_SIZE];
	int fd = memfd_create("hash", 0);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc", 3), 3); /* the offset is now at the end */
	assert_int_equal(hash_file(fd, hex), 0);
	close(fd);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_a_descriptor_that_cannot_be_read_is_an_error(void **state)
{
	(void)state;
	char hex[HASH_HEX_SIZE];
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	assert_true(hash_file(fds[1], hex) < 0); /* a pipe cannot be pread */
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_file),
		cmocka_unit_test(test_abc),
		cmocka_unit_test(test_448_bit_message),
		cmocka_unit_test(test_a_million_a_is_read_in_several_pieces),
		cmocka_unit_test(test_the_whole_file_whatever_the_descriptors_offset),
		cmocka_unit_test(test_a_descriptor_that_cannot_be_read_is_an_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
