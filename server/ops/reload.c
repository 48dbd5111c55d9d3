/*
 * reload: load (config.c), decide (reload_plan.c), build the snapshot
 * (settings.c), then apply: publish it and set what lives outside it (the
 * log level, the caches' TTLs). Nothing is applied until every step that can
 * fail has succeeded, so a failed reload leaves the process as it was.
 */
#include "ops/reload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "media/file_cache.h"
#include "base/log.h"
#include "db/lookup_cache.h"
#include "config/config_check.h"
#include "config/config_sources.h"
#include "config/reload_plan.h"
#include "config/settings.h"

/* Room for every setting's name in one list. */
#define RELOAD_NAMES_MAX (CONFIG_OPTION_MAX * 32)

int reload_init(struct reload *reload, int argc, char *const *argv, const struct config *given)
{
	reload->argc = argc;
	reload->argv = argv;
	return config_copy(&reload->given, given);
}

void reload_free(struct reload *reload)
{
	config_free(&reload->given);
}

/* The running snapshot's settings with loaded's live ones; NULL with a message in error. */
static struct settings *next_snapshot(const struct settings *running, const struct config *loaded,
				      char *error, size_t error_size)
{
	struct config merged;
	struct settings *next = NULL;
	if (config_copy(&merged, &running->config) < 0) {
		snprintf(error, error_size, "out of memory");
		return NULL;
	}
	if (config_copy_live(&merged, loaded) < 0)
		snprintf(error, error_size, "out of memory");
	else if (config_validate(&merged, error, error_size) == 0)
		next = settings_new(&merged, running, error, error_size);
	config_free(&merged);
	return next;
}

static void apply(const struct resources *resources, struct settings *next)
{
	const struct config *config = &next->config;
	log_set_level(config->log_level);
	lookup_cache_set_ttl(resources->lookup_cache, config->lookup_cache_ttl,
			     config->lookup_cache_negative_ttl);
	file_cache_set_intervals(resources->file_cache, config->open_file_cache_valid,
				 config->open_file_cache_inactive);
	settings_board_publish(resources->settings, next);
}

/*
 * Without --config the settings cannot change, but the URL-signing key file is
 * read again all the same (a rotation needs no config file): a snapshot of the
 * running settings with the file's keys as they are now.
 */
static void reload_keys_only(const struct resources *resources)
{
	const struct settings *running = settings_board_current(resources->settings);
	const char *key_file = running->config.url_signing_key_file;
	char error[CONFIG_ERROR_MAX];
	if (key_file == NULL) {
		log_warn("SIGHUP: musicd was started without a config file (--config off, or none "
			 "installed), so there is no config file to re-read; settings unchanged");
		return;
	}
	struct settings *next = settings_new(&running->config, running, error, sizeof(error));
	if (next == NULL) {
		log_error("SIGHUP: %s; settings unchanged", error);
		return;
	}
	/* Said before apply, which gives running (and key_file with it) back. */
	log_info("SIGHUP: no config file to re-read (started without one); signed URLs: %zu "
		 "key%s from %s",
		 next->url_keys.count, next->url_keys.count == 1 ? "" : "s", key_file);
	apply(resources, next);
}

void reload_run(struct reload *reload, const struct resources *resources)
{
	const char *path = reload->given.config_file;
	char error[CONFIG_ERROR_MAX];
	char names[RELOAD_NAMES_MAX];
	struct config loaded;
	enum config_action action;

	if (path == NULL) {
		reload_keys_only(resources);
		return;
	}
	/*
	 * The file read at start: --config's, or the installed one, which config_load would
	 * pass over if it were gone (and the settings would fall back to the flags alone).
	 */
	if (access(path, F_OK) < 0 && errno == ENOENT) {
		log_error("SIGHUP: config file %s: %s; settings unchanged", path, strerror(ENOENT));
		return;
	}
	config_init(&loaded);
	if (config_load(&loaded, reload->argc, reload->argv, getenv("MONGODB_URI"), path, &action,
			error, sizeof(error)) < 0) {
		log_error("SIGHUP: %s; settings unchanged", error);
		goto out;
	}
	struct reload_plan plan;
	reload_plan_make(&reload->given, &loaded, &plan);
	const struct settings *running = settings_board_current(resources->settings);
	struct settings *next = next_snapshot(running, &loaded, error, sizeof(error));
	if (next == NULL) {
		log_error("SIGHUP: %s; settings unchanged", error);
		goto out;
	}
	uint64_t generation = next->generation;
	size_t next_keys = next->url_keys.count;
	apply(resources, next);
	if (config_copy_live(&reload->given, &loaded) < 0)
		log_error("SIGHUP: out of memory; the next reload may name settings as changed that "
			  "are not");

	if (plan.kept_count > 0) {
		reload_plan_names(plan.kept, plan.kept_count, names, sizeof(names));
		log_warn("SIGHUP: %s changed in %s but need%s a restart; kept as %s", names, path,
			 plan.kept_count == 1 ? "s" : "", plan.kept_count == 1 ? "it is" : "they are");
	}
	if (next_keys > 0)
		/* The key file is read again on every reload, changed or not: say what it gave. */
		log_info("SIGHUP: signed URLs: %zu key%s from %s", next_keys, next_keys == 1 ? "" : "s",
			 loaded.url_signing_key_file);
	reload_plan_names(plan.changed, plan.changed_count, names, sizeof(names));
	log_info("SIGHUP: settings reloaded from %s (generation %llu): %s%s", path,
		 (unsigned long long)generation, plan.changed_count > 0 ? "changed " : "",
		 plan.changed_count > 0 ? names : "no live setting changed");
out:
	config_free(&loaded);
}
