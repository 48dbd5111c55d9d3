/*
 * body_file: the body source of a file segment, a file on disk (the
 * open-file cache's) or the GridFS spool's copy: the decided parts, and
 * between them the multipart texts, are queued as parts of one segment, so
 * every byte of the file goes out by sendfile.
 */
#ifndef MUSICD_BODY_FILE_H
#define MUSICD_BODY_FILE_H

#include "respond/file_plan.h"
#include "wire/exchange.h"

/* Sends plan's head and bytes from body->segment, answering request. */
void body_file_send(struct exchange *exchange, const struct request *request,
		    const struct representation *representation, const struct file_body *body,
		    const struct file_plan *plan);

#endif
