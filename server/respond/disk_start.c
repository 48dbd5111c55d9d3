/*
 * disk_start: the one 503 of a start that no disk thread took in time. The
 * queue is the pool's (disk_io.h); the work is taken back only while it
 * still waits there, so a start is either answered here or delivered, never
 * both.
 */
#include "respond/disk_start.h"

#include "base/log.h"
#include "respond/answer.h"
#include "wire/wait.h"

bool disk_start_refused(struct exchange *exchange, const struct request *request,
			struct disk_io *io, struct disk_work *work, const char *what,
			const char *for_what)
{
	if (!disk_io_cancel(io, work))
		return false;
	exchange_wait_cancel(exchange);
	disk_io_count_refused(io);
	log_warn("%s: no disk thread%s%s within %u ms: 503", what, for_what != NULL ? " for " : "",
		 for_what != NULL ? for_what : "", request->config->disk_queue_timeout_ms);
	answer_error(exchange, request, 503);
	return true;
}
