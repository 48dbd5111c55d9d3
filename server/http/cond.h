/*
 * cond: evaluates conditional request headers against the file's validators
 * in RFC 9110's order (section 13.2.2). Pure.
 *
 *   If-Match (strong; "*" matches)          false -> 412
 *   else If-Unmodified-Since                modified after it -> 412
 *   If-None-Match (weak; "*" matches)       matches -> 304
 *   else If-Modified-Since                  not modified since -> 304
 *   If-Range (with Range)                   decides ranges vs the whole file
 *
 * Dates that do not parse are ignored, as RFC 9110 requires.
 */
#ifndef MUSICD_COND_H
#define MUSICD_COND_H

#include <stdbool.h>
#include <time.h>

/* The request's conditional headers; NULL when absent. */
struct cond_request {
	const char *if_match;
	const char *if_none_match;
	const char *if_modified_since;
	const char *if_unmodified_since;
};

/* The current representation's validators. */
struct cond_validators {
	const char *etag; /* strong, quoted */
	time_t last_modified;
};

enum cond_verdict { COND_PROCEED, COND_NOT_MODIFIED, COND_PRECONDITION_FAILED };

/* The verdict for a GET or HEAD. */
enum cond_verdict cond_evaluate(const struct cond_request *request,
				const struct cond_validators *validators);

/* Whether an If-Range value (NULL when absent) lets the Range header apply. */
bool cond_if_range_allows(const char *if_range, const struct cond_validators *validators);

/*
 * Whether a comma-separated entity-tag list (or "*") holds etag. Strong
 * comparison ignores weak tags; weak comparison ignores the W/ prefix. A
 * malformed list matches nothing.
 */
bool cond_etag_list_matches(const char *list, const char *etag, bool strong);

#endif
