/*
 * options: musicd-import's command line. The database settings (--config,
 * --mongodb-uri, --database, --collection, --path-field) are musicd's own,
 * applied by server/config/config.c in musicd's order (defaults < $MONGODB_URI <
 * the config file < flags), so both programs read one config file alike;
 * every flag is read by server/base/flags.c, as musicd's are, and the flags that
 * only importing has are applied here.
 */
#ifndef MUSICD_IMPORT_OPTIONS_H
#define MUSICD_IMPORT_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config/config.h"

#define IMPORT_MAX_JOBS 256
#define IMPORT_MAX_DIRS CONFIG_MAX_MEDIA_ROOTS

/* Owned strings are released by import_options_free. */
struct import_options {
	struct config config; /* musicd's settings; only the database ones are used */
	bool hash, prune, dry_run, json;
	unsigned jobs;	      /* 0 = one per CPU, settled by main */
	char *print_urls;     /* base URL without a trailing slash, or NULL */
	unsigned url_lifetime; /* seconds the URLs --print-urls signs stay valid */
	const char *dirs[IMPORT_MAX_DIRS]; /* pointers into argv */
	size_t dir_count;
};

enum import_action { IMPORT_RUN, IMPORT_HELP, IMPORT_VERSION };

void import_options_init(struct import_options *options);
void import_options_free(struct import_options *options);

/*
 * Parses argv (options and DIR arguments in any order, "--" ends options)
 * over env_mongodb_uri (may be NULL) and the config file: --config's, none
 * for --config off, else installed_config (musicd's, read as musicd reads it)
 * when it exists. Returns 0 with *action set, or -1 with a one-line message
 * in error.
 */
int import_options_load(struct import_options *options, int argc, char *const *argv,
			const char *env_mongodb_uri, const char *installed_config,
			enum import_action *action, char *error, size_t error_size);

/* The --help text, defaults taken from a config_init'd struct; installed_config may be NULL. */
void import_options_usage(FILE *out, const char *program, const char *installed_config);

#endif
