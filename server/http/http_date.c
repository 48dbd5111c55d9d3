/*
 * http_date: HTTP-date formatting and parsing (RFC 9110 section 5.6.7), and
 * the Date header value a thread formats once a second. Dates are formatted by
 * hand rather than with strftime so the locale can never change them.
 */
#include "http/http_date.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

static const char *const day_names[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const month_names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
					  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Writes value as exactly `digits` decimal digits (value is already in range). */
static char *put_digits(char *out, int value, int digits)
{
	for (int i = digits - 1; i >= 0; i--) {
		out[i] = (char)('0' + value % 10);
		value /= 10;
	}
	return out + digits;
}

static char *put_text(char *out, const char *text)
{
	size_t length = strlen(text);
	memcpy(out, text, length);
	return out + length;
}

/*
 * UTC calendar fields of t by arithmetic (the days-to-civil algorithm of
 * Howard Hinnant's date library): gmtime_r takes glibc's time-zone lock,
 * and this runs once per opened file and once a second per worker.
 */
static void utc_fields(time_t t, struct tm *utc)
{
	int64_t days = (int64_t)t / 86400, seconds = (int64_t)t % 86400;
	if (seconds < 0) {
		seconds += 86400;
		days--;
	}
	utc->tm_hour = (int)(seconds / 3600);
	utc->tm_min = (int)(seconds / 60 % 60);
	utc->tm_sec = (int)(seconds % 60);
	utc->tm_wday = (int)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday */
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t day_of_era = z - era * 146097;
	int64_t year_of_era =
		(day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
	int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
	int64_t month_index = (5 * day_of_year + 2) / 153; /* 0 = March */
	utc->tm_mday = (int)(day_of_year - (153 * month_index + 2) / 5 + 1);
	utc->tm_mon = (int)(month_index < 10 ? month_index + 2 : month_index - 10);
	utc->tm_year = (int)(year_of_era + era * 400 + (utc->tm_mon <= 1) - 1900);
}

void http_date_format(char out[HTTP_DATE_MAX], time_t t)
{
	struct tm utc;
	/* Outside what the format can carry (years 0 to 9999): the epoch is the honest floor. */
	if (t < (time_t)-62167219200LL || t > (time_t)253402300799LL)
		t = 0;
	utc_fields(t, &utc);
	/* "Sun, 06 Nov 1994 08:49:37 GMT" */
	char *cursor = put_text(out, day_names[utc.tm_wday]);
	cursor = put_text(cursor, ", ");
	cursor = put_digits(cursor, utc.tm_mday, 2);
	cursor = put_text(cursor, " ");
	cursor = put_text(cursor, month_names[utc.tm_mon]);
	cursor = put_text(cursor, " ");
	cursor = put_digits(cursor, utc.tm_year + 1900, 4);
	cursor = put_text(cursor, " ");
	cursor = put_digits(cursor, utc.tm_hour, 2);
	cursor = put_text(cursor, ":");
	cursor = put_digits(cursor, utc.tm_min, 2);
	cursor = put_text(cursor, ":");
	cursor = put_digits(cursor, utc.tm_sec, 2);
	cursor = put_text(cursor, " GMT");
	*cursor = '\0';
}

static int month_from_name(const char *name)
{
	for (int i = 0; i < 12; i++) {
		if (strncmp(name, month_names[i], 3) == 0)
			return i;
	}
	return -1;
}

/* Reads exactly `digits` decimal digits; returns the value or -1. */
static int read_number(const char **cursor, int digits)
{
	int value = 0;
	for (int i = 0; i < digits; i++) {
		char c = (*cursor)[i];
		if (c < '0' || c > '9')
			return -1;
		value = value * 10 + (c - '0');
	}
	*cursor += digits;
	return value;
}

static int expect(const char **cursor, const char *literal)
{
	size_t length = strlen(literal);
	if (strncmp(*cursor, literal, length) != 0)
		return -1;
	*cursor += length;
	return 0;
}

/* "HH:MM:SS" */
static int read_clock(const char **cursor, struct tm *tm)
{
	tm->tm_hour = read_number(cursor, 2);
	if (tm->tm_hour < 0 || expect(cursor, ":") < 0)
		return -1;
	tm->tm_min = read_number(cursor, 2);
	if (tm->tm_min < 0 || expect(cursor, ":") < 0)
		return -1;
	tm->tm_sec = read_number(cursor, 2);
	return tm->tm_sec < 0 ? -1 : 0;
}

static int read_month(const char **cursor, struct tm *tm)
{
	if (strlen(*cursor) < 3)
		return -1;
	tm->tm_mon = month_from_name(*cursor);
	*cursor += 3;
	return tm->tm_mon < 0 ? -1 : 0;
}

/* IMF-fixdate after the day name: " DD Mon YYYY HH:MM:SS GMT" */
static int parse_imf_fixdate(const char *cursor, struct tm *tm)
{
	if (expect(&cursor, ", ") < 0 || (tm->tm_mday = read_number(&cursor, 2)) < 0 ||
	    expect(&cursor, " ") < 0 || read_month(&cursor, tm) < 0 || expect(&cursor, " ") < 0)
		return -1;
	int year = read_number(&cursor, 4);
	if (year < 0 || expect(&cursor, " ") < 0 || read_clock(&cursor, tm) < 0 ||
	    expect(&cursor, " GMT") < 0 || *cursor != '\0')
		return -1;
	tm->tm_year = year - 1900;
	return 0;
}

/* RFC 850 after the day name: ", DD-Mon-YY HH:MM:SS GMT" */
static int parse_rfc850(const char *cursor, struct tm *tm)
{
	if (expect(&cursor, ", ") < 0 || (tm->tm_mday = read_number(&cursor, 2)) < 0 ||
	    expect(&cursor, "-") < 0 || read_month(&cursor, tm) < 0 || expect(&cursor, "-") < 0)
		return -1;
	int year = read_number(&cursor, 2);
	if (year < 0 || expect(&cursor, " ") < 0 || read_clock(&cursor, tm) < 0 ||
	    expect(&cursor, " GMT") < 0 || *cursor != '\0')
		return -1;
	/* RFC 9110 section 5.6.7: a two-digit year more than 50 years ahead is in the past. */
	time_t now = time(NULL);
	struct tm today;
	gmtime_r(&now, &today);
	int this_year = today.tm_year + 1900;
	int full_year = this_year - this_year % 100 + year;
	if (full_year > this_year + 50)
		full_year -= 100;
	tm->tm_year = full_year - 1900;
	return 0;
}

/* asctime after the day name: " Mon _D HH:MM:SS YYYY" */
static int parse_asctime(const char *cursor, struct tm *tm)
{
	if (expect(&cursor, " ") < 0 || read_month(&cursor, tm) < 0 || expect(&cursor, " ") < 0)
		return -1;
	if (*cursor == ' ')
		cursor++, tm->tm_mday = read_number(&cursor, 1);
	else
		tm->tm_mday = read_number(&cursor, 2);
	if (tm->tm_mday < 0 || expect(&cursor, " ") < 0 || read_clock(&cursor, tm) < 0 ||
	    expect(&cursor, " ") < 0)
		return -1;
	int year = read_number(&cursor, 4);
	if (year < 0 || *cursor != '\0')
		return -1;
	tm->tm_year = year - 1900;
	return 0;
}

int http_date_parse(const char *text, time_t *out)
{
	if (text == NULL)
		return -1;
	struct tm tm = {0};
	const char *comma = strchr(text, ',');
	int parsed;
	if (comma != NULL && comma - text == 3)
		parsed = parse_imf_fixdate(comma, &tm);
	else if (comma != NULL && comma - text >= 6 && comma - text <= 9)
		parsed = parse_rfc850(comma, &tm);
	else if (strlen(text) > 3)
		parsed = parse_asctime(text + 3, &tm);
	else
		parsed = -1;
	if (parsed < 0)
		return -1;
	if (tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 60)
		return -1;
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	*out = t;
	return 0;
}

const char *http_date_now(struct http_date_cache *cache)
{
	time_t now = time(NULL);
	if (now != cache->second) {
		http_date_format(cache->text, now);
		cache->second = now;
	}
	return cache->text;
}
