/*
 * url_signing: the gate of the track route when --url-signing-key-file is
 * set: before any lookup, the request's token (http/url_token.h) is checked
 * against the keys of the request's settings snapshot, at the time the
 * request is handled, with --url-signing-leeway. A refusal is 403 with
 * Cache-Control: no-store (answer.c), one error-log line naming the track
 * and the reason class (never the token), and one count by reason
 * (musicd_url_signing_refusals_total).
 */
#ifndef MUSICD_URL_SIGNING_H
#define MUSICD_URL_SIGNING_H

#include "respond/request.h"
#include "wire/exchange.h"

/*
 * True when request may go on to its track (signing off, or a valid token in
 * its route's query); false when it has been answered 403.
 */
int url_signing_admits(struct exchange *exchange, const struct request *request);

#endif
