/*
 * cond: entity-tag list matching and the precondition order. The list parser
 * follows RFC 9110's grammar (#entity-tag, where an opaque tag may itself
 * contain commas), so "a, b" style splitting on commas is not used.
 */
#include "http/cond.h"

#include <string.h>

#include "http/http_date.h"

static const char *skip_list_space(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == ',')
		p++;
	return p;
}

/* Compares one opaque tag [start, end) (quotes included) with etag, which may carry W/. */
static bool tag_equals(const char *start, const char *end, bool weak_tag, const char *etag,
		       bool strong)
{
	bool etag_is_weak = strncmp(etag, "W/", 2) == 0;
	if (strong && (weak_tag || etag_is_weak))
		return false;
	if (etag_is_weak)
		etag += 2;
	size_t length = (size_t)(end - start);
	return strlen(etag) == length && memcmp(etag, start, length) == 0;
}

bool cond_etag_list_matches(const char *list, const char *etag, bool strong)
{
	if (list == NULL || etag == NULL)
		return false;
	const char *p = skip_list_space(list);
	if (*p == '*') {
		p = skip_list_space(p + 1);
		return *p == '\0';
	}
	bool matched = false;
	while (*p != '\0') {
		bool weak_tag = false;
		if (p[0] == 'W' && p[1] == '/') {
			weak_tag = true;
			p += 2;
		}
		if (*p != '"')
			return false; /* malformed: matches nothing */
		const char *close = strchr(p + 1, '"');
		if (close == NULL)
			return false;
		if (tag_equals(p, close + 1, weak_tag, etag, strong))
			matched = true;
		p = close + 1;
		if (*p != '\0' && *p != ',' && *p != ' ' && *p != '\t')
			return false;
		p = skip_list_space(p);
	}
	return matched;
}

/* Parses a date header; false when absent or not a valid HTTP-date. */
static bool read_date(const char *text, time_t *out)
{
	return text != NULL && http_date_parse(text, out) == 0;
}

enum cond_verdict cond_evaluate(const struct cond_request *request,
				const struct cond_validators *validators)
{
	time_t date;
	if (request->if_match != NULL) {
		if (!cond_etag_list_matches(request->if_match, validators->etag, true))
			return COND_PRECONDITION_FAILED;
	} else if (read_date(request->if_unmodified_since, &date)) {
		if (validators->last_modified > date)
			return COND_PRECONDITION_FAILED;
	}
	if (request->if_none_match != NULL) {
		if (cond_etag_list_matches(request->if_none_match, validators->etag, false))
			return COND_NOT_MODIFIED;
	} else if (read_date(request->if_modified_since, &date)) {
		if (validators->last_modified <= date)
			return COND_NOT_MODIFIED;
	}
	return COND_PROCEED;
}

bool cond_if_range_allows(const char *if_range, const struct cond_validators *validators)
{
	if (if_range == NULL)
		return true;
	size_t length = strlen(if_range);
	if (length >= 2 && if_range[length - 1] == '"') {
		/* An entity tag: strong comparison, so a weak tag never allows the range. */
		return strncmp(if_range, "W/", 2) != 0 && strcmp(if_range, validators->etag) == 0;
	}
	time_t date;
	return read_date(if_range, &date) && date == validators->last_modified;
}
