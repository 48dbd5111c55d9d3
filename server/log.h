/*
 * log: leveled diagnostics on stderr, one write(2) per line so lines from
 * worker, lookup and libmongoc threads never interleave.
 */
#ifndef MUSICD_LOG_H
#define MUSICD_LOG_H

#include <stdarg.h>

enum log_level { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR };

/* Sets the lowest level that is written; the default is info. */
void log_set_level(enum log_level level);
/* True when a message at this level would be written. */
int log_enabled(enum log_level level);
/* Parses "debug", "info", "warn" or "error" in any case; returns 0, or -1 for anything else. */
int log_level_parse(const char *name, enum log_level *out);
/* Writes "<UTC time> <level>: <message>\n" to stderr when the level is enabled. */
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level level, const char *fmt, va_list args);

#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif
