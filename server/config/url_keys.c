/*
 * url_keys: the file checked through the descriptor it is read from (no
 * window between a check and the open), then parsed line by line.
 */
#include "config/url_keys.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/chars.h"

#define OPTION_NAME "url-signing-key-file"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* One line without its comment and surrounding spaces: [*start, *start + *length). */
static void strip(const char *line, size_t length, const char **start, size_t *stripped)
{
	const char *comment = memchr(line, '#', length);
	if (comment != NULL)
		length = (size_t)(comment - line);
	while (length > 0 && is_space(line[0])) {
		line++;
		length--;
	}
	while (length > 0 && is_space(line[length - 1]))
		length--;
	*start = line;
	*stripped = length;
}

static int decode_key(const char *hex, size_t length, struct url_key *key, unsigned line,
		      char *error, size_t error_size)
{
	for (size_t i = 0; i < length; i++) {
		if (chars_hex_value((unsigned char)hex[i]) < 0) {
			snprintf(error, error_size,
				 "line %u: a key is hex digits only (byte %zu is not one)", line,
				 i + 1);
			return -1;
		}
	}
	if (length % 2 != 0) {
		snprintf(error, error_size, "line %u: an odd number of hex digits (%zu)", line,
			 length);
		return -1;
	}
	if (length / 2 < URL_KEY_MIN || length / 2 > URL_KEY_MAX) {
		snprintf(error, error_size,
			 "line %u: a key of %zu bytes; give %d to %d bytes (%d to %d hex digits)",
			 line, length / 2, URL_KEY_MIN, URL_KEY_MAX, 2 * URL_KEY_MIN,
			 2 * URL_KEY_MAX);
		return -1;
	}
	key->length = length / 2;
	for (size_t i = 0; i < key->length; i++)
		key->bytes[i] = (unsigned char)(chars_hex_value((unsigned char)hex[2 * i]) * 16 +
						chars_hex_value((unsigned char)hex[2 * i + 1]));
	return 0;
}

int url_keys_parse(const char *text, size_t length, struct url_keys *keys, char *error,
		   size_t error_size)
{
	memset(keys, 0, sizeof(*keys));
	if (memchr(text, '\0', length) != NULL) {
		snprintf(error, error_size, "contains a NUL byte");
		return -1;
	}
	unsigned line = 0;
	for (size_t at = 0; at < length; line++) {
		const char *end = memchr(text + at, '\n', length - at);
		size_t line_length = end ? (size_t)(end - (text + at)) : length - at;
		const char *key;
		size_t key_length;
		strip(text + at, line_length, &key, &key_length);
		at += line_length + 1;
		if (key_length == 0)
			continue;
		if (keys->count == URL_KEYS_MAX) {
			snprintf(error, error_size, "line %u: more than %d keys", line + 1,
				 URL_KEYS_MAX);
			goto fail;
		}
		if (decode_key(key, key_length, &keys->keys[keys->count], line + 1, error,
			       error_size) < 0)
			goto fail;
		keys->count++;
	}
	if (keys->count == 0) {
		snprintf(error, error_size, "holds no key");
		return -1;
	}
	if (url_keys_prepare(keys) < 0) {
		snprintf(error, error_size, "out of memory for the keys");
		goto fail;
	}
	return 0;
fail:
	url_keys_clear(keys);
	return -1;
}

static int check_descriptor(int fd, char *reason, size_t reason_size)
{
	struct stat status;
	if (fstat(fd, &status) < 0) {
		snprintf(reason, reason_size, "%s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(status.st_mode)) {
		snprintf(reason, reason_size, "not a regular file");
		return -1;
	}
	if (status.st_mode & (S_IROTH | S_IWOTH | S_IWGRP)) {
		snprintf(reason, reason_size,
			 "mode %04o lets %s; a key file is readable by its owner and group only "
			 "(chmod 640 or 600)",
			 (unsigned)(status.st_mode & 07777),
			 status.st_mode & (S_IROTH | S_IWOTH) ? "others read or write it"
							     : "its group write it");
		return -1;
	}
	if (status.st_size > URL_KEYS_FILE_MAX) {
		snprintf(reason, reason_size, "larger than %d bytes", URL_KEYS_FILE_MAX);
		return -1;
	}
	return 0;
}

int url_keys_load(const char *path, struct url_keys *keys, char *error, size_t error_size)
{
	char reason[256];
	char *text = NULL;
	ssize_t length = 0;
	memset(keys, 0, sizeof(*keys));
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		snprintf(reason, sizeof(reason), "%s", strerror(errno));
		goto fail;
	}
	if (check_descriptor(fd, reason, sizeof(reason)) < 0)
		goto fail;
	if ((text = malloc(URL_KEYS_FILE_MAX + 1)) == NULL) {
		snprintf(reason, sizeof(reason), "out of memory");
		goto fail;
	}
	for (ssize_t got; length <= URL_KEYS_FILE_MAX; length += got) {
		got = read(fd, text + length, (size_t)(URL_KEYS_FILE_MAX + 1 - length));
		if (got < 0 && errno == EINTR)
			got = 0;
		else if (got < 0) {
			snprintf(reason, sizeof(reason), "%s", strerror(errno));
			goto fail;
		} else if (got == 0)
			break;
	}
	if (length > URL_KEYS_FILE_MAX) {
		snprintf(reason, sizeof(reason), "larger than %d bytes", URL_KEYS_FILE_MAX);
		goto fail;
	}
	if (url_keys_parse(text, (size_t)length, keys, reason, sizeof(reason)) < 0)
		goto fail;
	OPENSSL_cleanse(text, (size_t)length);
	free(text);
	close(fd);
	return 0;
fail:
	snprintf(error, error_size, OPTION_NAME " %s: %s", path, reason);
	if (text != NULL) {
		OPENSSL_cleanse(text, (size_t)length);
		free(text);
	}
	if (fd >= 0)
		close(fd);
	return -1;
}
