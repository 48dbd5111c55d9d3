/*
 * options: one table of musicd-import's flags drives parsing and --help. Each
 * flag is read by server/base/flags.c, as musicd's are; a SHARED flag is handed to
 * config_set under its own name, so its checks and messages are musicd's;
 * --config goes through config_load_file.
 */
#include "options.h"

#include "document.h"
#include "base/flags.h"
#include "config/config_check.h"
#include "config/config_sources.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum option_kind {
	OPTION_SHARED,	   /* musicd's setting, through config_set */
	OPTION_CONFIG,	   /* --config FILE */
	OPTION_SWITCH,	   /* bool field; takes no value */
	OPTION_JOBS,	   /* --jobs N */
	OPTION_PRINT_URLS, /* --print-urls BASE */
	OPTION_URL_LIFETIME, /* --url-lifetime SECONDS */
};

struct option_spec {
	const char *name;
	const char *value_name; /* NULL: takes no value */
	enum option_kind kind;
	size_t offset; /* OPTION_SWITCH: the bool; OPTION_SHARED: the config's string, for its default */
	const char *help;
};

#define SHARED(field) .kind = OPTION_SHARED, .offset = offsetof(struct config, field)

#define SWITCH(field) .kind = OPTION_SWITCH, .offset = offsetof(struct import_options, field)

static const struct option_spec options[] = {
	{"config", "FILE|off", OPTION_CONFIG,
	 .help = "musicd's config file (its database settings are used); flags override it; "
		 "without it, the installed file if it exists (below); off: none"},
	{"mongodb-uri", "URI", SHARED(mongodb_uri), .help = "MongoDB connection string, else $MONGODB_URI"},
	{"database", "NAME", SHARED(database), .help = "database holding the tracks"},
	{"collection", "NAME", SHARED(collection), .help = "collection holding the tracks"},
	{"path-field", "NAME", SHARED(path_field),
	 .help = "document field with the file's absolute path, uniquely indexed"},
	{"hash", NULL, SWITCH(hash), .help = "also store each new or changed file's SHA-256 (sha256)"},
	{"prune", NULL, SWITCH(prune),
	 "delete documents whose path is under a DIR and whose file is gone"},
	{"dry-run", NULL, SWITCH(dry_run), .help = "report what would change; write nothing"},
	{"jobs", "N", OPTION_JOBS, .help = "files read in parallel (default: one per CPU)"},
	{"json", NULL, SWITCH(json), .help = "print the summary as one JSON object"},
	{"print-urls", "BASE", OPTION_PRINT_URLS,
	 .help = "print BASE/musicdb/<id>/<name>, artist and title of every track under the DIRs"},
	{"url-signing-key-file", "FILE", SHARED(url_signing_key_file),
	 .help = "sign each URL --print-urls prints with the file's first key (musicd's keys)"},
	{"url-signing-parameter", "NAME", SHARED(url_signing_parameter),
	 .help = "the query parameter of the signed URLs' token"},
	{"url-lifetime", "SECONDS", OPTION_URL_LIFETIME,
	 .help = "how long a signed URL stays valid (default 3600)"},
};

#define OPTION_COUNT (sizeof(options) / sizeof(options[0]))

void import_options_init(struct import_options *options_out)
{
	memset(options_out, 0, sizeof(*options_out));
	config_init(&options_out->config);
	options_out->url_lifetime = CONFIG_DEFAULT_URL_LIFETIME;
}

void import_options_free(struct import_options *options_out)
{
	config_free(&options_out->config);
	free(options_out->print_urls);
	memset(options_out, 0, sizeof(*options_out));
}

/* A flags_lookup over the table: a flag without a value name takes none. */
static const void *find_option(const char *name, size_t length, enum flags_value *value)
{
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		if (flags_name_is(name, length, options[i].name)) {
			*value = options[i].value_name ? FLAGS_VALUE_REQUIRED : FLAGS_VALUE_NONE;
			return &options[i];
		}
	}
	return NULL;
}

/* Every flag's name, for the nearest one to a mistyped flag: the table's, then the two words. */
static const char *option_name_at(size_t index)
{
	static const char *const words[] = {"help", "version"};
	if (index < OPTION_COUNT)
		return options[index].name;
	index -= OPTION_COUNT;
	return index < sizeof(words) / sizeof(words[0]) ? words[index] : NULL;
}

/* One argument: a flag with its value, or a DIR. */
struct argument {
	const struct option_spec *option; /* NULL for a DIR */
	const char *value;		  /* the flag's value, or the DIR */
	bool help, version;
};

/* A flag and its value (flags.c), whose value may not be empty: config_set would refuse it. */
static int next_flag(int argc, char *const *argv, int *index, struct argument *argument,
		     char *error, size_t error_size)
{
	struct flags_flag flag;
	if (flags_read(argc, argv, index, find_option, option_name_at, &flag, error, error_size) < 0)
		return -1;
	argument->option = flag.option;
	argument->value = flag.value;
	if (argument->value != NULL && argument->value[0] == '\0') {
		snprintf(error, error_size, "--%s: empty value", argument->option->name);
		return -1;
	}
	return 0;
}

/* Reads argv[*index] (and its value), advancing *index; "--" makes the rest DIRs. */
static int next_argument(int argc, char *const *argv, int *index, bool *only_dirs,
			 struct argument *argument, char *error, size_t error_size)
{
	const char *arg = argv[*index];
	memset(argument, 0, sizeof(*argument));
	if (*only_dirs || strncmp(arg, "-", 1) != 0 || strcmp(arg, "-") == 0)
		argument->value = arg;
	else if (strcmp(arg, "--") == 0)
		*only_dirs = true;
	else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
		argument->help = true;
	else if (strcmp(arg, "--version") == 0)
		argument->version = true;
	else
		return next_flag(argc, argv, index, argument, error, error_size);
	(*index)++;
	return 0;
}

static int parse_jobs(const char *text, unsigned *jobs)
{
	if (text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	char *end;
	unsigned long value = strtoul(text, &end, 10);
	if (errno != 0 || *end != '\0' || value < 1 || value > IMPORT_MAX_JOBS)
		return -1;
	*jobs = (unsigned)value;
	return 0;
}

/* Applies an import-only flag (the shared ones are applied by apply_shared). */
static int apply_own(struct import_options *out, const struct argument *argument, char *error,
		     size_t error_size)
{
	const struct option_spec *option = argument->option;
	switch (option->kind) {
	case OPTION_SWITCH:
		*(bool *)((char *)out + option->offset) = true;
		return 0;
	case OPTION_JOBS:
		if (parse_jobs(argument->value, &out->jobs) < 0) {
			snprintf(error, error_size, "--jobs: '%s' is not a number from 1 to %d",
				 argument->value, IMPORT_MAX_JOBS);
			return -1;
		}
		return 0;
	case OPTION_PRINT_URLS: {
		size_t length = strlen(argument->value);
		while (length > 1 && argument->value[length - 1] == '/')
			length--;
		free(out->print_urls);
		if ((out->print_urls = strndup(argument->value, length)) == NULL) {
			snprintf(error, error_size, "--print-urls: out of memory");
			return -1;
		}
		return 0;
	}
	case OPTION_URL_LIFETIME: {
		char *end = NULL;
		errno = 0;
		unsigned long seconds = argument->value[0] >= '0' && argument->value[0] <= '9'
						? strtoul(argument->value, &end, 10)
						: 0;
		if (seconds == 0 || errno != 0 || *end != '\0' || seconds > CONFIG_MAX_URL_LIFETIME) {
			snprintf(error, error_size, "--url-lifetime: '%s' is not a number from 1 to %u",
				 argument->value, CONFIG_MAX_URL_LIFETIME);
			return -1;
		}
		out->url_lifetime = (unsigned)seconds;
		return 0;
	}
	case OPTION_SHARED:
	case OPTION_CONFIG:
		return 0;
	}
	return 0;
}

static int apply_shared(struct import_options *out, const struct argument *argument, char *error,
			size_t error_size)
{
	char reason[CONFIG_ERROR_MAX];
	if (config_set(&out->config, argument->option->name, argument->value, reason,
		       sizeof(reason)) < 0) {
		snprintf(error, error_size, "--%s", reason);
		return -1;
	}
	return 0;
}

int import_options_load(struct import_options *out, int argc, char *const *argv,
			const char *env_mongodb_uri, const char *installed_config,
			enum import_action *action, char *error, size_t error_size)
{
	struct argument argument;
	const char *config_path = NULL;
	bool only_dirs = false;
	*action = IMPORT_RUN;

	/* First pass: every argument checked; --help, --version, --config, the DIRs, own flags. */
	for (int i = 1; i < argc;) {
		if (next_argument(argc, argv, &i, &only_dirs, &argument, error, error_size) < 0)
			return -1;
		if (argument.help) {
			*action = IMPORT_HELP;
			return 0;
		}
		if (argument.version) {
			*action = IMPORT_VERSION;
			continue;
		}
		if (argument.option == NULL) {
			if (argument.value == NULL)
				continue; /* "--" */
			if (out->dir_count == IMPORT_MAX_DIRS) {
				snprintf(error, error_size, "more than %d directories given",
					 IMPORT_MAX_DIRS);
				return -1;
			}
			out->dirs[out->dir_count++] = argument.value;
			continue;
		}
		if (argument.option->kind == OPTION_CONFIG)
			config_path = argument.value;
		else if (apply_own(out, &argument, error, error_size) < 0)
			return -1;
	}
	if (*action == IMPORT_VERSION)
		return 0;

	if (config_load_under_flags(&out->config, env_mongodb_uri,
				    config_file_to_read(config_path, installed_config), error,
				    error_size) < 0)
		return -1;

	/* Second pass: the shared flags, over the file. */
	only_dirs = false;
	for (int i = 1; i < argc;) {
		next_argument(argc, argv, &i, &only_dirs, &argument, error, error_size);
		if (argument.option != NULL && argument.option->kind == OPTION_SHARED &&
		    apply_shared(out, &argument, error, error_size) < 0)
			return -1;
	}

	if (out->dir_count == 0) {
		snprintf(error, error_size, "no directory given: musicd-import [options] DIR...");
		return -1;
	}
	if (config_validate_url_signing(&out->config, error, error_size) < 0)
		return -1;
	if (document_field_is_reserved(out->config.path_field)) {
		snprintf(error, error_size,
			 "--path-field: '%s' is a field musicd-import writes itself; choose another",
			 out->config.path_field);
		return -1;
	}
	return 0;
}

void import_options_usage(FILE *out, const char *program, const char *installed_config)
{
	struct config defaults;
	config_init(&defaults);
	fprintf(out,
		"Usage: %s [options] DIR...\n\n"
		"Walks each DIR and stores one document per audio file (tags and audio properties\n"
		"read with TagLib, size, modification time) in the collection musicd serves from,\n"
		"keyed by the file's absolute path. Unchanged files are skipped.\n\nOptions:\n",
		program);
	for (size_t i = 0; i < OPTION_COUNT; i++) {
		char left[80];
		snprintf(left, sizeof(left), "--%s%s%s", options[i].name,
			 options[i].value_name ? " " : "",
			 options[i].value_name ? options[i].value_name : "");
		const char *shared_default =
			options[i].kind == OPTION_SHARED
				? *(char **)((char *)&defaults + options[i].offset)
				: NULL;
		if (options[i].kind == OPTION_SHARED)
			fprintf(out, "  %-28s %s (default %s)\n", left, options[i].help,
				shared_default != NULL ? shared_default : "off");
		else
			fprintf(out, "  %-28s %s\n", left, options[i].help);
	}
	fprintf(out, "  %-28s %s\n", "--help", "show this help and exit");
	fprintf(out, "  %-28s %s\n", "--version", "print the version and exit");
	if (installed_config != NULL)
		fprintf(out, "\nWithout --config, %s reads musicd's %s if it exists.\n", program,
			installed_config);
	fprintf(out, "\nExit status: 0 all imported, 1 some files skipped, 2 usage or database "
		     "error.\n");
	config_free(&defaults);
}
