/*
 * Fuzzes etag_from_field with any bytes as the document's field value. It
 * must accept exactly the values its header promises (1 to
 * ETAG_FIELD_VALUE_MAX bytes of letters, digits and "+-./:=_~"), leave out
 * untouched when it refuses, and when it accepts write one entity-tag by
 * RFC 9110's grammar (section 8.8.3: DQUOTE *etagc DQUOTE, not weak) that
 * holds the value unchanged, fits ETAG_MAX with its NUL, and is matched by
 * cond_etag_list_matches, the code that reads it back from If-None-Match.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/cond.h"
#include "http/etag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The promise in etag.h, written again independently of the code. */
static bool promised(const uint8_t *value, size_t length)
{
	static const char extra[] = "+-./:=_~";
	if (length == 0 || length > ETAG_FIELD_VALUE_MAX)
		return false;
	for (size_t i = 0; i < length; i++) {
		uint8_t c = value[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (c == '\0' || memchr(extra, c, sizeof(extra) - 1) == NULL))
			return false;
	}
	return true;
}

/* RFC 9110: etagc = %x21 / %x23-7E / obs-text (%x80-FF): no space, no DQUOTE, no control byte. */
static bool is_etagc(unsigned char c)
{
	return c == 0x21 || (c >= 0x23 && c <= 0x7e) || c >= 0x80;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, not NUL-terminated, so a read past length is an ASan error. */
	char *value = malloc(size > 0 ? size : 1);
	if (value == NULL)
		return 0;
	memcpy(value, data, size);
	char out[ETAG_MAX];
	memset(out, 0x5a, sizeof(out));

	int rc = etag_from_field(out, value, size);
	if (rc != 0 && rc != -1)
		abort();
	if ((rc == 0) != promised(data, size))
		abort();
	if (rc == -1) {
		for (size_t i = 0; i < sizeof(out); i++) {
			if (out[i] != 0x5a)
				abort();
		}
		goto cleanup;
	}

	size_t etag_length = strnlen(out, sizeof(out));
	if (etag_length != size + 2 || etag_length >= ETAG_MAX)
		abort();
	if (out[0] != '"' || out[etag_length - 1] != '"')
		abort();
	for (size_t i = 1; i + 1 < etag_length; i++) {
		if (!is_etagc((unsigned char)out[i]))
			abort();
	}
	if (memcmp(out + 1, value, size) != 0)
		abort();
	/* Read back as a client sends it: alone, weakly, and strongly inside a list. */
	if (!cond_etag_list_matches(out, out, false) || !cond_etag_list_matches(out, out, true))
		abort();
	char list[ETAG_MAX + 16];
	memcpy(list, "\"x\", ", 5);
	memcpy(list + 5, out, etag_length + 1);
	if (!cond_etag_list_matches(list, out, true))
		abort();

cleanup:
	free(value);
	return 0;
}
