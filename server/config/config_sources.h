/*
 * config_sources: where a configuration comes from, in the order each
 * overrides the last: defaults (config_init) < MONGODB_URI < the config file
 * (--config's, or the installed one) < command-line flags. A file holds "name = value" lines, "#"
 * comments and blank lines; a flag is --name value or --name=value.
 */
#ifndef MUSICD_CONFIG_SOURCES_H
#define MUSICD_CONFIG_SOURCES_H

#include "config/config.h"

/* Applies the lines of a config file ("name = value", '#' comments); errors name source:line. */
int config_parse_text(struct config *config, const char *text, const char *source, char *error,
		      size_t error_size);

/* Reads the config file at path (at most 1 MiB, no NUL) and applies it with config_parse_text. */
int config_load_file(struct config *config, const char *path, char *error, size_t error_size);

/*
 * What lies under the flags, in musicd's order: env_mongodb_uri (NULL or
 * empty: none), then the config file at config_path (NULL: none). config_load
 * applies it between its two passes over the flags, musicd-import too.
 */
int config_load_under_flags(struct config *config, const char *env_mongodb_uri,
			    const char *config_path, char *error, size_t error_size);

/* --config's value that reads no config file, not even the installed one. */
#define CONFIG_FILE_OFF "off"

/*
 * The config file to read: given (--config's value; NULL when not given),
 * none for CONFIG_FILE_OFF, else installed if it exists (NULL: none). An
 * installed file that exists but cannot be read is returned all the same, so
 * that its error is reported rather than the file passed over.
 */
const char *config_file_to_read(const char *given, const char *installed);

/*
 * The whole start-up sequence: defaults, env_mongodb_uri (may be NULL), a
 * config file, then the flags. The file is the one --config names; with
 * --config off none; without --config, installed_config (the file an install
 * puts in place; NULL: none) when it exists. config->config_file becomes the
 * path of the file read (NULL: none). Reads the config file; nothing else.
 * Returns 0 with *action set, or -1 with a one-line message in error.
 */
int config_load(struct config *config, int argc, char *const *argv, const char *env_mongodb_uri,
		const char *installed_config, enum config_action *action, char *error,
		size_t error_size);

#endif
