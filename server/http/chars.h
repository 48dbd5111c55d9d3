/*
 * chars: the character classes of HTTP's grammar (RFC 9110 section 5.6.2,
 * RFC 3986 section 2.1) that more than one parser reads. Pure.
 */
#ifndef MUSICD_CHARS_H
#define MUSICD_CHARS_H

/* The value of a hexadecimal digit, in either case; -1 for any other byte. */
int chars_hex_value(unsigned char c);

/* A tchar: a byte a token (a method, a field name) may hold. */
int chars_is_tchar(unsigned char c);

#endif
