/*
 * serve: answers a GET or HEAD for an open file the way nginx's static,
 * not-modified and range modules do together: preconditions first (304 or
 * 412), then Range and If-Range (206, multipart 206, 416 or the whole file).
 */
#ifndef MUSICD_SERVE_H
#define MUSICD_SERVE_H

#include "exchange.h"
#include "response.h"

/* Responds to the exchange's request with the file (or a 304/412/416 about it). */
void serve_file(struct exchange *exchange, const struct response_file *file);

#endif
