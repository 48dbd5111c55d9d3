/*
 * log_files: the error log and the access log as the files an operator
 * rotates: checked without being made (-t), reopened together on SIGUSR1,
 * and, after a drop to --user, checked to be reopenable by that user.
 */
#ifndef MUSICD_LOG_FILES_H
#define MUSICD_LOG_FILES_H

#include <stddef.h>

#include "base/access_log.h"
#include "config/config.h"

/*
 * Each log that is a file can be opened for appending, checked without
 * creating it: the file writable, or its directory if it does not exist yet.
 * 0, or -1 with "<access|error> log <path>: <reason>".
 */
int log_files_check(const struct config *config, char *error, size_t error_size);
/*
 * Warns once for each log file whose directory the current (real) user cannot
 * create files in: after a rotation renamed it, SIGUSR1 could not make it again.
 */
void log_files_warn_unreopenable(const struct config *config, const char *user);
/*
 * SIGUSR1: opens the error log and access_log (may be NULL) again under their
 * names; one info line when both were, an error line for each that was not
 * (it keeps its old file: nothing is lost).
 */
void log_files_reopen(struct access_log *access_log);

#endif
