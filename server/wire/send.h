/*
 * send: what a fill writes a response body with (exchange_send,
 * exchange_stream_start): text and file segments, onto the connection's
 * output or into the record of a fed body. Part of the exchange's face
 * (exchange.h includes it).
 */
#ifndef MUSICD_SEND_H
#define MUSICD_SEND_H

#include <event2/buffer.h>
#include <stddef.h>
#include <stdint.h>

/* Where a fill puts the body: the connection's output, or the record a paced body is fed from. */
struct exchange_body;

/* Adds length bytes (copied); 0, or -1 if out of memory. */
int exchange_body_add(struct exchange_body *body, const void *data, size_t length);

/*
 * Adds length bytes of segment (whose descriptor is fd) from offset, sent by
 * sendfile; 0, or -1 (out of memory, or a range past its end), which drops
 * the caller's reference to segment as evbuffer_add_file_segment does.
 */
int exchange_body_add_segment(struct exchange_body *body, struct evbuffer_file_segment *segment,
			      int fd, uint64_t offset, uint64_t length);

#endif
