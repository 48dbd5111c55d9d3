/*
 * url_redact: a request target (or a Referer) as the logs may show it, with
 * every signed-URL token taken out, so a log reader cannot replay one. Pure.
 *
 * Redacted: the value of each query parameter named name (--url-signing-parameter),
 * and of any other parameter whose value holds "hmac=" (a token sent under a
 * name musicd does not read is a token still). The value is replaced by
 * URL_REDACTED; its bytes are never copied, whatever the room in out.
 */
#ifndef MUSICD_URL_REDACT_H
#define MUSICD_URL_REDACT_H

#include <stddef.h>

#define URL_REDACTED "REDACTED"

/*
 * Copies text into out (size > 0 bytes, NUL-terminated) with the tokens'
 * values replaced; what does not fit is left off. Returns the length written.
 */
size_t url_redact(const char *text, const char *name, char *out, size_t size);

#endif
