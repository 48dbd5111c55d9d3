/*
 * hash: a file's SHA-256 (--hash), through OpenSSL's libcrypto (EVP), which
 * uses the CPU's SHA instructions where it has them: hashing a library is
 * then as fast as reading it.
 */
#ifndef MUSICD_IMPORT_HASH_H
#define MUSICD_IMPORT_HASH_H

#define HASH_HEX_SIZE 65 /* 64 lower-case hex digits and a NUL */

/*
 * The SHA-256 of the file open as fd, read from its first byte to its end
 * with pread (the descriptor's offset is left alone). Returns 0, or a
 * negative errno (-ENOMEM when out of memory, -EIO when libcrypto fails).
 */
int hash_file(int fd, char hex[HASH_HEX_SIZE]);

#endif
