/*
 * reload_plan: what a SIGHUP does with a newly loaded configuration, decided
 * without I/O. Given the settings as they were given to the running process
 * and the ones just loaded, it names the live settings whose value changes
 * (applied to new requests) and the restart-only settings that differ (named
 * in one warning and left as they run). Which settings are live is written
 * once, in the option table (config.c).
 */
#ifndef MUSICD_RELOAD_PLAN_H
#define MUSICD_RELOAD_PLAN_H

#include <stddef.h>

#include "config/config.h"

struct reload_plan {
	const char *changed[CONFIG_OPTION_MAX]; /* live settings with a new value, in table order */
	size_t changed_count;
	const char *kept[CONFIG_OPTION_MAX]; /* restart-only settings that differ, in table order */
	size_t kept_count;
};

/*
 * Compares every setting of loaded with given (both as given, before main
 * settles defaults such as the worker count) and fills plan; names point to
 * the option table.
 */
void reload_plan_make(const struct config *given, const struct config *loaded,
		      struct reload_plan *plan);

/*
 * Writes names as one list ("listen, workers") into out; returns its length,
 * or 0 (out empty) when there are none or they do not fit: never a cut list.
 */
size_t reload_plan_names(const char *const *names, size_t count, char *out, size_t out_size);

#endif
