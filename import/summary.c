/*
 * summary: the formatters, one snprintf each, checked for truncation. The text
 * and the JSON summary are one format call whose two format strings take the
 * same arguments in the same order (the compiler checks both against them).
 */
#include "summary.h"

#include <stdio.h>

static int checked(int written, size_t size)
{
	return written < 0 || (size_t)written >= size ? -1 : 0;
}

static int format_summary(const struct summary *s, bool json, char *out, size_t size)
{
	const char *dry_run = json ? (s->dry_run ? "true" : "false")
				   : (s->dry_run ? " (dry run: nothing written)" : "");
	char unconfirmed[64] = "";
	if (json || s->unconfirmed > 0)
		snprintf(unconfirmed, sizeof(unconfirmed),
			 json ? "%zu" : "; %zu writes unconfirmed", s->unconfirmed);
	/* The text form leaves the files gone to the note on stderr, which says what to do. */
	char gone[32] = "";
	if (json)
		snprintf(gone, sizeof(gone), "\"gone\":%zu,", s->gone);
	return checked(snprintf(out, size,
				json ? "{\"added\":%zu,\"updated\":%zu,\"unchanged\":%zu,\"pruned\":%zu,"
				       "%s\"skipped\":%zu,\"seconds\":%.3f,\"unconfirmed\":%s,"
				       "\"dry_run\":%s}"
				     : "%zu added, %zu updated, %zu unchanged, %zu pruned, %s%zu skipped "
				       "in %.2f s%s%s",
				s->added, s->updated, s->unchanged, s->pruned, gone, s->skipped,
				s->seconds, unconfirmed, dry_run),
		       size);
}

int summary_format_text(const struct summary *s, char *out, size_t size)
{
	return format_summary(s, false, out, size);
}

int summary_format_json(const struct summary *s, char *out, size_t size)
{
	return format_summary(s, true, out, size);
}
