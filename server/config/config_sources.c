/*
 * config_sources: a config file read line by line, and the command line read
 * in two passes (the first finds --config and the words outside the table,
 * the second applies the flags over the file).
 */
#include "config/config_sources.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config_check.h"
#include "config/option_table.h"

#define CONFIG_FILE_MAX (1024 * 1024)
#define CONFIG_LINE_MAX 4096

static char *trim(char *text)
{
	while (*text == ' ' || *text == '\t')
		text++;
	char *end = text + strlen(text);
	while (end > text && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	return text;
}

int config_parse_text(struct config *config, const char *text, const char *source, char *error,
		      size_t error_size)
{
	char line[CONFIG_LINE_MAX];
	unsigned line_number = 0;
	const char *cursor = text;

	while (*cursor != '\0') {
		line_number++;
		size_t length = strcspn(cursor, "\n");
		if (length >= sizeof(line)) {
			snprintf(error, error_size, "%s:%u: line too long", source, line_number);
			return -1;
		}
		memcpy(line, cursor, length);
		line[length] = '\0';
		cursor += length + (cursor[length] == '\n');

		char *content = trim(line);
		if (content[0] == '\0' || content[0] == '#')
			continue;
		char *equals = strchr(content, '=');
		if (equals == NULL) {
			snprintf(error, error_size, "%s:%u: expected 'name = value', got '%s'",
				  source, line_number, content);
			return -1;
		}
		*equals = '\0';
		char *name = trim(content);
		char *value = trim(equals + 1);
		const struct option_spec *option = option_table_find(name);
		if (option != NULL && option->kind == OPTION_FILE_ONLY_ON_COMMAND_LINE) {
			snprintf(error, error_size, "%s:%u: '%s' only works on the command line",
				  source, line_number, name);
			return -1;
		}
		char reason[CONFIG_ERROR_MAX];
		if (config_set(config, name, value, reason, sizeof(reason)) < 0) {
			snprintf(error, error_size, "%s:%u: %s", source, line_number, reason);
			return -1;
		}
		if (strcmp(name, "user") == 0)
			snprintf(config->user_origin, sizeof(config->user_origin), "%s:%u", source,
				 line_number);
	}
	return 0;
}

/*
 * Opened without blocking and read only if it is a regular file: a FIFO or a
 * device at the path would otherwise hold the start (or an import) forever.
 */
static int read_file(const char *path, char **out, char *error, size_t error_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(error, error_size, "config file %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(error, error_size, "config file %s: not a regular file", path);
		close(fd);
		return -1;
	}
	FILE *file = fdopen(fd, "r");
	if (file == NULL) {
		snprintf(error, error_size, "config file %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	char *text = malloc(CONFIG_FILE_MAX + 1);
	size_t length = text ? fread(text, 1, CONFIG_FILE_MAX + 1, file) : 0;
	int failed = text == NULL || ferror(file) || length > CONFIG_FILE_MAX;
	fclose(file);
	if (failed) {
		snprintf(error, error_size, "config file %s: unreadable or larger than %d bytes",
			  path, CONFIG_FILE_MAX);
		free(text);
		return -1;
	}
	text[length] = '\0';
	if (strlen(text) != length) {
		snprintf(error, error_size, "config file %s: contains a NUL byte", path);
		free(text);
		return -1;
	}
	*out = text;
	return 0;
}

int config_load_file(struct config *config, const char *path, char *error, size_t error_size)
{
	char *text;
	if (read_file(path, &text, error, error_size) < 0)
		return -1;
	int parsed = config_parse_text(config, text, path, error, error_size);
	free(text);
	return parsed;
}

/* One flag from argv: a setting's (flags.c reads it), or one of the words outside the table. */
struct flag {
	const char *name;		  /* the setting's, or "help", "version", "check-config" ... */
	const char *value;		  /* NULL for the words, but --sign-url's and --url-lifetime's */
	const struct option_spec *option; /* NULL for the words */
};

/* The words outside the table that take a value (an action's arguments, not settings). */
static const char *const valued_words[] = {"sign-url", "url-lifetime"};
#define VALUED_WORD_COUNT (sizeof(valued_words) / sizeof(valued_words[0]))

/* A flags_lookup over the valued words, then the table. */
static const void *lookup_flag(const char *name, size_t length, enum flags_value *value)
{
	for (size_t i = 0; i < VALUED_WORD_COUNT; i++) {
		if (flags_name_is(name, length, valued_words[i])) {
			*value = FLAGS_VALUE_REQUIRED;
			return &valued_words[i];
		}
	}
	return option_table_flag(name, length, value);
}

/* The words outside the table that take no value; next_flag knows them before flags_read. */
static const char *const bare_words[] = {"help", "version", "check-config", "check-database"};
#define BARE_WORD_COUNT (sizeof(bare_words) / sizeof(bare_words[0]))

/* Every flag's name, for the nearest one to a mistyped flag: the words, then the table. */
static const char *flag_name_at(size_t index)
{
	if (index < BARE_WORD_COUNT)
		return bare_words[index];
	index -= BARE_WORD_COUNT;
	if (index < VALUED_WORD_COUNT)
		return valued_words[index];
	return option_table_name_at(index - VALUED_WORD_COUNT);
}

static const char *valued_word(const void *option)
{
	for (size_t i = 0; i < VALUED_WORD_COUNT; i++) {
		if (option == &valued_words[i])
			return valued_words[i];
	}
	return NULL;
}

/*
 * Reads argv[*index] (and its value) into flag, advancing *index. Returns 0,
 * or -1 with a message. Knows --help, -h, --version, --check-config, -t and
 * --check-database, which take no value.
 */
static int next_flag(int argc, char *const *argv, int *index, struct flag *flag, char *error,
		     size_t error_size)
{
	const char *arg = argv[*index];
	const char *word = NULL;
	if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
		word = "help";
	else if (strcmp(arg, "-t") == 0 || strcmp(arg, "--check-config") == 0)
		word = "check-config";
	else if (strcmp(arg, "--version") == 0)
		word = "version";
	else if (strcmp(arg, "--check-database") == 0)
		word = "check-database";
	if (word != NULL) {
		*flag = (struct flag){word, NULL, NULL};
		(*index)++;
		return 0;
	}
	if (strncmp(arg, "--", 2) != 0) {
		snprintf(error, error_size, "unexpected argument '%s' (options start with --)", arg);
		return -1;
	}
	struct flags_flag read;
	if (flags_read(argc, argv, index, lookup_flag, flag_name_at, &read, error, error_size) < 0)
		return -1;
	if ((word = valued_word(read.option)) != NULL) {
		*flag = (struct flag){word, read.value, NULL};
		return 0;
	}
	const struct option_spec *option = read.option;
	*flag = (struct flag){option->name, read.value != NULL ? read.value : "on", option};
	return 0;
}

/* --url-lifetime: 1 to CONFIG_MAX_URL_LIFETIME seconds. */
static int parse_lifetime(const char *text, unsigned *out, char *error, size_t error_size)
{
	char *end = NULL;
	errno = 0;
	unsigned long value = text[0] >= '0' && text[0] <= '9' ? strtoul(text, &end, 10) : 0;
	if (value == 0 || errno != 0 || *end != '\0' || value > CONFIG_MAX_URL_LIFETIME) {
		snprintf(error, error_size, "--url-lifetime: '%s' is not a number from 1 to %u",
			 text, CONFIG_MAX_URL_LIFETIME);
		return -1;
	}
	*out = (unsigned)value;
	return 0;
}

static bool flag_is(const struct flag *flag, const char *name)
{
	return strcmp(flag->name, name) == 0;
}

/* Applies a flag through config_set, whose messages name settings the way flags do. */
static int apply_flag(struct config *config, const struct flag *flag, char *error,
		      size_t error_size)
{
	char reason[CONFIG_ERROR_MAX];
	if (config_set(config, flag->name, flag->value, reason, sizeof(reason)) < 0) {
		snprintf(error, error_size, "--%s", reason);
		return -1;
	}
	return 0;
}

int config_load_under_flags(struct config *config, const char *env_mongodb_uri,
			    const char *config_path, char *error, size_t error_size)
{
	if (env_mongodb_uri != NULL && env_mongodb_uri[0] != '\0' &&
	    config_set(config, "mongodb-uri", env_mongodb_uri, error, error_size) < 0)
		return -1;
	if (config_path != NULL && config_load_file(config, config_path, error, error_size) < 0)
		return -1;
	return 0;
}

/* Without an installed file, musicd runs on its flags alone, as before an install. */
const char *config_file_to_read(const char *given, const char *installed)
{
	if (given != NULL)
		return strcmp(given, CONFIG_FILE_OFF) == 0 ? NULL : given;
	if (installed == NULL || (access(installed, F_OK) < 0 && errno == ENOENT))
		return NULL;
	return installed;
}

int config_load(struct config *config, int argc, char *const *argv, const char *env_mongodb_uri,
		const char *installed_config, enum config_action *action, char *error,
		size_t error_size)
{
	struct flag flag;
	const char *config_path = NULL, *sign_url = NULL;
	unsigned url_lifetime = CONFIG_DEFAULT_URL_LIFETIME;
	bool check_only = false, check_database = false;
	*action = CONFIG_ACTION_RUN;

	/* First pass: check every flag and find --config, --help, --version, --check-config. */
	for (int i = 1; i < argc;) {
		if (next_flag(argc, argv, &i, &flag, error, error_size) < 0)
			return -1;
		if (flag_is(&flag, "help")) {
			*action = CONFIG_ACTION_HELP;
			return 0;
		}
		if (flag_is(&flag, "version"))
			*action = CONFIG_ACTION_VERSION;
		else if (flag_is(&flag, "check-config"))
			check_only = true;
		else if (flag_is(&flag, "check-database"))
			check_only = check_database = true;
		else if (flag_is(&flag, "config"))
			config_path = flag.value;
		else if (flag_is(&flag, "sign-url"))
			sign_url = flag.value;
		else if (flag_is(&flag, "url-lifetime") &&
			 parse_lifetime(flag.value, &url_lifetime, error, error_size) < 0)
			return -1;
	}
	if (*action == CONFIG_ACTION_VERSION)
		return 0;

	config->config_off = config_path != NULL && strcmp(config_path, CONFIG_FILE_OFF) == 0;
	config_path = config_file_to_read(config_path, installed_config);
	if (config_load_under_flags(config, env_mongodb_uri, config_path, error, error_size) < 0)
		return -1;
	free(config->config_file);
	config->config_file = NULL;
	if (config_path != NULL && (config->config_file = strdup(config_path)) == NULL) {
		snprintf(error, error_size, "config file %s: out of memory", config_path);
		return -1;
	}

	/* Second pass: flags override the file; a list on the command line replaces the file's. */
	bool list_from_flags[CONFIG_OPTION_MAX] = {false};
	for (int i = 1; i < argc;) {
		next_flag(argc, argv, &i, &flag, error, error_size);
		if (flag.option == NULL || flag_is(&flag, "config"))
			continue; /* --check-config: no setting; --config: read above */
		size_t index = (size_t)(flag.option - option_table_at(0));
		if (flag.option->kind == OPTION_LIST && !list_from_flags[index]) {
			config_clear_list(config, flag.option);
			list_from_flags[index] = true;
		}
		if (apply_flag(config, &flag, error, error_size) < 0)
			return -1;
		if (flag_is(&flag, "user"))
			config->user_origin[0] = '\0';
	}
	if (sign_url != NULL) {
		/* Signing needs the key and the parameter name, not a server's settings. */
		*action = CONFIG_ACTION_SIGN_URL;
		config->sign_url = sign_url;
		config->url_lifetime = url_lifetime;
		return config_validate_url_signing(config, error, error_size);
	}
	if (check_only)
		*action = CONFIG_ACTION_CHECK;
	config->check_database = check_database;
	return config_validate(config, error, error_size);
}
