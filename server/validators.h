/*
 * validators: the ETag and HTTP-date strings that let players and caches
 * revalidate a file (RFC 9110 section 8.8). Pure.
 */
#ifndef MUSICD_VALIDATORS_H
#define MUSICD_VALIDATORS_H

#include <stdint.h>
#include <time.h>

/* "\"<mtime seconds hex><mtime nanoseconds, 8 hex>-<size hex>\"" plus NUL fits. */
#define ETAG_MAX 48
/* "Sun, 06 Nov 1994 08:49:37 GMT" plus NUL. */
#define HTTP_DATE_MAX 30

/* A strong ETag that changes whenever the file's mtime (to the nanosecond) or size does. */
void etag_format(char out[ETAG_MAX], struct timespec mtime, uint64_t size);

/* The IMF-fixdate form of t (RFC 9110 section 5.6.7). */
void http_date_format(char out[HTTP_DATE_MAX], time_t t);

/* Parses an IMF-fixdate, RFC 850 or asctime date; returns 0, or -1 if it is none of them. */
int http_date_parse(const char *text, time_t *out);

#endif
