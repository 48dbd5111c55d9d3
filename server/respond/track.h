/*
 * track: answers GET/HEAD /musicdb/:mid/:param. Looks the id up (off the
 * worker's loop), opens the file inside the media roots, and responds.
 */
#ifndef MUSICD_TRACK_H
#define MUSICD_TRACK_H

#include "wire/exchange.h"
#include "respond/service.h"

/* Starts answering the track request for mid (a valid, lower-case ObjectId). */
void track_handle(struct exchange *exchange, const char *mid, const struct service *service);

#endif
