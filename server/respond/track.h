/*
 * track: answers GET/HEAD /musicdb/:mid/:param. Looks the id up (off the
 * worker's loop), opens the file inside the media roots, and answers.
 */
#ifndef MUSICD_TRACK_H
#define MUSICD_TRACK_H

#include "respond/resources.h"
#include "wire/exchange.h"

/* Starts answering the track request for mid (a valid, lower-case ObjectId). */
void track_handle(struct exchange *exchange, const char *mid, const struct resources *resources);

#endif
