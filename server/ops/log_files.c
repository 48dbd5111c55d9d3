/*
 * log_files: what start-up, -t, --user and SIGUSR1 need to know about the two
 * log files together. The swap itself lives with each log (log.c, access_log.c).
 * access(2) answers for the real user, which after a drop is --user's.
 */
#include "ops/log_files.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/log_file.h"

/* The logs as they are named: NULL for stdout, stderr or off (nothing to open or reopen). */
static const char *access_log_file(const struct config *config)
{
	return config->access_log == NULL || strcmp(config->access_log, "-") == 0
		       ? NULL
		       : config->access_log;
}

static const char *error_log_file(const struct config *config)
{
	return config->error_log == NULL || strcmp(config->error_log, LOG_TARGET_STDERR) == 0
		       ? NULL
		       : config->error_log;
}

/* True when the real user may create files in the directory path names a file in. */
static bool may_create_beside(const char *path)
{
	char directory[PATH_MAX];
	snprintf(directory, sizeof(directory), "%s", path);
	char *slash = strrchr(directory, '/');
	const char *parent = slash == NULL ? "." : slash == directory ? "/" : directory;
	if (slash != NULL && slash != directory)
		*slash = '\0';
	return access(parent, W_OK | X_OK) == 0;
}

static int check_file(const char *what, const char *target, char *error, size_t error_size)
{
	char reason[CONFIG_ERROR_MAX];
	if (log_file_check(target, reason, sizeof(reason)) == 0)
		return 0;
	snprintf(error, error_size, "%s %s", what, reason);
	return -1;
}

int log_files_check(const struct config *config, char *error, size_t error_size)
{
	const char *access_file = access_log_file(config), *error_file = error_log_file(config);
	if (access_file != NULL && check_file("access log", access_file, error, error_size) < 0)
		return -1;
	if (error_file != NULL && check_file("error log", error_file, error, error_size) < 0)
		return -1;
	return 0;
}

void log_files_warn_unreopenable(const struct config *config, const char *user)
{
	const char *names[] = {"access log", "error log"};
	const char *files[] = {access_log_file(config), error_log_file(config)};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (files[i] != NULL && !may_create_beside(files[i]))
			log_warn("%s %s: its directory is not writable by user %s, so SIGUSR1 cannot "
				 "open it again after a rotation renamed it (give the directory to %s)",
				 names[i], files[i], user, user);
	}
}

void log_files_reopen(struct access_log *access_log)
{
	char error[CONFIG_ERROR_MAX];
	bool failed = false;
	if (log_reopen(error, sizeof(error)) < 0) {
		log_error("SIGUSR1: %s; still writing to the file it had", error);
		failed = true;
	}
	if (access_log_reopen(access_log, error, sizeof(error)) < 0) {
		log_error("SIGUSR1: %s; still writing to the file it had", error);
		failed = true;
	}
	if (!failed)
		log_info("SIGUSR1: logs reopened");
}
