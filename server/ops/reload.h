/*
 * reload: what SIGHUP does, on the main thread. The config file is read again
 * with the same command line (its flags still override the file), validated,
 * and, when it is good, its live settings (config.c's option table marks
 * them) become a new settings snapshot that every worker's next request
 * takes; requests in flight finish with the one they started with. The log
 * level and the caches' TTLs are set from it too, and a new access log
 * target is opened here. Restart-only settings that differ are named in one
 * warning and left as they run. A file that fails changes nothing and is
 * reported.
 */
#ifndef MUSICD_RELOAD_H
#define MUSICD_RELOAD_H

#include "config/config.h"
#include "respond/resources.h"

struct reload {
	int argc;
	char *const *argv; /* main's: the same flags at every reload */
	/*
	 * The settings as given (before main settled the worker count and the
	 * connection cap), with each reload's live values: what a file is compared with.
	 */
	struct config given;
};

/* Keeps argv and a copy of the settings as given, before main settles any; -1 if out of memory. */
int reload_init(struct reload *reload, int argc, char *const *argv, const struct config *given);

/* Re-reads the config file and applies it to resources (see above); logs what it did. */
void reload_run(struct reload *reload, const struct resources *resources);

void reload_free(struct reload *reload);

#endif
