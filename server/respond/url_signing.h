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

#include "wire/exchange.h"

/*
 * True when the request may go on to track mid (signing off, or a valid
 * token); false when it has been answered 403.
 */
int url_signing_admits(struct exchange *exchange, const char *mid);

#endif
