/*
 * flags: "--name=value", "--name value" or "--name", split and checked
 * against the caller's option table. The messages name the flag as the user
 * wrote it, so musicd and musicd-import word the same mistake alike.
 */
#include "base/flags.h"

#include "base/nearest_name.h"

#include <stdio.h>
#include <string.h>

bool flags_name_is(const char *name, size_t length, const char *option_name)
{
	return strlen(option_name) == length && memcmp(option_name, name, length) == 0;
}

int flags_read(int argc, char *const *argv, int *index, flags_lookup *lookup,
	       nearest_name_at *names, struct flags_flag *flag, char *error, size_t error_size)
{
	const char *arg = argv[(*index)++];
	*flag = (struct flags_flag){NULL, NULL};
	if (strncmp(arg, "--", 2) != 0) {
		snprintf(error, error_size, "unknown option '%s' (see --help)", arg);
		return -1;
	}
	const char *name = arg + 2;
	const char *equals = strchr(name, '=');
	size_t length = equals ? (size_t)(equals - name) : strlen(name);
	int shown = (int)length; /* for %.*s: an argument is far shorter than INT_MAX */
	enum flags_value takes = FLAGS_VALUE_REQUIRED;
	flag->option = lookup(name, length, &takes);
	if (flag->option == NULL) {
		const char *near = names != NULL ? nearest_name(name, length, names) : NULL;
		if (near != NULL)
			snprintf(error, error_size, "unknown option '--%.*s' (did you mean '--%s'?)",
				 shown, name, near);
		else
			snprintf(error, error_size, "unknown option '--%.*s' (see --help)", shown,
				 name);
		return -1;
	}
	if (equals != NULL) {
		if (takes == FLAGS_VALUE_NONE) {
			snprintf(error, error_size, "option '--%.*s' takes no value", shown, name);
			return -1;
		}
		flag->value = equals + 1;
	} else if (takes == FLAGS_VALUE_REQUIRED) {
		if (*index >= argc) {
			snprintf(error, error_size, "option '--%.*s' needs a value", shown, name);
			return -1;
		}
		flag->value = argv[(*index)++];
	}
	return 0;
}
