/*
 * sha256: FIPS 180-4 SHA-256, self-contained (musicd links no crypto library
 * of its own). Pure: feed bytes in any pieces, then take the digest.
 */
#ifndef MUSICD_IMPORT_SHA256_H
#define MUSICD_IMPORT_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_HEX_SIZE (2 * SHA256_DIGEST_SIZE + 1) /* with the NUL */

struct sha256 {
	uint32_t state[8];
	uint64_t length; /* bytes fed so far */
	unsigned char block[64];
	size_t used; /* bytes of block filled */
};

void sha256_init(struct sha256 *hash);
void sha256_update(struct sha256 *hash, const void *data, size_t length);
/* Finishes the hash; the struct must be re-initialised before another use. */
void sha256_final(struct sha256 *hash, unsigned char digest[SHA256_DIGEST_SIZE]);
/* The digest as 64 lower-case hex digits and a NUL. */
void sha256_hex(const unsigned char digest[SHA256_DIGEST_SIZE], char hex[SHA256_HEX_SIZE]);

#endif
