/*
 * delivery: how a found, checked file reaches the client; one strategy per
 * deployment, chosen once at start-up (lwan's table-of-functions style):
 *
 *   sendfile          musicd sends the bytes itself (serve.c: ranges, 304 ...)
 *   x-accel-redirect  nginx sends them from an internal location
 *   x-sendfile        Apache (mod_xsendfile) or lighttpd sends them
 */
#ifndef MUSICD_DELIVERY_H
#define MUSICD_DELIVERY_H

#include "wire/exchange.h"
#include "media/media.h"
#include "respond/response.h"

struct delivery {
	const char *name;
	/* Answers the exchange's GET or HEAD with the file (found in one of roots). */
	void (*respond)(struct exchange *exchange, const struct response_file *file,
			const struct media_roots *roots);
};

/* The strategy the configuration asks for. */
const struct delivery *delivery_for(const struct config *config);

#endif
