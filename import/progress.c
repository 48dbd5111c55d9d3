/*
 * progress: the line is its head (the numbers, ASCII, so a byte is a column)
 * and, after ", ", as much of the directory's end as the columns left hold.
 */
#include "progress.h"

#include "escape.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ten million hours: past any real run, and within an unsigned long's range of seconds. */
#define PROGRESS_MAX_SECONDS 3.6e10
#define PROGRESS_SEPARATOR ", "
#define PROGRESS_CUT "..."

static int checked(int written, size_t size)
{
	return written < 0 || (size_t)written >= size ? -1 : 0;
}

int progress_format_duration(double seconds, char *out, size_t size)
{
	double whole = ceil(seconds > 0 ? seconds : 0);
	unsigned long s = (unsigned long)(whole < PROGRESS_MAX_SECONDS ? whole : PROGRESS_MAX_SECONDS);
	unsigned long hours = s / 3600, minutes = s / 60 % 60;
	s %= 60;
	return checked(hours > 0 ? snprintf(out, size, "%lu:%02lu:%02lu", hours, minutes, s)
				 : snprintf(out, size, "%lu:%02lu", minutes, s),
		       size);
}

/* Columns of the character that starts at text[0] (a lead byte of valid UTF-8). */
static size_t character_columns(const unsigned char *text, size_t length)
{
	if (text[0] < 0xE0)
		return 1; /* ASCII, or two bytes: below U+0800 */
	if (text[0] >= 0xF0 || length < 3)
		return 2; /* four bytes: U+10000 and up */
	unsigned code = (unsigned)(text[0] & 0x0F) << 12 | (unsigned)(text[1] & 0x3F) << 6 |
			(text[2] & 0x3F);
	return code >= 0x1100 ? 2 : 1;
}

static bool continuation_byte(unsigned char c)
{
	return (c & 0xC0) == 0x80;
}

size_t progress_text_columns(const char *text, size_t length)
{
	const unsigned char *bytes = (const unsigned char *)text;
	size_t columns = 0;
	for (size_t i = 0; i < length; i++)
		if (!continuation_byte(bytes[i]))
			columns += character_columns(bytes + i, length - i);
	return columns;
}

/* The start of the longest end of text that takes at most columns. */
static const char *end_fitting(const char *text, size_t columns)
{
	const unsigned char *bytes = (const unsigned char *)text;
	size_t start = strlen(text), used = 0;
	while (start > 0) {
		size_t previous = start - 1;
		while (previous > 0 && continuation_byte(bytes[previous]))
			previous--;
		size_t width = character_columns(bytes + previous, start - previous);
		if (used + width > columns)
			break;
		used += width;
		start = previous;
	}
	return text + start;
}

/* The time left at this rate for what remains, or -1 when it cannot be told. */
static double time_left(size_t counted, size_t total, double seconds)
{
	if (counted == 0 || total < counted)
		return -1;
	return (double)(total - counted) * seconds / (double)counted;
}

/* The numbers: counts, then (once the stage has settled) the rate and the time left. */
static int format_head(const struct progress *p, char *out, size_t size)
{
	if (p->stage == PROGRESS_LOADING) {
		char rate[48] = "";
		if (p->seconds >= PROGRESS_SETTLE_SECONDS)
			snprintf(rate, sizeof(rate), PROGRESS_SEPARATOR "%.0f documents/s",
				 (double)p->loaded / p->seconds);
		return checked(snprintf(out, size, "reading the collection: %zu documents%s",
					p->loaded, rate),
			       size);
	}
	bool walking = p->stage == PROGRESS_WALKING;
	bool expecting = walking && p->expected > 0 && p->expected >= p->found;
	char measured[96] = "";
	if (p->seconds >= PROGRESS_SETTLE_SECONDS) {
		size_t counted = walking ? p->found : p->read;
		double left = walking ? (expecting ? time_left(p->found, p->expected, p->seconds) : -1)
				      : time_left(p->read, p->to_read, p->seconds);
		char duration[32];
		int used = snprintf(measured, sizeof(measured), PROGRESS_SEPARATOR "%.0f files/s",
				    (double)counted / p->seconds);
		if (left >= 0 && (progress_format_duration(left, duration, sizeof(duration)) < 0 ||
				  checked(snprintf(measured + used, sizeof(measured) - (size_t)used,
						   PROGRESS_SEPARATOR "%s left", duration),
					  sizeof(measured) - (size_t)used) < 0))
			return -1;
	}
	if (!walking)
		return checked(snprintf(out, size, "%zu/%zu files%s", p->done, p->found, measured),
			       size);
	if (expecting)
		return checked(snprintf(out, size, "walking: %zu of about %zu files found%s", p->found,
					p->expected, measured),
			       size);
	return checked(snprintf(out, size, "walking: %zu files found%s", p->found, measured), size);
}

int progress_format(const struct progress *p, unsigned columns, char *out, size_t size)
{
	if (columns == 0)
		columns = PROGRESS_DEFAULT_COLUMNS;
	size_t width = (columns < PROGRESS_MAX_COLUMNS ? columns : PROGRESS_MAX_COLUMNS) - 1;
	if (format_head(p, out, size) < 0)
		return -1;
	size_t head = strlen(out);
	if (head > width) {
		out[width] = '\0';
		return 0;
	}
	size_t room = width - head;
	if (p->directory == NULL || room < strlen(PROGRESS_SEPARATOR) + PROGRESS_MIN_DIRECTORY_COLUMNS)
		return 0;
	room -= strlen(PROGRESS_SEPARATOR);
	char *shown = escape_for_terminal(p->directory, strlen(p->directory));
	if (shown == NULL)
		return -1;
	const char *cut = "", *tail = shown;
	if (progress_text_columns(shown, strlen(shown)) > room) {
		cut = PROGRESS_CUT;
		tail = end_fitting(shown, room - strlen(PROGRESS_CUT));
	}
	int status = checked(snprintf(out + head, size - head, PROGRESS_SEPARATOR "%s%s", cut, tail),
			     size - head);
	free(shown);
	return status;
}
