/*
 * http_date: HTTP-dates (RFC 9110 section 5.6.7): the IMF-fixdate musicd
 * writes, the three forms it reads, and the Date header value of now,
 * formatted again only when the second changes. Pure but for the clock read
 * by http_date_now.
 */
#ifndef MUSICD_HTTP_DATE_H
#define MUSICD_HTTP_DATE_H

#include <time.h>

/* "Sun, 06 Nov 1994 08:49:37 GMT" plus NUL. */
#define HTTP_DATE_MAX 30

/* The IMF-fixdate form of t (RFC 9110 section 5.6.7). */
void http_date_format(char out[HTTP_DATE_MAX], time_t t);

/* Parses an IMF-fixdate, RFC 850 or asctime date; returns 0, or -1 if it is none of them. */
int http_date_parse(const char *text, time_t *out);

/* The Date header as of the last call; one per thread that uses it (no lock). */
struct http_date_cache {
	time_t second; /* the second text shows */
	char text[HTTP_DATE_MAX];
};

/* The IMF-fixdate for now, formatted again only when the second changed. */
const char *http_date_now(struct http_date_cache *cache);

#endif
