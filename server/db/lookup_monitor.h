/*
 * lookup_monitor: libmongoc's command monitoring (APM) as debug log lines,
 * so `--log-level debug` shows every command the lookup pool sends: when it
 * starts (the command, the _id it looks for, the server, and the read
 * preference the lookup asked for) and when it ends (how long it took, or
 * the error). The read preference is written by musicd because libmongoc
 * does not send one to a standalone server, and APM events do not carry it.
 */
#ifndef MUSICD_LOOKUP_MONITOR_H
#define MUSICD_LOOKUP_MONITOR_H

#include <mongoc/mongoc.h>

/* Sets the callbacks on pool (before any client is popped); 0, or -1 when libmongoc refuses. */
int lookup_monitor_attach(mongoc_client_pool_t *pool);

/* The read preference the calling thread's next commands are sent with (named in their lines). */
void lookup_monitor_reading(const mongoc_read_prefs_t *prefs);

/* "primary", "primaryPreferred", "secondary", "secondaryPreferred" or "nearest": the URI's names. */
const char *lookup_read_mode_name(mongoc_read_mode_t mode);

#endif
