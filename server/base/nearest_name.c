/*
 * nearest_name: an optimal string alignment distance over three rows of the
 * usual table (a swap looks two rows back), on the stack: the names are short
 * and bounded, so nothing is allocated.
 */
#include "base/nearest_name.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

static size_t smallest(size_t a, size_t b, size_t c)
{
	size_t least = a < b ? a : b;
	return least < c ? least : c;
}

static int same_letter(char a, char b)
{
	return tolower((unsigned char)a) == tolower((unsigned char)b);
}

size_t nearest_name_distance(const char *a, size_t a_length, const char *b)
{
	size_t b_length = strlen(b);
	if (a_length > NEAREST_NAME_MAX_LENGTH || b_length > NEAREST_NAME_MAX_LENGTH)
		return SIZE_MAX;
	/* rows[i % 3][j]: the distance between a's first i characters and b's first j. */
	size_t rows[3][NEAREST_NAME_MAX_LENGTH + 1];
	for (size_t j = 0; j <= b_length; j++)
		rows[0][j] = j;
	for (size_t i = 1; i <= a_length; i++) {
		size_t *row = rows[i % 3];
		const size_t *above = rows[(i - 1) % 3];
		const size_t *two_above = rows[(i + 1) % 3]; /* (i - 2) % 3 */
		row[0] = i;
		for (size_t j = 1; j <= b_length; j++) {
			size_t cost = same_letter(a[i - 1], b[j - 1]) ? 0 : 1;
			row[j] = smallest(above[j] + 1, row[j - 1] + 1, above[j - 1] + cost);
			if (i > 1 && j > 1 && same_letter(a[i - 1], b[j - 2]) &&
			    same_letter(a[i - 2], b[j - 1]) && two_above[j - 2] + 1 < row[j])
				row[j] = two_above[j - 2] + 1;
		}
	}
	return rows[a_length % 3][b_length];
}

const char *nearest_name(const char *given, size_t length, nearest_name_at *names)
{
	/* One slip per three characters: "usr" -> "user", "medai-root" -> "media-root". */
	size_t allowed = length / 3 > 1 ? length / 3 : 1;
	const char *best = NULL;
	size_t best_distance = SIZE_MAX;
	const char *name;
	for (size_t i = 0; (name = names(i)) != NULL; i++) {
		size_t distance = nearest_name_distance(given, length, name);
		if (distance <= allowed && distance < best_distance) {
			best = name;
			best_distance = distance;
		}
	}
	return best;
}
