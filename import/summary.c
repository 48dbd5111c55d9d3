/*
 * summary: the three formatters, one snprintf each, checked for truncation.
 */
#include "summary.h"

#include <stdio.h>

static int checked(int written, size_t size)
{
	return written < 0 || (size_t)written >= size ? -1 : 0;
}

int summary_format_text(const struct summary *s, char *out, size_t size)
{
	return checked(snprintf(out, size,
				"%zu added, %zu updated, %zu unchanged, %zu pruned, %zu skipped in "
				"%.2f s%s",
				s->added, s->updated, s->unchanged, s->pruned, s->skipped,
				s->seconds, s->dry_run ? " (dry run: nothing written)" : ""),
		       size);
}

int summary_format_json(const struct summary *s, char *out, size_t size)
{
	return checked(snprintf(out, size,
				"{\"added\":%zu,\"updated\":%zu,\"unchanged\":%zu,\"pruned\":%zu,"
				"\"skipped\":%zu,\"seconds\":%.3f,\"dry_run\":%s}",
				s->added, s->updated, s->unchanged, s->pruned, s->skipped,
				s->seconds, s->dry_run ? "true" : "false"),
		       size);
}

int summary_format_progress(size_t done, size_t found, double seconds, char *out, size_t size)
{
	double rate = seconds > 0 ? (double)done / seconds : 0;
	return checked(snprintf(out, size, "%zu/%zu files, %.0f files/s", done, found, rate), size);
}
