/*
 * option_table: the one table of musicd's settings (name, kind, field,
 * bounds, default, help, whether a reload changes it live). It drives flag
 * parsing, config-file parsing, --help and reloads alike, so they can never
 * disagree about what a setting is called or accepts.
 */
#ifndef MUSICD_OPTION_TABLE_H
#define MUSICD_OPTION_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/flags.h"
#include "config/config_fields.h"

enum option_kind {
	OPTION_STRING,	   /* char * field, replaced */
	OPTION_UNSIGNED,   /* unsigned field within [minimum, maximum] */
	OPTION_BYTES,	   /* uint64_t field, byte_minimum to byte_maximum, with an optional K/M/G/T/P suffix */
	OPTION_LISTEN,	   /* host + port */
	OPTION_METRICS_LISTEN, /* host + port of the metrics listener, or "off" */
	OPTION_LIST,	   /* repeatable: appended; the command line's replace the file's */
	OPTION_SWITCH,	   /* int field: "on"/"off"; a bare flag on the command line means on */
	OPTION_STRING_OR_OFF, /* char * field, or NULL for "off" */
	OPTION_LOG_LEVEL,
	OPTION_FILE_ONLY_ON_COMMAND_LINE, /* --config: meaningless inside a file */
};

struct option_spec {
	const char *name;
	const char *value_name;
	enum option_kind kind;
	size_t offset;
	unsigned minimum, maximum; /* OPTION_UNSIGNED: the range; OPTION_LIST: maximum = capacity */
	uint64_t byte_minimum, byte_maximum; /* OPTION_BYTES: the smallest and largest size */
	const char *help;
	size_t count_offset;	   /* OPTION_LIST: the size_t holding the item count */
	/*
	 * The default, as the text a user would write, applied by config_init through
	 * config_set (so it is parsed and bounded like any other value); NULL for none.
	 */
	const char *default_value;
	/*
	 * Where the real default is settled later (by main, or from the environment), what
	 * --help and the documentation say instead of default_value; NULL otherwise.
	 */
	const char *default_note;
	/*
	 * On SIGHUP (reload.c), true: a new value applies to requests that start after
	 * the reload; false (what an unmarked option gets, the safe side): the setting is
	 * fixed at start-up and a changed value is named in the reload's warning and left
	 * as it was.
	 */
	bool live;
};

/* The settings, in --help's order. */
size_t option_table_count(void);

/* Setting index (< option_table_count()). */
const struct option_spec *option_table_at(size_t index);

/* Setting index's name, or NULL past the last (a nearest_name_at, nearest_name.h). */
const char *option_table_name_at(size_t index);

/* The setting named name, or NULL. */
const struct option_spec *option_table_find(const char *name);

/* A flags_lookup (flags.h) over the table: a switch's value is optional. */
const void *option_table_flag(const char *name, size_t length, enum flags_value *value);

#endif
