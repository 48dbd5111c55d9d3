/*
 * disk_start: the deadline of a request's first storage work (opening its
 * file, reading its first window, opening a spooled copy), handed to the
 * disk pool as a start and waited for under --disk-queue-timeout: a start
 * that got no disk thread by then is taken back and answered 503.
 */
#ifndef MUSICD_DISK_START_H
#define MUSICD_DISK_START_H

#include <stdbool.h>

#include "media/disk_io.h"
#include "respond/request.h"
#include "wire/exchange.h"

/*
 * At a start's deadline (the wait's on_deadline): work taken back from io,
 * the wait ended, counted, logged as what's (for_what: NULL, or what the
 * start was for) and answered 503; then true, and the caller frees what it
 * kept for the start. False, doing nothing, when the work is queued or under
 * way: its delivery is waited for.
 */
bool disk_start_refused(struct exchange *exchange, const struct request *request,
			struct disk_io *io, struct disk_work *work, const char *what,
			const char *for_what);

#endif
