/*
 * plan: classify and prune rules. Containment is server/media/containment.c's, the
 * same rule musicd uses to keep files inside its media roots.
 */
#include "plan.h"

#include "media/containment.h"

enum plan_action plan_classify(const struct known_entry *known, int64_t size, int64_t mtime_ms,
			       bool want_hash)
{
	if (known == NULL)
		return PLAN_ADD;
	if (!known->has_size || !known->has_mtime || known->size != size ||
	    known->mtime_ms != mtime_ms || known->stale_duration || (want_hash && !known->has_sha256))
		return PLAN_UPDATE;
	return PLAN_UNCHANGED;
}

bool plan_prune_candidate(const struct known_entry *known, const char *const *roots,
			  size_t root_count)
{
	return !known->seen && containment_find_root(roots, root_count, known->path) >= 0;
}
