/*
 * config: one setting's value read into its field as the option table says
 * (config_set), and the struct's life around it: defaults, copies, the
 * comparisons a reload makes, and --help. Where values come from is
 * config_sources.c; what a whole configuration must satisfy, config_check.c.
 */
#include "config/config.h"

#include "base/nearest_name.h"
#include "config/option_table.h"
#include "http/route.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void set_error(char *error, size_t error_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(char *error, size_t error_size, const char *fmt, ...)
{
	va_list args;
	va_start(args, fmt);
	vsnprintf(error, error_size, fmt, args);
	va_end(args);
}

static int replace_string(char **field, const char *value)
{
	char *copy = strdup(value);
	if (copy == NULL)
		return -1;
	free(*field);
	*field = copy;
	return 0;
}

/*
 * A default the table gives but config_set refuses is a mistake in the table
 * (test_config applies every one), and a failed strdup of a short default
 * leaves nothing to start with: either way there is no configuration to run.
 */
void config_init(struct config *config)
{
	memset(config, 0, sizeof(*config));
	for (size_t i = 0; i < option_table_count(); i++) {
		if ((*option_table_at(i)).default_value == NULL)
			continue;
		char error[CONFIG_ERROR_MAX];
		if (config_set(config, (*option_table_at(i)).name, (*option_table_at(i)).default_value, error,
			       sizeof(error)) < 0) {
			fprintf(stderr, "musicd: built-in default of %s: %s\n", (*option_table_at(i)).name,
				error);
			abort();
		}
	}
}

void config_clear_list(struct config *config, const struct option_spec *option)
{
	char **items = (char **)((char *)config + option->offset);
	size_t *count = (size_t *)((char *)config + option->count_offset);
	for (size_t i = 0; i < *count; i++)
		free(items[i]);
	*count = 0;
}

/* The one string a setting owns in config (its text, or its listener's host); NULL: none. */
static char **owned_text(const struct option_spec *option, struct config *config)
{
	switch (option->kind) {
	case OPTION_STRING:
	case OPTION_STRING_OR_OFF:
	case OPTION_FILE_ONLY_ON_COMMAND_LINE:
		return (char **)((char *)config + option->offset);
	case OPTION_LISTEN:
		return &config->listen_host;
	case OPTION_METRICS_LISTEN:
		return &config->metrics_host;
	case OPTION_UNSIGNED:
	case OPTION_BYTES:
	case OPTION_LIST:
	case OPTION_SWITCH:
	case OPTION_LOG_LEVEL:
		break;
	}
	return NULL;
}

void config_free(struct config *config)
{
	for (size_t i = 0; i < option_table_count(); i++) {
		const struct option_spec *option = option_table_at(i);
		char **text = owned_text(option, config);
		if (text != NULL)
			free(*text);
		else if (option->kind == OPTION_LIST)
			config_clear_list(config, option);
	}
	memset(config, 0, sizeof(*config));
}

static int parse_unsigned(const char *text, unsigned minimum, unsigned maximum, unsigned *out)
{
	if (text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	char *end;
	unsigned long value = strtoul(text, &end, 10);
	if (errno != 0 || *end != '\0' || value < minimum || value > maximum)
		return -1;
	*out = (unsigned)value;
	return 0;
}

/*
 * Digits, then nothing or one of K, M, G, T, P (each 1024 times the one
 * before, as sizes of memory and disks are counted); at most maximum.
 */
static int parse_bytes(const char *text, uint64_t minimum, uint64_t maximum, uint64_t *out)
{
	static const char suffixes[] = "KMGTP";
	if (text[0] < '0' || text[0] > '9')
		return -1;
	errno = 0;
	char *end;
	unsigned long long value = strtoull(text, &end, 10);
	if (errno != 0)
		return -1;
	uint64_t unit = 1;
	if (*end != '\0') {
		const char *suffix = strchr(suffixes, *end);
		if (suffix == NULL || end[1] != '\0')
			return -1;
		unit = (uint64_t)1 << (10 * (suffix - suffixes + 1));
	}
	if (value > maximum / unit || (uint64_t)value * unit < minimum)
		return -1;
	*out = (uint64_t)value * unit;
	return 0;
}

int config_parse_listen(const char *text, char *host, size_t host_size, uint16_t *port)
{
	const char *colon;
	const char *host_start = text;
	size_t host_length;

	if (text[0] == '[') {
		const char *close = strchr(text, ']');
		if (close == NULL || close[1] != ':')
			return -1;
		host_start = text + 1;
		host_length = (size_t)(close - host_start);
		colon = close + 1;
		if (host_length == 0)
			return -1;
	} else {
		colon = strrchr(text, ':');
		if (colon == NULL || memchr(text, ':', (size_t)(colon - text)) != NULL)
			return -1; /* a bare IPv6 address needs brackets */
		host_length = (size_t)(colon - text);
	}
	unsigned value;
	if (parse_unsigned(colon + 1, 1, 65535, &value) < 0)
		return -1;
	if (host_length == 0) {
		/* ":PORT": every address of both families (listener.c: "::" without IPV6_V6ONLY). */
		host_start = "::";
		host_length = strlen(host_start);
	}
	if (host_length >= host_size)
		return -1;
	memcpy(host, host_start, host_length);
	host[host_length] = '\0';
	*port = (uint16_t)value;
	return 0;
}

int config_set(struct config *config, const char *name, const char *value, char *error,
	       size_t error_size)
{
	const struct option_spec *option = option_table_find(name);
	if (option == NULL) {
		const char *near = nearest_name(name, strlen(name), option_table_name_at);
		if (near != NULL)
			set_error(error, error_size, "unknown setting '%s' (did you mean '%s'?)", name,
				  near);
		else
			set_error(error, error_size, "unknown setting '%s'", name);
		return -1;
	}
	if (value[0] == '\0') {
		set_error(error, error_size, "%s: empty value", name);
		return -1;
	}
	char *base = (char *)config;

	switch (option->kind) {
	case OPTION_STRING:
	case OPTION_FILE_ONLY_ON_COMMAND_LINE:
		if (replace_string((char **)(base + option->offset), value) < 0)
			goto out_of_memory;
		return 0;
	case OPTION_UNSIGNED:
		if (parse_unsigned(value, option->minimum, option->maximum,
				   (unsigned *)(base + option->offset)) < 0) {
			set_error(error, error_size, "%s: '%s' is not a number from %u to %u", name,
				  value, option->minimum, option->maximum);
			return -1;
		}
		return 0;
	case OPTION_BYTES:
		if (parse_bytes(value, option->byte_minimum, option->byte_maximum,
				(uint64_t *)(base + option->offset)) < 0) {
			set_error(error, error_size,
				  "%s: '%s' is not a size from %" PRIu64 " to %" PRIu64
				  " bytes (digits, optionally followed by K, M, G, T or P)",
				  name, value, option->byte_minimum, option->byte_maximum);
			return -1;
		}
		return 0;
	case OPTION_LISTEN:
	case OPTION_METRICS_LISTEN: {
		int metrics = option->kind == OPTION_METRICS_LISTEN;
		char host[256];
		uint16_t port;
		if (metrics && strcmp(value, "off") == 0) {
			free(config->metrics_host);
			config->metrics_host = NULL;
			return 0;
		}
		if (config_parse_listen(value, host, sizeof(host), &port) < 0) {
			set_error(error, error_size,
				  "%s: '%s' is not ADDR:PORT (IPv6 as [ADDR]:PORT, port 1-65535)%s",
				  name, value, metrics ? " or off" : "");
			return -1;
		}
		if (replace_string(metrics ? &config->metrics_host : &config->listen_host, host) < 0)
			goto out_of_memory;
		*(metrics ? &config->metrics_port : &config->listen_port) = port;
		return 0;
	}
	case OPTION_LIST: {
		char **items = (char **)(base + option->offset);
		size_t *count = (size_t *)(base + option->count_offset);
		if (*count == option->maximum) {
			set_error(error, error_size, "%s: given more than %u times", name,
				  option->maximum);
			return -1;
		}
		if ((items[*count] = strdup(value)) == NULL)
			goto out_of_memory;
		(*count)++;
		return 0;
	}
	case OPTION_SWITCH: {
		int *field = (int *)(base + option->offset);
		if (strcmp(value, "on") == 0 || strcmp(value, "yes") == 0 || strcmp(value, "true") == 0) {
			*field = 1;
		} else if (strcmp(value, "off") == 0 || strcmp(value, "no") == 0 ||
			   strcmp(value, "false") == 0) {
			*field = 0;
		} else {
			set_error(error, error_size, "%s: '%s' is not on or off", name, value);
			return -1;
		}
		return 0;
	}
	case OPTION_STRING_OR_OFF: {
		char **field = (char **)(base + option->offset);
		if (strcmp(value, "off") == 0) {
			free(*field);
			*field = NULL;
			return 0;
		}
		if (replace_string(field, value) < 0)
			goto out_of_memory;
		return 0;
	}
	case OPTION_LOG_LEVEL:
		if (log_level_parse(value, &config->log_level) < 0) {
			set_error(error, error_size,
				  "%s: '%s' is not one of debug, info, warn, error", name, value);
			return -1;
		}
		return 0;
	}
	set_error(error, error_size, "%s: unhandled setting", name);
	return -1;

out_of_memory:
	set_error(error, error_size, "%s: out of memory", name);
	return -1;
}

void config_print_usage(const char *program, const char *installed_config)
{
	printf("Usage: %s --media-root DIR [options]\n\n"
	       "Serves GET " ROUTE_TRACK_PREFIX ":mid/:param: finds the document with _id ObjectId(:mid) in\n"
	       "MongoDB and streams the file at its path with sendfile(2).\n\nOptions:\n",
	       program);
	for (size_t i = 0; i < option_table_count(); i++) {
		const struct option_spec *option = &(*option_table_at(i));
		char left[80];
		snprintf(left, sizeof(left), "--%s %s", option->name, option->value_name);
		/* "(default X)" is a value as written; "(default: ...)" describes one settled later. */
		if (option->default_note != NULL)
			printf("  %-36s %s (default: %s)\n", left, option->help, option->default_note);
		else if (option->default_value != NULL)
			printf("  %-36s %s (default %s)\n", left, option->help, option->default_value);
		else
			printf("  %-36s %s\n", left, option->help);
	}
	printf("  %-36s %s\n", "--help", "show this help and exit");
	printf("  %-36s %s\n", "--check-config",
	       "check the configuration (options, config file, media roots, database URI, logs, "
	       "--user, the URL-signing key file) without serving or touching the database, and exit "
	       "(also -t)");
	printf("  %-36s %s\n", "--check-database",
	       "check the configuration as -t does, then try to reach the database (one server "
	       "selection within --lookup-timeout), and exit");
	printf("  %-36s %s\n", "--sign-url URL|PATH|ID",
	       "print it with a signed-URL token for its track (the key file's first key) and exit; "
	       "an id alone prints the token");
	printf("  %-36s %s (default %u)\n", "--url-lifetime SECONDS",
	       "how long the URL --sign-url prints stays valid", CONFIG_DEFAULT_URL_LIFETIME);
	printf("  %-36s %s\n", "--version", "print the version and exit");
	if (installed_config != NULL)
		printf("\nWithout --config, musicd reads %s if it exists.\n", installed_config);
}

/* --- The settings one by one: what reload.c compares and carries over --- */

size_t config_option_count(void)
{
	return option_table_count();
}

const char *config_option_name(size_t index)
{
	return (*option_table_at(index)).name;
}

bool config_option_live(size_t index)
{
	return (*option_table_at(index)).live;
}

static bool same_text(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

bool config_option_equal(size_t index, const struct config *a, const struct config *b)
{
	const struct option_spec *option = &(*option_table_at(index));
	const char *base_a = (const char *)a, *base_b = (const char *)b;
	switch (option->kind) {
	case OPTION_STRING:
	case OPTION_STRING_OR_OFF:
	case OPTION_FILE_ONLY_ON_COMMAND_LINE:
		return same_text(*(char *const *)(base_a + option->offset),
				 *(char *const *)(base_b + option->offset));
	case OPTION_UNSIGNED:
		return *(const unsigned *)(base_a + option->offset) ==
		       *(const unsigned *)(base_b + option->offset);
	case OPTION_BYTES:
		return *(const uint64_t *)(base_a + option->offset) ==
		       *(const uint64_t *)(base_b + option->offset);
	case OPTION_SWITCH:
		return *(const int *)(base_a + option->offset) ==
		       *(const int *)(base_b + option->offset);
	case OPTION_LOG_LEVEL:
		return a->log_level == b->log_level;
	case OPTION_LISTEN:
		return a->listen_port == b->listen_port && same_text(a->listen_host, b->listen_host);
	case OPTION_METRICS_LISTEN:
		return a->metrics_port == b->metrics_port && same_text(a->metrics_host, b->metrics_host);
	case OPTION_LIST: {
		size_t count = *(const size_t *)(base_a + option->count_offset);
		if (count != *(const size_t *)(base_b + option->count_offset))
			return false;
		char *const *items_a = (char *const *)(base_a + option->offset);
		char *const *items_b = (char *const *)(base_b + option->offset);
		for (size_t i = 0; i < count; i++) {
			if (!same_text(items_a[i], items_b[i]))
				return false;
		}
		return true;
	}
	}
	return false;
}

/* Replaces *field with a copy of value (NULL stays NULL); -1 if out of memory (field unchanged). */
static int copy_text(char **field, const char *value)
{
	if (value == NULL) {
		free(*field);
		*field = NULL;
		return 0;
	}
	return replace_string(field, value);
}

/* Gives dst src's value of one setting; -1 if out of memory. */
static int copy_option(const struct option_spec *option, struct config *dst,
		       const struct config *src)
{
	char *base_dst = (char *)dst;
	const char *base_src = (const char *)src;
	switch (option->kind) {
	case OPTION_STRING:
	case OPTION_STRING_OR_OFF:
	case OPTION_FILE_ONLY_ON_COMMAND_LINE:
		return copy_text((char **)(base_dst + option->offset),
				 *(char *const *)(base_src + option->offset));
	case OPTION_UNSIGNED:
		*(unsigned *)(base_dst + option->offset) =
			*(const unsigned *)(base_src + option->offset);
		return 0;
	case OPTION_BYTES:
		*(uint64_t *)(base_dst + option->offset) =
			*(const uint64_t *)(base_src + option->offset);
		return 0;
	case OPTION_SWITCH:
		*(int *)(base_dst + option->offset) = *(const int *)(base_src + option->offset);
		return 0;
	case OPTION_LOG_LEVEL:
		dst->log_level = src->log_level;
		return 0;
	case OPTION_LISTEN:
		dst->listen_port = src->listen_port;
		return copy_text(&dst->listen_host, src->listen_host);
	case OPTION_METRICS_LISTEN:
		dst->metrics_port = src->metrics_port;
		return copy_text(&dst->metrics_host, src->metrics_host);
	case OPTION_LIST: {
		config_clear_list(dst, option);
		char **items = (char **)(base_dst + option->offset);
		char *const *given = (char *const *)(base_src + option->offset);
		size_t *count = (size_t *)(base_dst + option->count_offset);
		size_t wanted = *(const size_t *)(base_src + option->count_offset);
		for (; *count < wanted; (*count)++) {
			if ((items[*count] = strdup(given[*count])) == NULL)
				return -1;
		}
		return 0;
	}
	}
	return -1;
}

int config_copy(struct config *dst, const struct config *src)
{
	/* Every value at once, then each owned string replaced by a copy of its own. */
	*dst = *src;
	for (size_t i = 0; i < option_table_count(); i++) {
		const struct option_spec *option = option_table_at(i);
		char **text = owned_text(option, dst);
		if (text != NULL)
			*text = NULL;
		else if (option->kind == OPTION_LIST)
			*(size_t *)((char *)dst + option->count_offset) = 0;
	}
	for (size_t i = 0; i < option_table_count(); i++) {
		if (copy_option(&(*option_table_at(i)), dst, src) < 0) {
			config_free(dst);
			return -1;
		}
	}
	return 0;
}

int config_copy_live(struct config *dst, const struct config *src)
{
	for (size_t i = 0; i < option_table_count(); i++) {
		if ((*option_table_at(i)).live && copy_option(&(*option_table_at(i)), dst, src) < 0)
			return -1;
	}
	return 0;
}
