/*
 * reload_plan: one pass over the option table, comparing each setting; the
 * table says whether a difference is applied or kept for a restart.
 */
#include "config/reload_plan.h"

#include <string.h>

void reload_plan_make(const struct config *given, const struct config *loaded,
		      struct reload_plan *plan)
{
	plan->changed_count = 0;
	plan->kept_count = 0;
	for (size_t i = 0; i < config_option_count(); i++) {
		if (config_option_equal(i, given, loaded))
			continue;
		if (config_option_live(i))
			plan->changed[plan->changed_count++] = config_option_name(i);
		else
			plan->kept[plan->kept_count++] = config_option_name(i);
	}
}

size_t reload_plan_names(const char *const *names, size_t count, char *out, size_t out_size)
{
	size_t used = 0;
	if (out_size == 0)
		return 0;
	out[0] = '\0';
	for (size_t i = 0; i < count; i++) {
		const char *separator = i == 0 ? "" : ", ";
		size_t length = strlen(separator) + strlen(names[i]);
		if (used + length >= out_size) {
			out[0] = '\0';
			return 0;
		}
		memcpy(out + used, separator, strlen(separator));
		memcpy(out + used + strlen(separator), names[i], strlen(names[i]));
		used += length;
		out[used] = '\0';
	}
	return used;
}
