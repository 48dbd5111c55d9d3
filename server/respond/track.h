/*
 * track: answers GET/HEAD /musicdb/:mid/:param. Looks the id up (off the
 * worker's loop), opens the file inside the media roots, and answers.
 */
#ifndef MUSICD_TRACK_H
#define MUSICD_TRACK_H

#include "respond/request.h"
#include "respond/resources.h"
#include "wire/exchange.h"

/* Starts answering request, for its route's track (a valid, lower-case ObjectId). */
void track_handle(struct exchange *exchange, const struct request *request,
		  const struct resources *resources);

#endif
