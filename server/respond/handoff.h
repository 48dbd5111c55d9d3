/*
 * handoff: how a file on disk reaches the client; one strategy per
 * deployment, chosen once at start-up (lwan's table-of-functions style):
 *
 *   sendfile          musicd sends the bytes itself (file_answer: ranges, 304 ...)
 *   x-accel-redirect  nginx sends them from an internal location
 *   x-sendfile        Apache (mod_xsendfile) or lighttpd sends them
 */
#ifndef MUSICD_HANDOFF_H
#define MUSICD_HANDOFF_H

#include "media/file_cache.h"
#include "media/media.h"
#include "respond/request.h"
#include "wire/exchange.h"

struct handoff {
	const char *name;
	/* Answers request (a GET or HEAD) with file (found in one of roots). */
	void (*answer)(struct exchange *exchange, const struct request *request,
		       const struct cached_file *file, const struct media_roots *roots,
		       struct disk_io *io);
};

/* The strategy the configuration asks for. */
const struct handoff *handoff_for(const struct config *config);

#endif
