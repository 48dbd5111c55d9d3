/*
 * url_keys: the keys of --url-signing-key-file, read at start-up, by -t and
 * on every SIGHUP (into each settings snapshot), and wiped when dropped
 * (url_keys_clear, url_token.h).
 *
 * The file: one key a line, hex-encoded as the EdgeAuth libraries take it
 * (an even number of hex digits, either case: the key is the bytes they
 * encode); '#' starts a comment, to the end of its line; blank lines and the
 * spaces around a key are ignored. Every key is tried, so two can be live
 * during a rotation; the first one signs (musicd --sign-url, musicd-import).
 *
 * Refused, with a message that never shows a key: a file others may read or
 * write, or its group write (a key is a password); anything but a regular
 * file (a FIFO would hold the reload up); a file over URL_KEYS_FILE_MAX
 * bytes; a line that is not one key of URL_KEY_MIN to URL_KEY_MAX bytes;
 * more than URL_KEYS_MAX keys, or none.
 */
#ifndef MUSICD_URL_KEYS_H
#define MUSICD_URL_KEYS_H

#include <stddef.h>

#include "http/url_token.h"

#define URL_KEYS_FILE_MAX (64 * 1024)

/*
 * Parses the file's text[0..length): 0 with keys filled and prepared
 * (url_keys_prepare; the caller releases them with url_keys_clear), or -1
 * with "line N: ..." in error and nothing held.
 */
int url_keys_parse(const char *text, size_t length, struct url_keys *keys, char *error,
		   size_t error_size);

/* Opens, checks and parses path: 0, or -1 with "url-signing-key-file PATH: ..." in error. */
int url_keys_load(const char *path, struct url_keys *keys, char *error, size_t error_size);

#endif
