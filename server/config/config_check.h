/*
 * config_check: what config_validate checks of a whole configuration once
 * every source is applied (one setting's own bounds are config_set's): the
 * settings that must agree with each other, and the values musicd writes into
 * response heads. One message names the setting that fails.
 */
#ifndef MUSICD_CONFIG_CHECK_H
#define MUSICD_CONFIG_CHECK_H

#include <stddef.h>

#include "config/config_fields.h"

/* 0, or -1 with a message naming the setting. */
int config_validate(const struct config *config, char *error, size_t error_size);

/* The part of config_validate signing a URL needs (--sign-url, musicd-import --print-urls). */
int config_validate_url_signing(const struct config *config, char *error, size_t error_size);

#endif
