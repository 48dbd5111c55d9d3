/*
 * answer: the way out of every answer musicd composes, and the short ones.
 *
 * answer_send (and answer_stream_start, for a body that arrives later) is
 * the one exit: it adds the CORS fields where they apply and the reason
 * phrase, and hands head and body to the exchange. Errors are one line of
 * text/plain with the error Cache-Control; 405 carries Allow, 503
 * Retry-After. What a database job that found nothing usable means to a
 * client (404, 500 or 503) is decided here once, for tracks, GridFS reads
 * and probes alike, with its log line. Answers about a track's bytes are
 * file_answer.h's. Each function answers request only while the exchange
 * can still respond, and does nothing otherwise (then it reads nothing of
 * request either: its texts may be gone with the client).
 */
#ifndef MUSICD_ANSWER_H
#define MUSICD_ANSWER_H

#include <stdint.h>

#include "db/lookup_status.h"
#include "http/response_head.h"
#include "respond/request.h"
#include "wire/exchange.h"

/* The seconds a 503 asks clients to wait before retrying. */
#define ANSWER_RETRY_AFTER_SECONDS "5"
/* The seconds a 429 (--max-streams-per-client) asks: one of the client's streams may have ended. */
#define ANSWER_STREAMS_RETRY_AFTER_SECONDS "1"

/*
 * Sends head (status and fields set) with body_length bytes from fill: the
 * exit of every answer. Nothing is sent once the client cannot be answered
 * (exchange_can_respond), so no answer below needs to ask first.
 */
void answer_send(struct exchange *exchange, const struct request *request,
		 struct response_head *head, uint64_t body_length, exchange_fill_cb fill,
		 const void *context);

/* The same for a body streamed as it arrives: exchange_stream_start's 0, 1 or -1. */
int answer_stream_start(struct exchange *exchange, const struct request *request,
			struct response_head *head, uint64_t body_length);

/*
 * status with a one-line text/plain body ("404 Not Found"); 503 and 429 with
 * Retry-After; 405 with Allow (OPTIONS too where the request's answers carry
 * CORS fields: every answer then carries them, errors included).
 */
void answer_error(struct exchange *exchange, const struct request *request, int status);

/* The same with one more field (416's Content-Range). */
void answer_error_with(struct exchange *exchange, const struct request *request, int status,
		       const char *name, const char *value);

/*
 * 400 saying why in its one line ("400 Bad Request: " why): a fixed text,
 * never the client's bytes.
 */
void answer_bad_request(struct exchange *exchange, const struct request *request,
			const char *why);

/*
 * 403 for a request its signed-URL token does not admit, always with
 * Cache-Control: no-store (--error-cache-control notwithstanding).
 */
void answer_forbidden(struct exchange *exchange, const struct request *request);

/* A short text/plain answer with body. */
void answer_text(struct exchange *exchange, const struct request *request, int status,
		 const char *body);

/* status with length bytes of body (copied) as content_type: a body formatted here (a scrape). */
void answer_body(struct exchange *exchange, const struct request *request, int status,
		 const char *content_type, const char *body, size_t length);

/*
 * 204 to an OPTIONS on the track route with CORS on: Allow, and the preflight's
 * Access-Control-Allow-* fields for a preflight (request_is_preflight), else
 * an actual answer's.
 */
void answer_options(struct exchange *exchange, const struct request *request);

/*
 * The HTTP status for what a database job found, when that is not a result
 * to serve: 404 (no such document, a document without a usable file), 500
 * (GridFS data that contradicts itself, another database error) or 503 (the
 * database could not be reached in time).
 */
int answer_status_of_lookup(enum lookup_status status);

/*
 * Answers that status and logs it once, at the level it deserves: what is
 * "mid=<mid>" or a probe's name, detail the job's reason.
 */
void answer_lookup_failure(struct exchange *exchange, const struct request *request,
			   const char *what, enum lookup_status status, const char *detail);

/* The lookup deadline passed first: 503, logged. */
void answer_lookup_timeout(struct exchange *exchange, const struct request *request,
			   const char *what);

#endif
