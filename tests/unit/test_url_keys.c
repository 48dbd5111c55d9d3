/*
 * Unit tests for server/config/url_keys.h: the key file of
 * --url-signing-key-file. Keys are the bytes their hex encodes, one a line,
 * in order; comments, blank lines, spaces and CRLF are ignored; a line that
 * is not one key of 32 to 256 bytes, more than 16 keys, no key or a NUL byte
 * is refused naming the line, never showing a key. The file itself: a mode
 * letting others read or write it (or its group write it), anything but a
 * regular file, or more than 64 KiB, is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/url_keys.h"

#define KEY_A "6d75736963642d6578616d706c652d6b65792d30313233343536373839616263"
#define KEY_B "00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff"

static int parse(const char *text, struct url_keys *keys, char *error)
{
	return url_keys_parse(text, strlen(text), keys, error, 256);
}

static void assert_refused(const char *text, const char *message)
{
	struct url_keys keys;
	char error[256] = "";
	assert_int_equal(parse(text, &keys, error), -1);
	if (strstr(error, message) == NULL)
		fail_msg("error '%s' does not say '%s'", error, message);
	assert_int_equal(keys.count, 0);
}

static void test_a_key_is_the_bytes_its_hex_encodes(void **state)
{
	(void)state;
	struct url_keys keys;
	char error[256];
	assert_int_equal(parse(KEY_A "\n", &keys, error), 0);
	assert_int_equal(keys.count, 1);
	assert_int_equal(keys.keys[0].length, 32);
	assert_memory_equal(keys.keys[0].bytes, "musicd-example-key-0123456789abc", 32);
	assert_non_null(keys.keys[0].inner);
	assert_non_null(keys.keys[0].outer);
	url_keys_clear(&keys);
}

static void test_comments_blank_lines_spaces_and_crlf_are_ignored(void **state)
{
	(void)state;
	struct url_keys keys;
	char error[256];
	assert_int_equal(parse("# keys for musicd\r\n\n   \t\r\n  " KEY_B "  # the new one\r\n"
			       "# the old one:\n\t" KEY_A,
			       &keys, error),
			 0);
	assert_int_equal(keys.count, 2);
	assert_int_equal(keys.keys[0].bytes[10], 0xaa);
	assert_int_equal(keys.keys[0].bytes[31], 0xff);
	assert_memory_equal(keys.keys[1].bytes, "musicd-", 7);
	url_keys_clear(&keys);
}

static void test_a_key_of_32_and_of_256_bytes_is_taken(void **state)
{
	(void)state;
	char text[600];
	struct url_keys keys;
	char error[256];
	memset(text, 'e', 512);
	text[512] = '\0';
	assert_int_equal(parse(text, &keys, error), 0);
	assert_int_equal(keys.keys[0].length, 256);
	assert_int_equal(keys.keys[0].bytes[255], 0xee);
	url_keys_clear(&keys);
	text[64] = '\0';
	assert_int_equal(parse(text, &keys, error), 0);
	assert_int_equal(keys.keys[0].length, 32);
	url_keys_clear(&keys);
}

static void test_a_key_shorter_than_32_bytes_is_refused(void **state)
{
	(void)state;
	assert_refused("# short\n" "6d75736963642d6578616d706c652d6b65792d303132333435363738396162\n",
		       "line 2: a key of 31 bytes; give 32 to 256 bytes");
}

static void test_a_key_longer_than_256_bytes_is_refused(void **state)
{
	(void)state;
	char text[600];
	memset(text, 'e', 514);
	text[514] = '\0';
	assert_refused(text, "line 1: a key of 257 bytes");
}

static void test_an_odd_number_of_digits_is_refused(void **state)
{
	(void)state;
	assert_refused(KEY_A "\n" KEY_B "a\n", "line 2: an odd number of hex digits (65)");
}

static void test_a_key_that_is_not_hex_is_refused_without_showing_it(void **state)
{
	(void)state;
	struct url_keys keys;
	char error[256] = "";
	const char *text = "musicd-example-key-0123456789abcmusicd-example-key-0123456789abc\n";
	assert_int_equal(parse(text, &keys, error), -1);
	assert_string_equal(error, "line 1: a key is hex digits only (byte 1 is not one)");
	assert_refused(KEY_A "x\n", "byte 65 is not one");
	assert_refused("6d75 736963642d6578616d706c652d6b65792d30313233343536373839616263",
		       "byte 5 is not one");
}

static void test_more_than_16_keys_are_refused(void **state)
{
	(void)state;
	char text[17 * 66 + 1] = "";
	for (int i = 0; i < 17; i++)
		strcat(text, KEY_A "\n");
	assert_refused(text, "line 17: more than 16 keys");
	text[16 * 65] = '\0';
	struct url_keys keys;
	char error[256];
	assert_int_equal(parse(text, &keys, error), 0);
	assert_int_equal(keys.count, 16);
	url_keys_clear(&keys);
}

static void test_a_file_without_a_key_is_refused(void **state)
{
	(void)state;
	assert_refused("", "holds no key");
	assert_refused("# only a comment\n\n", "holds no key");
}

static void test_a_nul_byte_is_refused(void **state)
{
	(void)state;
	struct url_keys keys;
	char error[256];
	static const char text[] = KEY_A "\0\n" KEY_B;
	assert_int_equal(url_keys_parse(text, sizeof(text) - 1, &keys, error, sizeof(error)), -1);
	assert_string_equal(error, "contains a NUL byte");
}

/* --- The file --- */

static char directory[64];

static int make_directory(void **state)
{
	(void)state;
	snprintf(directory, sizeof(directory), "/tmp/test_url_keys.XXXXXX");
	return mkdtemp(directory) == NULL ? -1 : 0;
}

static int remove_directory(void **state)
{
	(void)state;
	char command[128];
	snprintf(command, sizeof(command), "rm -rf '%s'", directory);
	return system(command) == 0 ? 0 : -1;
}

static const char *key_file(const char *name, const char *text, mode_t mode)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/%s", directory, name);
	FILE *file = fopen(path, "w");
	assert_non_null(file);
	fputs(text, file);
	fclose(file);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static void test_a_file_its_owner_and_group_may_read_is_loaded(void **state)
{
	(void)state;
	struct url_keys keys;
	char error[512];
	assert_int_equal(url_keys_load(key_file("keys", KEY_A "\n" KEY_B "\n", 0640), &keys, error,
				       sizeof(error)),
			 0);
	assert_int_equal(keys.count, 2);
	url_keys_clear(&keys);
	assert_int_equal(keys.count, 0);
	assert_int_equal(keys.keys[0].bytes[0], 0);
	assert_null(keys.keys[0].inner);
}

static void test_a_file_others_may_read_is_refused(void **state)
{
	(void)state;
	struct url_keys keys;
	char error[512];
	const char *path = key_file("keys", KEY_A "\n", 0644);
	assert_int_equal(url_keys_load(path, &keys, error, sizeof(error)), -1);
	assert_non_null(strstr(error, "url-signing-key-file "));
	assert_non_null(strstr(error, ": mode 0644 lets others read or write it"));
	assert_null(strstr(error, KEY_A));
}

static void test_a_file_its_group_may_write_is_refused(void **state)
{
	(void)state;
	struct url_keys keys;
	char error[512];
	assert_int_equal(url_keys_load(key_file("keys", KEY_A "\n", 0660), &keys, error,
				       sizeof(error)),
			 -1);
	assert_non_null(strstr(error, "mode 0660 lets its group write it"));
}

static void test_a_fifo_is_refused_without_waiting_for_a_writer(void **state)
{
	(void)state;
	char path[128], error[512];
	struct url_keys keys;
	snprintf(path, sizeof(path), "%s/fifo", directory);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(url_keys_load(path, &keys, error, sizeof(error)), -1);
	assert_non_null(strstr(error, "not a regular file"));
}

static void test_a_file_over_64_kib_is_refused(void **state)
{
	(void)state;
	static char text[URL_KEYS_FILE_MAX + 2];
	memset(text, '#', sizeof(text) - 1);
	struct url_keys keys;
	char error[512];
	assert_int_equal(url_keys_load(key_file("big", text, 0600), &keys, error, sizeof(error)), -1);
	assert_non_null(strstr(error, "larger than 65536 bytes"));
}

static void test_a_missing_file_is_named_with_the_reason(void **state)
{
	(void)state;
	struct url_keys keys;
	char error[512];
	assert_int_equal(url_keys_load("/nonexistent/keys", &keys, error, sizeof(error)), -1);
	assert_string_equal(error, "url-signing-key-file /nonexistent/keys: No such file or directory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_key_is_the_bytes_its_hex_encodes),
		cmocka_unit_test(test_comments_blank_lines_spaces_and_crlf_are_ignored),
		cmocka_unit_test(test_a_key_of_32_and_of_256_bytes_is_taken),
		cmocka_unit_test(test_a_key_shorter_than_32_bytes_is_refused),
		cmocka_unit_test(test_a_key_longer_than_256_bytes_is_refused),
		cmocka_unit_test(test_an_odd_number_of_digits_is_refused),
		cmocka_unit_test(test_a_key_that_is_not_hex_is_refused_without_showing_it),
		cmocka_unit_test(test_more_than_16_keys_are_refused),
		cmocka_unit_test(test_a_file_without_a_key_is_refused),
		cmocka_unit_test(test_a_nul_byte_is_refused),
		cmocka_unit_test_setup_teardown(test_a_file_its_owner_and_group_may_read_is_loaded,
						make_directory, remove_directory),
		cmocka_unit_test_setup_teardown(test_a_file_others_may_read_is_refused, make_directory,
						remove_directory),
		cmocka_unit_test_setup_teardown(test_a_file_its_group_may_write_is_refused,
						make_directory, remove_directory),
		cmocka_unit_test_setup_teardown(test_a_fifo_is_refused_without_waiting_for_a_writer,
						make_directory, remove_directory),
		cmocka_unit_test_setup_teardown(test_a_file_over_64_kib_is_refused, make_directory,
						remove_directory),
		cmocka_unit_test(test_a_missing_file_is_named_with_the_reason),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
