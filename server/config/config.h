/*
 * config: every setting of musicd in one struct (config_fields.h), built once
 * at start-up from defaults < MONGODB_URI < the --config file < command-line
 * flags (config_sources.h), validated (config_check.h), then read-only. A
 * SIGHUP (reload.c) builds a new one the same way and keeps the running values
 * of the settings the option table (option_table.h) does not mark live.
 */
#ifndef MUSICD_CONFIG_H
#define MUSICD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"
#include "config/config_fields.h"

/*
 * Fills every field with its default from the option table (through config_set);
 * fields whose default main settles later (workers, max-connections) are 0.
 */
void config_init(struct config *config);
/* Releases the strings each setting of the option table owns; the struct may be re-initialised after. */
void config_free(struct config *config);

/*
 * Applies one setting by its long-option name without dashes ("media-root").
 * Returns 0, or -1 with a message naming the setting and the problem in error.
 */
int config_set(struct config *config, const char *name, const char *value, char *error,
	       size_t error_size);



/* Splits "host:port", "[v6]:port" or ":port" (any address); returns 0 or -1. */
int config_parse_listen(const char *text, char *host, size_t host_size, uint16_t *port);




/* The settings of the option table, by index from 0 to config_option_count() - 1. */
size_t config_option_count(void);
/* Its name, as a flag without dashes ("cache-control"). */
const char *config_option_name(size_t index);
/*
 * True when a SIGHUP applies a new value of the setting to the requests that
 * start after it; false when the setting holds until a restart.
 */
bool config_option_live(size_t index);
/* True when the setting has the same value in a and b. */
bool config_option_equal(size_t index, const struct config *a, const struct config *b);

/* dst (not initialised) becomes a copy of src owning its own strings; -1 if out of memory. */
int config_copy(struct config *dst, const struct config *src);
/* Gives dst (initialised) src's value of every live setting; -1 if out of memory. */
int config_copy_live(struct config *dst, const struct config *src);

/*
 * The --help text: every option with its default from the option table, then
 * the file read without --config (installed_config; NULL: none).
 */
void config_print_usage(const char *program, const char *installed_config);

struct option_spec;

/* Empties a list setting (the command line's lists replace the file's). */
void config_clear_list(struct config *config, const struct option_spec *option);

#endif
