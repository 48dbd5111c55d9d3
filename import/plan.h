/*
 * plan: the decisions of an import run, apart from any I/O: whether a file
 * found by the walk is new, changed or unchanged, and whether a known
 * document may be pruned. Pure.
 */
#ifndef MUSICD_IMPORT_PLAN_H
#define MUSICD_IMPORT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "known.h"

enum plan_action { PLAN_ADD, PLAN_UPDATE, PLAN_UNCHANGED };

/*
 * A file of this size and modification time, whose document is known (NULL
 * when there is none): unchanged only when both match, its duration is not
 * the whole seconds of an older musicd-import, and, with want_hash, the
 * document already has its sha256. Modification times compare in
 * milliseconds, the precision of a BSON date.
 */
enum plan_action plan_classify(const struct known_entry *known, int64_t size, int64_t mtime_ms,
			       bool want_hash);

/*
 * Whether --prune may consider the document: its path lies strictly inside
 * one of the canonical roots and the walk did not find its file. (The caller
 * then deletes it only if the file is really gone, not merely unreadable.)
 */
bool plan_prune_candidate(const struct known_entry *known, const char *const *roots,
			  size_t root_count);

#endif
