/*
 * file_answer: the one answer to a GET or HEAD for a track's bytes, whatever
 * they come from. It decides as nginx's static, not-modified and range
 * modules do together: preconditions first (304 or 412, RFC 9110 section
 * 13.2.2), then Range and If-Range (206, multipart 206, 416, or the whole
 * representation with 200), and builds the head; only the bytes come from a
 * body source:
 *
 *   BODY_FILE     a file segment (a file on disk from the open-file cache, or
 *                 the GridFS spool's copy), sent by sendfile    (body_file.c)
 *   BODY_GRIDFS   GridFS chunks read on the database threads and streamed
 *                 within --gridfs-window                         (body_gridfs.c)
 *
 * Adding a body source is a row in file_answer.c's table and a module.
 */
#ifndef MUSICD_FILE_ANSWER_H
#define MUSICD_FILE_ANSWER_H

#include "http/representation.h"
#include "respond/file_plan.h"
#include "respond/request.h"
#include "wire/exchange.h"

/* Answers request (a GET or HEAD) with representation's bytes from body. */
void file_answer(struct exchange *exchange, const struct request *request,
		 const struct representation *representation, const struct file_body *body);

#endif
