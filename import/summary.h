/*
 * summary: the numbers a run ends with, and the line that tells them, as
 * text or JSON (the progress line is progress.h's). Pure; each formatter
 * refuses (-1) rather than truncates.
 */
#ifndef MUSICD_IMPORT_SUMMARY_H
#define MUSICD_IMPORT_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>

struct summary {
	size_t added, updated, unchanged, pruned, skipped;
	size_t gone;	    /* documents of files gone under the DIRs that the run leaves (no --prune) */
	size_t unconfirmed; /* writes sent when the database failed, and not found since */
	double seconds;
	bool dry_run; /* the counts are what would have been written */
};

/*
 * "3 added, 1 updated, 10 unchanged, 0 pruned, 2 skipped in 0.42 s", then
 * "; 4000 writes unconfirmed" when some are, or " (dry run: nothing written)".
 * (The files gone are told apart, on stderr: "2 files gone: run with --prune ...".)
 */
int summary_format_text(const struct summary *summary, char *out, size_t size);

/*
 * {"added":3,"updated":1,"unchanged":10,"pruned":0,"gone":2,"skipped":2,"seconds":0.42,
 *  "unconfirmed":0,"dry_run":false}
 */
int summary_format_json(const struct summary *summary, char *out, size_t size);

#endif
