/*
 * flags: reading one command-line flag, the one way musicd (config.c) and
 * musicd-import (import/options.c) both read theirs: "--name=value",
 * "--name value" or a bare "--name", the name looked up in the caller's own
 * option table through a function. What a program's other arguments are
 * ("-h", a directory, "--") is its own to decide before it calls this. Pure:
 * no I/O, no allocation; the value points into argv.
 */
#ifndef MUSICD_FLAGS_H
#define MUSICD_FLAGS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/nearest_name.h"

/* How an option takes its value on the command line. */
enum flags_value {
	FLAGS_VALUE_REQUIRED, /* "--name=value" or "--name value" */
	FLAGS_VALUE_OPTIONAL, /* "--name=value", or a bare "--name" (value NULL) */
	FLAGS_VALUE_NONE,     /* a bare "--name" only; "--name=value" is refused */
};

/*
 * The caller's option called name[0..length) (not NUL-terminated), or NULL
 * when it has none; sets *value to how that option takes its value.
 */
typedef const void *flags_lookup(const char *name, size_t length, enum flags_value *value);

/* One flag as read. */
struct flags_flag {
	const void *option; /* what the lookup returned; never NULL after a 0 from flags_read */
	const char *value;  /* after '=', or the next argument; NULL for a bare flag */
};

/*
 * Reads the flag at argv[*index] (index < argc) and its value, advancing
 * *index past both. Returns 0, or -1 with one message in error:
 * "unknown option 'ARG' (see --help)" for an argument not starting with "--",
 * "unknown option '--NAME' (did you mean '--NEAR'?)" when names (the same
 * options as lookup's; may be NULL) has one near NAME (nearest_name.h), else
 * "unknown option '--NAME' (see --help)", "option '--NAME' needs a value",
 * "option '--NAME' takes no value".
 */
int flags_read(int argc, char *const *argv, int *index, flags_lookup *lookup,
	       nearest_name_at *names, struct flags_flag *flag, char *error, size_t error_size);

/* Whether name[0..length) (not NUL-terminated) is option_name: what a lookup compares. */
bool flags_name_is(const char *name, size_t length, const char *option_name);

#endif
