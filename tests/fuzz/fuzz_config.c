/*
 * Fuzzes config file parsing: any text either applies or fails with a
 * message, and the configuration is always freeable afterwards.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_check.h"
#include "config/config_sources.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = strndup((const char *)data, size);
	struct config config;
	char error[CONFIG_ERROR_MAX];
	config_init(&config);
	error[0] = '\0';
	if (config_parse_text(&config, text, "fuzz", error, sizeof(error)) < 0 && error[0] == '\0')
		abort();
	config_validate(&config, error, sizeof(error));
	config_free(&config);
	free(text);
	return 0;
}
